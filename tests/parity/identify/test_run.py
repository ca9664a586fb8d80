"""Parity tests of ``arithmech/identify/run.py``."""
from __future__ import annotations

import pytest


def test_positions_table_end_row_reproduces_the_knockout_curve(embedded_model):
    """Protects the book's END-vs-every-position table: its END row is the knockout curve's own point at
    k = number of key heads (same samples, same random orders); its every-position row is computed on
    the same samples."""
    from arithmech.identify.pipeline import identify
    from arithmech.methods.ablation.tables import knockout_summary, positions_table
    model, tok, _ = embedded_model
    res = identify(model, tok, "addition", n_samples=64, seed=0, knockout_samples=16, n_random=2, transfer=False)
    assert res.key_heads["heads"], "the embedded model has key heads for addition"
    phases = res.memory["peak_rss_by_phase"]                          # the process high-water mark: monotone
    assert list(phases) == ["patching", "knockout"] and list(phases.values()) == sorted(phases.values())
    assert res.memory["peak_rss_bytes"] == phases["knockout"] > 50 << 20 and res.memory["cuda_peak_bytes"] is None
    pt = positions_table(res, model, tok).set_index("positions")
    ks = knockout_summary(res).iloc[0]
    for col in ("key_heads", "accuracy_key_heads_out", "accuracy_random_out_mean", "accuracy_random_out_std", "n"):
        assert pt.loc["end", col] == pytest.approx(ks[col]), col
    assert pt.loc["all", "accuracy_key_heads_out"] < 1 and pt.loc["all", "n"] == ks["n"]


def test_a_task_that_fails_its_control_leaves_the_pooled_rows(embedded_model, monkeypatch):
    """Protects the pooled task "all" under the control: with multiplication failing (task_control's verdict
    forced here), the "all" effects are computed on addition's X_r alone (same n and same effects as
    addition's rows), the knockout's "all" prompts hold no product, and key_heads.json records the control."""
    import pandas as pd

    from arithmech.identify import pipeline as identify_pipeline

    model, tok, _ = embedded_model
    real = identify_pipeline.task_control
    def forced(samples):
        c = real(samples)
        return {**c, "failed": {"multiplication": "forced by the test"}, "pooled": ["addition"]}
    monkeypatch.setattr(identify_pipeline, "task_control", forced)   # where identify() reads it
    res = identify_pipeline.identify(model, tok, ["addition", "multiplication"], n_samples=24, seed=0,
                                     knockout_samples=8, n_random=1, transfer=False, prob=False, n_boot=20, ks=[1])
    e = res.effects.set_index(["task", "layer", "head"]).effect
    assert len(e.loc["all"]) and (e.loc["all"] == e.loc["addition"]).all()
    assert set(res.effects[res.effects.task == "all"].n) == {len(res.tasks["addition"])}
    assert {s.op for s in res.evals["all"]} == {"addition"}
    assert res.key_heads["control"]["failed"] == {"multiplication": "forced by the test"}
    assert set(res.knockout.task) == {"addition", "multiplication", "all"} and isinstance(res.knockout, pd.DataFrame)


def test_knockout_and_transfer_prompts_ask_problems_the_ranking_never_saw(embedded_model):
    """Protects identify's split: with the default held-out split, the prompts that ranked the components and
    the knockout's prompts share no problem cluster (operation, operand pair); every knockout prompt passes the
    X_r rules and the X_c check; the ranking prompts are distinct; knockout.csv and heldout.json say which split
    (the transfer test draws from the evaluation side's clusters: its record says so and counts them)."""
    from arithmech.data import splits
    from arithmech.evals.scoring import check_counterfactuals
    from arithmech.identify.pipeline import identify
    model, tok, _ = embedded_model
    res = identify(model, tok, ["addition", "multiplication"], n_samples=96, seed=0, knockout_samples=24, n_random=2,
                   ks=(1, 2), transfer=True)
    ranked = {splits.cluster(s) for ss in res.tasks.values() for s in ss}
    assert ranked and {splits.side(c) for c in ranked} == {"rank"}
    for t, ss in res.tasks.items():
        assert len({s.clean for s in ss}) == len(ss) == res.info[t]["n_ranking"] <= res.info[t]["n_kept"]
    for task, ev in res.evals.items():
        assert ev and not ranked & {splits.cluster(s) for s in ev}, task
        assert len(check_counterfactuals(model, tok, ev)[0]) == len(ev), task       # X_c moves every answer
    assert set(res.knockout["split"]) == {"held-out"} and res.heldout["split"] == "held-out"
    assert res.heldout["n_clusters"] >= 1 and "evaluation side" in res.heldout["test_prompts"]
    assert (res.knockout["n_clusters"] <= res.knockout["n"]).all()
    assert res.params["knockout_split"] == "held-out" and "problem clusters" in res.params["key_rule"]


def test_in_sample_split_keeps_the_first_behaviour(embedded_model):
    """Protects the shipped runs' reading: knockout_split="in-sample" and bootstrap="prompt" rank on every X_r,
    knock out on them (topped up), and resample prompts — the knockout.csv rows say in-sample."""
    from arithmech.identify.pipeline import identify
    model, tok, _ = embedded_model
    res = identify(model, tok, "addition", n_samples=64, seed=0, knockout_samples=16, n_random=2, ks=(1,),
                   transfer=False, knockout_split="in-sample", bootstrap="prompt")
    assert "n_ranking" not in res.info["addition"] and set(res.knockout["split"]) == {"in-sample"}
    kept = {s.clean for s in res.tasks["addition"]}
    assert kept & {s.clean for s in res.evals["addition"]}
    assert (res.effects["n_clusters"] == res.effects["n"]).all()
