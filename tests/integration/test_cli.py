"""The pipeline's commands end to end on small models: ``python -m arithmech identify`` (embedded model),
``analyze`` and the fine-tune runner (random models saved to folders): the results files, their columns,
the same files again for the same seed, and one-line errors for bad input."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from arithmech.analyze import run as analyze_run
from arithmech.cli import main
from arithmech.core import results
from arithmech.data import pairs
from arithmech.steps.config_training import Finetune
from arithmech.table1 import finetune


def test_cli_writes_results_files(tmp_path, capsys):
    """Protects: `python -m arithmech identify` writes the documented files and columns (effects with their
    bootstrap interval, the share of the counterfactual's effect after them; key heads by the interval rule and,
    beside them, by the share rule), exactly the prompts used, and the same files again for the same seed."""
    args = ["identify", "--model", "embedded", "--task", "addition", "--n-samples", "12", "--seed", "3",
            "--knockout-samples", "6", "--n-random", "1", "--pool-size", "32"]
    main(args + ["--out", str(tmp_path / "a")])
    assert "wrote" in capsys.readouterr().out
    a = tmp_path / "a"
    eff = pd.read_csv(a / "effects.csv", dtype={"head": str})
    assert list(eff.columns[:8]) == ["task", "layer", "head", "effect", "effect_lo", "effect_hi", "logit_diff", "prob"]
    assert (eff.effect_lo <= eff.effect + 1e-9).all() and (eff.effect <= eff.effect_hi + 1e-9).all()
    assert len(eff) == 6 * 9 and (eff["head"] == "mlp").sum() == 6 and set(eff.task) == {"addition"}
    assert list(eff.columns[-5:]) == ["n", "share", "share_lo", "share_hi", "n_clusters"] and eff.share.notna().all()
    assert (eff.share_lo <= eff.share + 1e-9).all() and (eff.share <= eff.share_hi + 1e-9).all()
    ko = pd.read_csv(a / "knockout.csv")
    assert list(ko.columns) == ["task", "positions", "kind", "order", "seed", "k", "accuracy", "correct", "n", "ci_low",
                                "ci_high", "mean_source", "ld", "ld_lo", "ld_hi", "split", "n_clusters"]
    ablated = ko[ko.kind != "sanity"]  # every ablation has its logit difference inside its interval
    assert ablated.ld.notna().all() and ((ablated.ld_lo <= ablated.ld) & (ablated.ld <= ablated.ld_hi)).all()
    assert ko[ko.order.isin(["x_c", "majority-floor", "conditioned-floor"])].ld.isna().all()  # no ablation: none
    intact = ko[((ko.k == 0) & ko.kind.isin(["head", "mlp"])) | (ko.order == "nothing-out")]
    assert len(intact) and intact.accuracy.eq(1.0).all()             # X_r: the model answers all of them
    assert set(ko[ko.kind == "sanity"].order) == {"nothing-out", "all-heads-out", "all-mlps-out", "x_c", "majority-floor",
                                                  "conditioned-floor"}
    kh = json.loads((a / "key_heads.json").read_text())
    assert kh["threshold"] == -0.05 and all(h["effect_hi"] < -0.05 for h in kh["heads"])   # the interval rule
    assert [h["effect"] for h in kh["heads"]] == sorted(h["effect"] for h in kh["heads"])
    by_share = kh["by_share"]                                        # the calibrated rule, stated beside it
    assert by_share["threshold"] == -0.05 and by_share["rule"].startswith("share_hi < share_threshold")
    assert [h["name"] for h in by_share["heads"]] == [f"{r.layer}.{r.head}" for r in eff[
        (eff["head"] != "mlp") & (eff.share_hi < -0.05)].sort_values(["share", "layer", "head"]).itertuples()]
    prompts = pairs.samples(a)
    run = json.loads((a / "run.json").read_text())
    rec = run["steps"]["identify"]
    # the held-out split: the prompts that ranked (prompts.jsonl, effects' n) are the kept X_r of ranking problems
    assert len(prompts) == rec["samples"]["addition"]["n_ranking"] == eff["n"].iloc[0] <= rec["samples"]["addition"]["n_kept"]
    assert rec["parameters"]["share_threshold"] == -0.05
    assert rec["parameters"]["seed"] == 3 and "torch" in rec["versions"] and rec["peak_memory"]["peak_rss_bytes"] > 0
    assert rec["parameters"]["answer_token"] == "last-digit" and all(p.answer_token == "last-digit" for p in prompts)
    tokens = results.read(a, "answer_tokens.csv")
    whole = tokens[(tokens.task == "addition") & (tokens.template == "all")].iloc[0]
    assert whole.n == rec["samples"]["addition"]["n_kept"] and whole.xc_passed == whole.n and whole.n_drawn == 12
    main(args + ["--out", str(tmp_path / "b")])
    for f in ("effects.csv", "key_heads.json", "prompts.jsonl", "knockout.csv", "answer_tokens.csv"):
        assert (a / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_bad_answer_token_is_one_line_before_loading(tmp_path, capsys):
    """Protects the input contract of --answer-token: an unknown variant is one line and exit 2, nothing
    written; identify.run refuses it before any model loads (a model that does not exist is never reached)."""
    from arithmech.identify import run as identify_run
    with pytest.raises(SystemExit) as e:
        main(["identify", "--model", "embedded", "--answer-token", "last", "--out", str(tmp_path / "o")])
    assert e.value.code == 2 and "--answer-token" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--answer-token 'last'"):
        identify_run.run(identify_run.Config(model_name=str(tmp_path / "no-such-model"), results=str(tmp_path / "o"), answer_token="last"))
    assert not (tmp_path / "o").exists()


def test_bad_template_pair_gives_one_clear_error(tmp_path, capsys):
    """Protects: a counterfactual that changes the token length stops the command with one message
    that names the template and says what to change (no traceback)."""
    pair = tmp_path / "pairs.json"
    pair.write_text(json.dumps([{"id": "bad", "clean": "{A} plus {B} equals to", "corrupt": "{A} is nothing {B} equals to"}]))
    with pytest.raises(SystemExit) as e:
        main(["identify", "--model", "embedded", "--task", str(pair), "--n-samples", "4", "--out", str(tmp_path / "o")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.startswith("error")]      # (transformers may print a load bar)
    assert len(lines) == 1 and "'bad'" in lines[0] and "same token length" in lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_run_writes_the_results_files(word_llama_fig8, tmp_path):
    """Protects the results contract: the columns of attention_roles.csv / mlp_projection.csv, the
    key heads' rows of attention_baseline.csv, the
    run.json record (other steps' records kept), and `python -m arithmech analyze` with the same seed
    → the same files."""
    model, tok, samples = word_llama_fig8
    folder_model = tmp_path / "m"
    model.save_pretrained(folder_model)
    tok.save_pretrained(folder_model)
    res = tmp_path / "results"
    (res / "m").mkdir(parents=True)
    (res / "m" / "prompts.jsonl").write_text("".join(json.dumps(s.to_json()) + "\n" for s in samples))
    (res / "m" / "key_heads.json").write_text(json.dumps({"task": "all", "threshold": -0.05,
                                                          "heads": [{"layer": 2, "head": 1}, {"layer": 3, "head": 0}]}))
    (res / "m" / "run.json").write_text(json.dumps({"schema_version": 1, "steps": {"identify": {"seed": 0}}}))
    r = analyze_run.run(analyze_run.Config(model_name=str(folder_model), results=str(res), n_samples=6, seed=1))
    first = {f: (res / "m" / f).read_text() for f in ("attention_roles.csv", "attention_baseline.csv",
                                                     "mlp_projection.csv", "top_numbers.csv")}
    roles, mlp = pd.read_csv(res / "m" / "attention_roles.csv"), pd.read_csv(res / "m" / "mlp_projection.csv")
    assert list(roles.columns[:4]) == ["layer", "head", "role", "mean_score"]
    assert list(mlp.columns[:3]) == ["layer", "quantity", "value"]
    assert isinstance(r, analyze_run.Result) and r.labels.name.tolist() == ["2.1", "3.0"] and r.summary["n_samples"] == 6
    assert set(r.baseline.name) == {"2.1", "3.0"} and set(r.baseline.n_nonkey) == {len(roles[
        (roles.task == "all") & (roles.role == "A")]) - 2}
    run = json.loads((res / "m" / "run.json").read_text())
    assert run["steps"]["identify"] == {"seed": 0} and run["steps"]["analyze"]["parameters"]["n_samples"] == 6
    from arithmech.cli import main
    main(["analyze", "--model", str(folder_model), "--results", str(res), "--n-samples", "6", "--seed", "1", "--overwrite"])
    assert first == {f: (res / "m" / f).read_text() for f in first}                # the command, same seed


def test_runner_writes_results(tmp_path):
    """Protects: the runner writes finetune/<mode>.json with samples/s, tuned parameters, peak memory and
    accuracy before/after (each with n, Wilson interval and the item scores; the change with its paired interval), for precise (top-k from key_heads.json) and full SFT with the same settings; a run given an earlier record as
    ``before=`` reuses its base and pairs its items (with ``threads``, as the MLP appendix runs it)."""
    from factories import save_word_llama

    from arithmech.core.stats import paired_bootstrap, wilson_interval
    from arithmech.data.sentences import GENERIC_FACTS
    save_word_llama(tmp_path / "toy")
    (tmp_path / "res" / "toy").mkdir(parents=True)
    kh = {"task": "all", "threshold": -0.05,
          "heads": [{"layer": 1, "head": 2}, {"layer": 0, "head": 1}, {"layer": 1, "head": 0}]}
    (tmp_path / "res" / "toy" / "key_heads.json").write_text(json.dumps(kh))
    rows = [f"all,{l},{h},{-0.01 * (l * 4 + h)}" for l in range(2) for h in range(4)] + ["all,0,mlp,0.1", "all,1,mlp,0.2"]
    rows = [f"{r},{r.rsplit(',', 1)[1]},{r.rsplit(',', 1)[1]}" for r in rows]
    (tmp_path / "res" / "toy" / "effects.csv").write_text("task,layer,head,effect,effect_lo,effect_hi\n" + "\n".join(rows) + "\n")
    common = dict(model_name=str(tmp_path / "toy"), results=str(tmp_path / "res"), benchmarks=["generic"], max_steps=2,
                  batch_size=4, micro_batch_size=4, lr=1e-3, n_train=16)
    precise = finetune.run(Finetune(mode="precise", heads="top-2", **common))
    full = finetune.run(Finetune(mode="full", **common))
    saved = json.loads((tmp_path / "res" / "toy" / "finetune" / "precise.json").read_text())
    assert saved["heads"] == [[0, 1], [1, 2]] and saved["train"]["steps"] == 2
    assert precise["tuned_parameters"] == 2 * 4 * 32 * 8
    assert full["tuned_parameters"] == full["total_parameters"] > 10 * precise["tuned_parameters"]
    for r in (precise, full):
        assert set(r["base"]) == set(r["results"]) == set(r["delta"]) == {"generic"}
        assert r["delta"]["generic"]["delta"] == pytest.approx(r["results"]["generic"]["value"] - r["base"]["generic"]["value"], abs=1e-4)
        assert r["train"]["samples_per_second"] > 0 and r["train"]["peak_memory"]["peak_bytes"] >= 0
        for m in (r["base"]["generic"], r["results"]["generic"]):  # every accuracy with its n, interval and items
            assert m["n"] == len(m["items"]) == len(GENERIC_FACTS) and m["value"] == round(sum(m["items"]) / m["n"], 4)
            assert m["ci"] == pytest.approx(wilson_interval(sum(m["items"]), m["n"]), abs=1e-4)
        d, lo, hi = paired_bootstrap(r["base"]["generic"]["items"], r["results"]["generic"]["items"])
        assert r["delta"]["generic"]["ci"] == pytest.approx([lo, hi], abs=1e-4)   # paired over the same facts
        assert f"[{lo:+.3f}, {hi:+.3f}], n = {len(GENERIC_FACTS)})" in finetune.summary(r).splitlines()[0]
    assert (tmp_path / "res" / "toy" / "finetune" / "full.json").exists()
    again = finetune.run(Finetune(mode="full", tag="again", threads=1, **common), before=precise)  # the MLP appendix's
    assert again["base"] == precise["base"] and again["delta"]["generic"]["ci"] == pytest.approx(
        list(paired_bootstrap(precise["base"]["generic"]["items"], again["results"]["generic"]["items"])[1:]), abs=1e-4)
    with pytest.raises(ValueError, match="--overwrite"):                    # a finished run is never replaced silently
        finetune.run(Finetune(mode="full", **common))
