"""The Table 1 arms runner (arithmech.table1.run) end to end on the embedded model, at a tiny size:
one training step per run and a few items per measure (a test suite registered for the test). About 20
fine-tune runs (~30 s of CPU): marked ``slow``, so ``make test`` runs it and ``make test-fast`` does not."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

from arithmech.core import results
from arithmech.data import splits
from arithmech.evals import suites
from arithmech.table1 import run, verdicts
from arithmech.table1.plan import ARMS, GRIDS, choose
from arithmech.table1.result import Table1Result


def _tiny_evaluate(model, tok, side, sizes, data_seed=0, data_dir=None):
    from arithmech.evals.measures import completion_nll
    from arithmech.evals.scoring import greedy_exact
    sets = {"negative": splits.negative_items(side)[:12], "two_digit": splits.two_digit_items(side)[:12],
            "single_digit": splits.single_digit_items(side, 1)[:12], "generic": splits.fact_items(side)[:12]}
    out = {k: suites.accuracy_measure([int(x) for x in greedy_exact(model, tok, v)]) for k, v in sets.items()}
    if side == "val":
        out["math_nll"] = completion_nll(model, tok, sets["negative"])
    return out


@pytest.fixture
def tiny_suite(monkeypatch):
    suite = suites.Suite("tiny", suites.toy_train, _tiny_evaluate, math=("negative", "two_digit"),
                    general=("generic", "single_digit"), primary_math="negative", primary_general="generic")
    monkeypatch.setitem(suites.SUITES, "tiny", suite)
    monkeypatch.setitem(GRIDS, "tiny", {a: (1e-3, 3e-3, 1e-2) for a in ARMS})
    return suite


def _volatile_free(rec: dict) -> dict:
    rec = json.loads(json.dumps(rec))
    for k in ("runtime_s", "samples_per_second", "trainer_samples_per_second", "peak_memory"):
        (rec.get("train") or {}).pop(k, None)
    return rec


@pytest.mark.slow
def test_arms_runner_end_to_end(tmp_path, tiny_suite):  # noqa: PLR0915 (one run, checked file by file)
    """Protects: the arms runner writes one record per run — base, then every arm at every rate of its grid
    and every seed (a random arm: every draw, draw d training with seed d mod the seeds) — and
    finetune/table1.json through the results contract; the random arms never tune a key or share head nor any
    key/value group those read (no shared tuned parameter under GQA), the layer-matched one on the key heads'
    layers where free heads allow; the precise arms run matched rates; the single-rate choice shown beside the
    frontier obeys its rule; a re-run with the same arguments trains nothing and leaves every file
    byte-identical, and so does a re-run with the grid-point cut (--no-replicate-ends: runs made before it kept); a fresh folder gives the same records (timings aside); verdicts and the trade-off frame
    are computed from the files alone."""
    torch.set_num_threads(1)
    from arithmech.finetune.heads import model_geometry
    from arithmech.pipeline.ensure import ensure_ranking
    from arithmech.table1.plan import groups
    folder = tmp_path / "embedded"
    ensure_ranking("embedded", folder, n_samples=16)                  # identify's ranking (path patching only)
    config = run.Config(model_name="embedded", results=str(folder), suite="tiny", top_k=8, seeds=(0, 1), draws=2,
                      frontier_seeds=2, steps=1, batch_size=8, max_extend=0)
    plan = run.run(config)
    assert plan == results.read(folder, "finetune/table1.json")
    geo = model_geometry("embedded")
    h = plan["heads"]
    kept = {tuple(x) for x in h["tuned"]} | {tuple(x) for x in h["share"]}
    share = {(x["layer"], x["head"]) for x in results.read(folder, "key_heads.json")["by_share"]["heads"]}
    assert share <= kept or len(share) > 8
    for d in h["random_draws"] + h["random_any_draws"]:
        assert len({tuple(x) for x in d}) == 8 and not groups([tuple(x) for x in d], geo) & groups(sorted(kept), geo)
    assert {tuple(a["grid"]) for n, a in plan["arms"].items() if n != "full"} == {(1e-3, 3e-3, 1e-2)}
    for arm, a in plan["arms"].items():
        reps = {(r["seed"], r["draw"]) for r in a["grid_rows"]}
        want = {(0, 0), (1, 1)} if arm in ("precise-random", "precise-random-any") else {(0, 0), (1, 0)}
        assert reps == want and len(a["grid_rows"]) == 3 * 2, arm
        first = [r for r in a["grid_rows"] if r["seed"] == 0 and r["draw"] == 0]
        assert choose(first) == a["chosen_lr"]
    files = {p.name: p.read_bytes() for p in (folder / "finetune").glob("*.json")}
    assert len(files) == 1 + sum(len(a["grid_rows"]) for a in plan["arms"].values()) + 1     # + table1.json
    run.run(config)                                                                # resume: nothing to do
    assert files == {p.name: p.read_bytes() for p in (folder / "finetune").glob("*.json")}
    cut = run.run(config.replace(replicate_ends=False))             # the cut keeps every run made before it
    assert {n: a["grid_rows"] for n, a in cut["arms"].items()} == {n: a["grid_rows"] for n, a in plan["arms"].items()}
    assert cut["rules"]["cut"].startswith("--no-replicate-ends") and plan["rules"]["cut"].startswith("none")
    assert {p.name: p.read_bytes() for p in (folder / "finetune").glob("*.json") if p.name != "table1.json"} == \
        {n: b for n, b in files.items() if n != "table1.json"}
    other = tmp_path / "again" / "embedded"
    other.mkdir(parents=True)
    for n in ("key_heads.json", "effects.csv", "prompts.jsonl", "run.json"):
        shutil.copy(folder / n, other / n)
    run.run(config.replace(results=str(other)), arms=("precise-random",))
    for name in (p.name for p in (other / "finetune").glob("*.json")):
        if name != "table1.json":
            a, b = (json.loads((f / "finetune" / name).read_text()) for f in (folder, other))
            assert _volatile_free(a)["results"] == _volatile_free(b)["results"], name
    result = Table1Result.load(folder)  # every file of the run, read once
    v = verdicts.verdicts(result)
    assert list(v["claim"]) == [r[0] for r in verdicts.RULES]
    assert set(v["verdict"]) <= {"holds", "does not hold", "inconclusive"}
    t = verdicts.tradeoff_frame(result)
    assert len(t) >= sum(len(a["grid_rows"]) for a in plan["arms"].values())
    # the phrasings table (report.table1): its test column is arm_table's primary math value, computed apart
    from arithmech.table1 import views as T1
    ph, at = T1.phrasings_frame(result), verdicts.arm_table(result)
    m = result.suite.primary_math
    for arm, row in ph.iterrows():
        want = at[(at.arm == arm) & (at.measure == m)].value.iloc[0]
        assert row["test"].startswith(f"{want:.1%}"), (arm, row["test"], want)
        assert row["runs"] == (1 if arm == "base" else 2)
    # the paper's Table 1 beside ours (report.tables): each arm at its chosen rate, named, with its runs and how many
    # collapsed on the general measure (computed apart here from each record by the collapse gate)
    from arithmech.table1.curve_views import table1_side_by_side
    sbs = table1_side_by_side({"embedded": result}).set_index(["model", "arm"]).loc["embedded"]
    runs = verdicts.arm_runs(result)
    g = result.suite.primary_general
    for arm, rs in runs.items():
        if arm == "base":
            continue
        assert sbs.loc[arm, "rate"] == f"{plan['arms'][arm]['chosen_lr']:.0e}" and sbs.loc[arm, "runs"] == len(rs)
        assert sbs.loc[arm, "collapsed runs"] == sum(verdicts.collapsed(r, runs["base"][0], g) for r in rs), arm
        for what in ("math", "general"):  # each mean with its 95 % interval (crossed over runs and items)
            lo, hi = map(float, sbs.loc[arm, f"{what} 95% CI"].strip("[]").split(", "))
            assert lo - 0.05 <= sbs.loc[arm, f"{what} (%)"] <= hi + 0.05, (arm, what)
    # the arms table lists every arm that ran (it once hard-coded four), each interval holding its mean
    frame = T1.arm_frame(result)
    assert list(frame.columns) == ["base", *[a for a in plan["arms"] if a in runs]]
    assert ((at.ci_low.isna()) | ((at.ci_low <= at.value + 1e-12) & (at.value <= at.ci_high + 1e-12))).all()
