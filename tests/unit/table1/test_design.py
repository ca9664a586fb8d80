"""What Table 1's design detects and whether its draws lean on shared seeds (``arithmech/table1/design.py``), on
synthetic records."""

from __future__ import annotations

import pytest

from arithmech.table1 import curves, design, frontier
from arithmech.table1.frontier import curves_of
from arithmech.table1.result import Table1Result
from tests.unit.table1.synthetic import jitter, write


def test_the_projected_half_width_is_the_rules_interval_at_three_runs(tmp_path):
    """Protects the projection against the interval the rules read: where the compared points already have 3 runs,
    the half-width projected to 3 runs equals half the width of the crossed interval the rule computes for them at
    its level (precise − full on carry; precise − base), so the table says exactly what a rule could decide."""
    c = curves_of(Table1Result.load(write(tmp_path, {"full": {1e-4: jitter(0.9, 0.85, -0.05)}, "precise-key": {1e-3: jitter(0.7, 0.6, 0.0, sd=0.03)}})))
    key, full = c.points["precise-key"][0], c.points["full"][0]
    row = design.half_width(c, "matches", "full", "math")
    lo, hi = frontier.diff(key, full, "carry", curves.family(c, "matches"))
    assert lo is not None and hi is not None and row["half_width"] == pytest.approx((hi - lo) / 2, rel=1e-9)
    row = design.half_width(c, "learns", None, "math")
    lo, hi = frontier.gain(key, "carry", m=curves.family(c, "learns"))
    assert lo is not None and hi is not None and row["half_width"] == pytest.approx((hi - lo) / 2, rel=1e-9)
    assert row["items"] == 400 and row["why"] == ""


def test_a_point_of_one_run_leaves_the_half_width_unknown(tmp_path):
    """Protects the honesty of the table: with one run at a compared point its training spread is unknown, and the
    row says so instead of reading the item spread alone as the whole error."""
    c = curves_of(Table1Result.load(write(tmp_path, {"precise-key": {1e-3: jitter(0.7, 0.6, 0.0, n=1)}, "precise-random": {1e-3: jitter(0.5, 0.5, 0.0)}})))
    rows = design.table(c).set_index("comparison")
    assert rows.loc["precise-key − precise-random", "half_width"] is None
    assert "one run" in rows.loc["precise-key − precise-random", "why"]
    assert "precise-key − full" not in rows.index          # no full arm in the plan: no row


def test_the_design_projects_each_point_to_its_own_runs(tmp_path):
    """Protects the design's column (it projected a random arm's point, which gets 10 draws, to 3 and 5 runs like a
    seeded point): with ``{arm: runs}`` each compared point is projected to its own runs, and where the points
    already have them (precise-key 3, precise-random 5 draws) it is half the rule's own interval for them."""
    c = curves_of(Table1Result.load(write(tmp_path, {"precise-key": {1e-3: jitter(0.7, 0.6, 0.0, sd=0.03)},
                              "precise-random": {1e-3: jitter(0.5, 0.5, 0.0, n=5, sd=0.05)}})))
    key, rnd = c.points["precise-key"][0], c.points["precise-random"][0]
    row = design.half_width(c, "selection", "precise-random", "math", runs=lambda arm, lr: {"precise-key": 3}.get(arm, 5))
    lo, hi = frontier.diff(key, rnd, "carry", curves.family(c, "selection", "precise-key", "precise-random"))
    assert lo is not None and hi is not None and row["half_width"] == pytest.approx((hi - lo) / 2, rel=1e-9)
    assert row["runs a point"] == "3 vs 5" and design.half_width(c, "selection", "precise-random", "math", 3)["half_width"] \
        > row["half_width"]
    grid = [1e-4, 1e-3, 1e-2]
    plan = {"seeds": [0, 1, 2], "frontier_seeds": 5, "draws": 10, "replicated": {"precise": [1e-3, 1e-2]},
            "arms": {"precise-key": {"grid": grid, "frontier_rates": [1e-4, 1e-3]}, "precise-random-any": {"grid": grid}}}
    runs = design.design_runs(plan)
    assert [runs("precise-key", lr) for lr in grid] == [1, 5, 3]            # a cut end, a frontier rate, another
    assert [runs("precise-random-any", lr) for lr in grid] == [1, 10, 10]    # its draws, but at the cut end


def _curves(tmp_path):
    # random draw i trains with seed i % 3 (as the runner): seed 0's draws (0, 3, 6) score 90 %, the others 10 %
    rnd = [(0.9, 0.9, 0.0) if i % 3 == 0 else (0.1, 0.1, 0.0) for i in range(9)]
    arms = {"precise-key": {1e-3: jitter(0.6, 0.6, 0.0), 3e-3: jitter(0.58, 0.58, 0.0)},
            "precise-random": {1e-3: rnd, 3e-3: rnd}, "full": {1e-4: jitter(0.9, 0.9, -0.05)}}
    return curves_of(Table1Result.load(write(tmp_path, arms)))


def test_keeping_every_run_changes_nothing_and_a_seed_leaves_only_its_draws(tmp_path):
    """Protects the run filter: keeping every run gives the point back unchanged; leaving seed 0 out removes
    exactly the random draws trained with seed 0 (draws 0, 3, 6) from every random point, in every per-run list,
    and leaves the other arms as they are."""
    c = _curves(tmp_path)
    p = c.points["precise-random"][0]
    assert design.runs_where(p, lambda t: True) == p
    d = design.without_seed(c, 0)
    q = d.points["precise-random"][0]
    assert [design.seed_of(t) for t in q.tags] == [1, 2, 1, 2, 1, 2] and len(q.math["carry"]) == len(q.general) == 6
    assert len(q.items["carry"]) == 6 and all(len(r) == len(p.items["carry"][0]) for r in q.items["carry"])
    assert d.points["precise-key"] == c.points["precise-key"]


def test_the_seed_table_shows_a_verdict_that_rests_on_one_seeds_draws(tmp_path):
    """Protects what the check shows: the whole-grid verdict is the verdict table's, and one column a seed re-decides
    it without that seed's draws at the same number of intervals — here the random points spread from 10 to 90 %
    (undecided); without seed 0's high draws the key arm's 60 % beats them (*holds*), a change the column shows
    but does not flag (undecided → decided is not the opposite)."""
    c = _curves(tmp_path)
    t = design.seed_table(c)
    rows = curves.verdict_rows(c)
    r = t[(t.comparison == "precise-key − precise-random") & (t.measure == "carry")].iloc[0]
    v = rows[(rows.comparison == "precise-key − precise-random") & (rows.measure == "carry")].iloc[0]
    assert r["whole grid"] == v["whole grid"] == curves.OPEN
    assert r["without seed 0's draws"] == curves.HOLDS and r["opposite"] == ""
    assert set(t.columns) >= {"without seed 1's draws", "without seed 2's draws"}
    assert design.seed_line(design.seed_effects(c), design.seed_table(c)).endswith("0 of the 12 verdicts that read a random arm are decided over the whole grid "
                                   "(undecided ones cannot turn into an opposite: this check has nothing to overturn).")


def test_seed_effects_find_draws_that_lean_with_their_seed(tmp_path):
    """Protects the direct check of the independence the intervals assume: at each random point the runs' math gains
    grouped by training seed — seed 0's draws at 90 %, the others at 10 % — give a large one-way F on (2, 6) degrees
    of freedom, equal to the F computed here from the runs' values, and a p-value below 0.001."""
    from arithmech.core.stats import one_way_f
    c = _curves(tmp_path)
    e = design.seed_effects(c)
    assert list(e.arm) == ["precise-random", "precise-random"] and list(e.runs) == [9, 9] and set(e.df) == {"2, 6"}
    p = c.points["precise-random"][0]
    groups = [[x for t, x in zip(p.tags, p.values("carry")) if design.seed_of(t) == s] for s in (0, 1, 2)]
    assert e["F (seed)"].iloc[0] == round(one_way_f(groups)[0], 2) > 100 and (e.p < 0.001).all()
    assert "largest F = " in design.seed_line(design.seed_effects(c), design.seed_table(c)) and "2 of 2 points with p < 0.05" in design.seed_line(design.seed_effects(c), design.seed_table(c))


def test_a_per_run_list_out_of_step_with_the_runs_is_refused(tmp_path):
    """Protects the run filter from cutting misaligned lists silently: a per-run list that is neither empty nor one
    entry a run raises, naming the point."""
    import pytest
    p = _curves(tmp_path).points["precise-random"][0]
    p.val_math = p.val_math[:-1]
    with pytest.raises(ValueError, match="precise-random 1e-03: a per-run list of 8 entries for 9 runs"):
        design.runs_where(p, lambda t: True)


def test_a_decided_verdict_that_no_seed_carries(tmp_path):
    """Protects the case the check is for: key at 80 % against 9 random draws near 30 % decides *holds*; without
    any one seed's draws it still holds, and the line says it was decided and none turns into its opposite."""
    arms = {"precise-key": {1e-3: jitter(0.8, 0.8, 0.0, n=5, sd=0.005)},
            "precise-random": {1e-3: jitter(0.3, 0.3, 0.0, n=9, sd=0.005)}}
    c = curves_of(Table1Result.load(write(tmp_path, arms)))
    t = design.seed_table(c)
    r = t[(t.comparison == "precise-key − precise-random") & (t.measure == "carry")].iloc[0]
    assert r["whole grid"] == curves.HOLDS and {r[f"without seed {s}'s draws"] for s in (0, 1, 2)} == {curves.HOLDS}
    assert design.seed_line(design.seed_effects(c), design.seed_table(c)).endswith("3 of the 12 verdicts that read a random arm are decided over the whole grid; none "
                                   "turns into its opposite without one seed's draws.")
