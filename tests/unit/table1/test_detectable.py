"""The smallest difference Table 1's rules can decide (``arithmech/table1/detectable.py``), on synthetic records."""
from __future__ import annotations

import pytest

from arithmech.table1 import curves as C
from arithmech.table1 import detectable as D
from arithmech.table1 import frontier as CP
from arithmech.table1.frontier import curves_of
from arithmech.table1.result import Table1Result
from tests.unit.table1.synthetic import jitter as J
from tests.unit.table1.synthetic import write


def test_the_projected_half_width_is_the_rules_interval_at_three_runs(tmp_path):
    """Protects the projection against the interval the rules read: where the compared points already have 3 runs,
    the half-width projected to 3 runs equals half the width of the crossed interval the rule computes for them at
    its level (precise − full on carry; precise − base), so the table says exactly what a rule could decide."""
    c = curves_of(Table1Result.load(write(tmp_path, {"full": {1e-4: J(0.9, 0.85, -0.05)}, "precise-key": {1e-3: J(0.7, 0.6, 0.0, sd=0.03)}})))
    key, full = c.points["precise-key"][0], c.points["full"][0]
    row = D.half_width(c, "matches", "full", "math")
    lo, hi = CP.diff(key, full, "carry", C.family(c, "matches"))
    assert lo is not None and hi is not None and row["half_width"] == pytest.approx((hi - lo) / 2, rel=1e-9)
    row = D.half_width(c, "learns", None, "math")
    lo, hi = CP.gain(key, "carry", m=C.family(c, "learns"))
    assert lo is not None and hi is not None and row["half_width"] == pytest.approx((hi - lo) / 2, rel=1e-9)
    assert row["items"] == 400 and row["why"] == ""


def test_a_point_of_one_run_leaves_the_half_width_unknown(tmp_path):
    """Protects the honesty of the table: with one run at a compared point its training spread is unknown, and the
    row says so instead of reading the item spread alone as the whole error."""
    c = curves_of(Table1Result.load(write(tmp_path, {"precise-key": {1e-3: J(0.7, 0.6, 0.0, n=1)}, "precise-random": {1e-3: J(0.5, 0.5, 0.0)}})))
    rows = D.table(c).set_index("comparison")
    assert rows.loc["precise-key − precise-random", "half_width"] is None
    assert "one run" in rows.loc["precise-key − precise-random", "why"]
    assert "precise-key − full" not in rows.index          # no full arm in the plan: no row


def test_the_design_projects_each_point_to_its_own_runs(tmp_path):
    """Protects the design's column (it projected a random arm's point, which gets 10 draws, to 3 and 5 runs like a
    seeded point): with ``{arm: runs}`` each compared point is projected to its own runs, and where the points
    already have them (precise-key 3, precise-random 5 draws) it is half the rule's own interval for them."""
    c = curves_of(Table1Result.load(write(tmp_path, {"precise-key": {1e-3: J(0.7, 0.6, 0.0, sd=0.03)},
                              "precise-random": {1e-3: J(0.5, 0.5, 0.0, n=5, sd=0.05)}})))
    key, rnd = c.points["precise-key"][0], c.points["precise-random"][0]
    row = D.half_width(c, "selection", "precise-random", "math", runs=lambda arm, lr: {"precise-key": 3}.get(arm, 5))
    lo, hi = CP.diff(key, rnd, "carry", C.family(c, "selection", "precise-key", "precise-random"))
    assert lo is not None and hi is not None and row["half_width"] == pytest.approx((hi - lo) / 2, rel=1e-9)
    assert row["runs a point"] == "3 vs 5" and D.half_width(c, "selection", "precise-random", "math", 3)["half_width"] \
        > row["half_width"]
    grid = [1e-4, 1e-3, 1e-2]
    plan = {"seeds": [0, 1, 2], "frontier_seeds": 5, "draws": 10, "replicated": {"precise": [1e-3, 1e-2]},
            "arms": {"precise-key": {"grid": grid, "frontier_rates": [1e-4, 1e-3]}, "precise-random-any": {"grid": grid}}}
    runs = D.design_runs(plan)
    assert [runs("precise-key", lr) for lr in grid] == [1, 5, 3]            # a cut end, a frontier rate, another
    assert [runs("precise-random-any", lr) for lr in grid] == [1, 10, 10]    # its draws, but at the cut end
