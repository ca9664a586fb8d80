"""The planted Table 1's construction check (arithmech/planted/construction.py) and the grid-end line beside its
verdicts (arithmech/table1/views.py ends_line): counts against hand-made records, and the shipped check against the
shipped runs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from arithmech.core.results import ResultsError
from arithmech.planted import construction
from arithmech.table1 import views
from arithmech.table1.result import Table1Result

ROOT = Path(__file__).resolve().parents[3]


def plan_result(arms: dict) -> Table1Result:
    """A Table1Result holding a plan and, as :meth:`Table1Result.load` makes it, one (empty) record per run the plan
    names (the check reads the runs' tags, the grid-end line the plan)."""
    tags = [row["tag"] for a in arms.values() for row in a.get("grid_rows", [])]
    return Table1Result(plan={"arms": arms}, base={}, shots=None, runs=dict.fromkeys(tags, {}), curve=None,
                        folder=Path("."))  # fmt: skip


def run(arm: str, lr: float, holds: bool, attention: float, change: float, reproduced: bool = True) -> dict:
    return {"arm": arm, "lr": lr, "seed": 0, "draw": 0, "reproduced": reproduced, "holds": holds,
            "fixed_entries_max_deviation": 0.0, "forbidden_attention_max": {"blind": attention, "off": 0.0},
            "nonplanted_output_change_max": change}  # fmt: skip


T = plan_result({
    "full": {"grid_rows": [{"tag": "full-s0-lr1e-07"}, {"tag": "full-s1-lr1e-07"}]},
    "precise-key": {"grid_rows": [{"tag": "precise-key-s0-lr3e-03"}]},
})  # fmt: skip
C = construction.Construction(
    bounds={"forbidden_attention": 1e-12, "nonplanted_output_change": 1e-5},
    runs={
        "full-s0-lr1e-07": run("full", 1e-7, True, 0.0, 0.0),
        "full-s1-lr1e-07": run("full", 1e-7, True, 0.0, 2e-6, reproduced=False),
        "precise-key-s0-lr3e-03": run("precise-key", 3e-3, False, 0.5, 0.25),
    },
)


def test_every_run_of_the_plan_or_refused():
    """Protects against a stale check: a run of the plan missing from it refuses, naming it; a record the plan does
    not name is set aside (:func:`construction.unread`), not read."""
    stale = construction.Construction(C.bounds, {k: v for k, v in C.runs.items() if k != "full-s1-lr1e-07"})
    with pytest.raises(ResultsError, match="misses 1 runs of table1.json \\(full-s1-lr1e-07\\)"):
        construction.table(stale, T)
    more = construction.Construction(
        C.bounds, {**C.runs, "precise-key-s3-lr1e-04": run("precise-key", 1e-4, True, 0, 0)}
    )
    assert construction.unread(more, T) == ["precise-key-s3-lr1e-04"] and construction.unread(C, T) == []


def test_ends_line():
    """Protects the grid-end line: only arms whose choice is not interior, with the side, rates and extensions."""
    grid = [1e-3, 3e-3, 1e-2]
    t = plan_result({
        "full": {"grid": grid, "chosen_lr": 3e-3, "interior": True},
        "precise-key": {"grid": grid, "chosen_lr": 1e-2, "interior": False, "extensions": 2},
        "precise-random": {"grid": grid, "chosen_lr": 1e-3, "interior": False},
    })  # fmt: skip
    line = views.ends_line(t)
    assert "precise-key at 1e-02, the highest of its 3 rates (2 extensions)" in line
    assert "precise-random at 1e-03, the lowest of its 3 rates (0 extensions)" in line and "full" not in line
    assert views.ends_line(plan_result({"full": {"grid": grid, "chosen_lr": 3e-3, "interior": True}})) is None


def test_shipped_check_against_the_records():
    """Protects the shipped files' agreement, against the records read directly: the check covers every run the
    planted Table 1's plan names, every one reproduced its test scores, and per arm and rate the table's runs, kept
    constructions and mean new-skill gain equal the counts of construction.json and the mean of the records' own
    paired deltas from base."""
    t = Table1Result.made(ROOT / "results" / "planted")
    c = construction.Construction.made()
    assert t is not None and c is not None
    rows = construction.table(c, t)
    assert int(rows["runs"].sum()) == len(t.runs) == int(rows["reproduced"].sum())
    for r in rows.to_dict("records"):
        tags = [tag for tag in t.runs if t.runs[tag]["parameters"]["arm"] == r["arm"]
                and f"{t.runs[tag]['parameters']['lr']:.0e}" == r["rate"]]  # fmt: skip
        assert r["runs"] == len(tags) and r["construction holds"] == sum(c.runs[tag]["holds"] for tag in tags)
        mean = 100 * sum(t.runs[tag]["delta"]["phrasings"]["delta"] for tag in tags) / len(tags)
        assert r["phrasings gain, points"].startswith(f"{mean:+.1f}")
    kept = sum(c.runs[tag]["holds"] for tag in t.runs)
    assert f"after {kept} of {len(t.runs)} runs" in construction.line(c, t)
    decided = construction.verdicts_line(c, t)
    assert decided is None or "with that point's runs left out the rule reads" in decided


def test_leans_line():
    """Protects the lean of an undecided verdict: the side the estimate favours, with its interval and level; held
    and two-part rows left out."""
    rows = pd.DataFrame([
        {"comparison": "precise-key − precise-random", "measure": "phrasings", "verdict": "inconclusive",
         "estimate": -0.154, "ci_low": -0.424, "ci_high": 0.116, "level": 0.9994},
        {"comparison": "precise-key − base", "measure": "phrasings", "verdict": "holds",
         "estimate": 0.227, "ci_low": 0.018, "ci_high": 0.436, "level": 0.99},
        {"comparison": "full − base (a); full vs precise-key (b)", "measure": "phrasings", "verdict": "inconclusive",
         "estimate": -0.07, "ci_low": -2.8, "ci_high": 2.7, "level": 0.999},
    ])  # fmt: skip
    assert views.leans_line(rows) == (
        "Undecided, and where each single difference's estimate lies: precise-key − precise-random on phrasings "
        "-15.4 points [-42.4, +11.6] at 99.94%: the estimate on precise-random's side (the interval covers 0)."
    )
    tie = rows.iloc[:1].assign(estimate=0.0, ci_low=0.01, ci_high=0.02)
    assert views.leans_line(tie).endswith("+0.0 points [+1.0, +2.0] at 99.94%: the estimate on no side (0).")
    assert views.leans_line(rows.iloc[1:2]) is None


def test_best_kept_against_the_records():
    """Protects the opening line's numbers: per arm, the point best_kept names has every run keeping the construction,
    its mean is the mean of the records' own paired deltas there, and no rate of the arm where every run keeps the
    construction has a larger mean (the maximum, computed from the records directly)."""
    t = Table1Result.made(ROOT / "results" / "planted")
    c = construction.Construction.made()
    assert t is not None and c is not None
    by: dict[tuple[str, float], list[str]] = {}
    for tag, rec in t.runs.items():
        by.setdefault((rec["parameters"]["arm"], rec["parameters"]["lr"]), []).append(tag)
    for arm, (p, mean, _, _) in construction.best_kept(c, t).items():
        kept = {lr: tags for (a, lr), tags in by.items() if a == arm and all(c.runs[x]["holds"] for x in tags)}
        means = {
            lr: sum(t.runs[x]["delta"]["phrasings"]["delta"] for x in tags) / len(tags) for lr, tags in kept.items()
        }
        assert p.lr in kept and mean == pytest.approx(means[p.lr]) and mean == pytest.approx(max(means.values()))
    assert construction.summary(c, t).startswith(f"**Table 1 on this model** (exploration, {len(t.runs)} runs;")
