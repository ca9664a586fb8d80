"""Unit tests of ``arithmech/table1/draws.py``: the selection verdicts re-decided without one training seed's
random draws."""
from __future__ import annotations

from arithmech.table1 import curves as C
from arithmech.table1 import draws as D
from arithmech.table1.frontier import curves_of
from arithmech.table1.result import Table1Result
from tests.unit.table1.synthetic import jitter as J
from tests.unit.table1.synthetic import write


def _curves(tmp_path):
    # random draw i trains with seed i % 3 (as the runner): seed 0's draws (0, 3, 6) score 90 %, the others 10 %
    rnd = [(0.9, 0.9, 0.0) if i % 3 == 0 else (0.1, 0.1, 0.0) for i in range(9)]
    arms = {"precise-key": {1e-3: J(0.6, 0.6, 0.0), 3e-3: J(0.58, 0.58, 0.0)},
            "precise-random": {1e-3: rnd, 3e-3: rnd}, "full": {1e-4: J(0.9, 0.9, -0.05)}}
    return curves_of(Table1Result.load(write(tmp_path, arms)))


def test_keeping_every_run_changes_nothing_and_a_seed_leaves_only_its_draws(tmp_path):
    """Protects the run filter: keeping every run gives the point back unchanged; leaving seed 0 out removes
    exactly the random draws trained with seed 0 (draws 0, 3, 6) from every random point, in every per-run list,
    and leaves the other arms as they are."""
    c = _curves(tmp_path)
    p = c.points["precise-random"][0]
    assert D.runs_where(p, lambda t: True) == p
    d = D.without_seed(c, 0)
    q = d.points["precise-random"][0]
    assert [D.seed_of(t) for t in q.tags] == [1, 2, 1, 2, 1, 2] and len(q.math["carry"]) == len(q.general) == 6
    assert len(q.items["carry"]) == 6 and all(len(r) == len(p.items["carry"][0]) for r in q.items["carry"])
    assert d.points["precise-key"] == c.points["precise-key"]


def test_the_seed_table_shows_a_verdict_that_rests_on_one_seeds_draws(tmp_path):
    """Protects what the check shows: the whole-grid verdict is the verdict table's, and one column a seed re-decides
    it without that seed's draws at the same number of intervals — here the random points spread from 10 to 90 %
    (undecided); without seed 0's high draws the key arm's 60 % beats them (*holds*), a change the column shows
    but does not flag (undecided → decided is not the opposite)."""
    c = _curves(tmp_path)
    t = D.seed_table(c)
    rows = C.verdict_rows(c)
    r = t[(t.comparison == "precise-key − precise-random") & (t.measure == "carry")].iloc[0]
    v = rows[(rows.comparison == "precise-key − precise-random") & (rows.measure == "carry")].iloc[0]
    assert r["whole grid"] == v["whole grid"] == C.OPEN
    assert r["without seed 0's draws"] == C.HOLDS and r["opposite"] == ""
    assert set(t.columns) >= {"without seed 1's draws", "without seed 2's draws"}
    assert D.seed_line(D.seed_effects(c), D.seed_table(c)).endswith("0 of the 12 verdicts that read a random arm are decided over the whole grid "
                                   "(undecided ones cannot turn into an opposite: this check has nothing to overturn).")


def test_seed_effects_find_draws_that_lean_with_their_seed(tmp_path):
    """Protects the direct check of the independence the intervals assume: at each random point the runs' math gains
    grouped by training seed — seed 0's draws at 90 %, the others at 10 % — give a large one-way F on (2, 6) degrees
    of freedom, equal to the F computed here from the runs' values, and a p-value below 0.001."""
    from arithmech.core.stats import one_way_f
    c = _curves(tmp_path)
    e = D.seed_effects(c)
    assert list(e.arm) == ["precise-random", "precise-random"] and list(e.runs) == [9, 9] and set(e.df) == {"2, 6"}
    p = c.points["precise-random"][0]
    groups = [[x for t, x in zip(p.tags, p.values("carry")) if D.seed_of(t) == s] for s in (0, 1, 2)]
    assert e["F (seed)"].iloc[0] == round(one_way_f(groups)[0], 2) > 100 and (e.p < 0.001).all()
    assert "largest F = " in D.seed_line(D.seed_effects(c), D.seed_table(c)) and "2 of 2 points with p < 0.05" in D.seed_line(D.seed_effects(c), D.seed_table(c))


def test_a_per_run_list_out_of_step_with_the_runs_is_refused(tmp_path):
    """Protects the run filter from cutting misaligned lists silently: a per-run list that is neither empty nor one
    entry a run raises, naming the point."""
    import pytest
    p = _curves(tmp_path).points["precise-random"][0]
    p.val_math = p.val_math[:-1]
    with pytest.raises(ValueError, match="precise-random 1e-03: a per-run list of 8 entries for 9 runs"):
        D.runs_where(p, lambda t: True)


def test_a_decided_verdict_that_no_seed_carries(tmp_path):
    """Protects the case the check is for: key at 80 % against 9 random draws near 30 % decides *holds*; without
    any one seed's draws it still holds, and the line says it was decided and none turns into its opposite."""
    arms = {"precise-key": {1e-3: J(0.8, 0.8, 0.0, n=5, sd=0.005)},
            "precise-random": {1e-3: J(0.3, 0.3, 0.0, n=9, sd=0.005)}}
    c = curves_of(Table1Result.load(write(tmp_path, arms)))
    t = D.seed_table(c)
    r = t[(t.comparison == "precise-key − precise-random") & (t.measure == "carry")].iloc[0]
    assert r["whole grid"] == C.HOLDS and {r[f"without seed {s}'s draws"] for s in (0, 1, 2)} == {C.HOLDS}
    assert D.seed_line(D.seed_effects(c), D.seed_table(c)).endswith("3 of the 12 verdicts that read a random arm are decided over the whole grid; none "
                                   "turns into its opposite without one seed's draws.")
