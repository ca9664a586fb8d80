"""Unit tests of ``arithmech/table1/views.py``: what an arms run decided and cost, read from its plan."""
from __future__ import annotations

import json

from arithmech.table1 import views as T
from arithmech.table1.result import Table1Result


def _plan_only(folder):
    """An arms run of which only the plan is read (its records are not needed by the line under test)."""
    return Table1Result(json.loads((folder / "finetune" / "table1.json").read_text()), {}, None, {}, None, folder)


def _row(arm, lr, seed, draw=0):
    return {"lr": lr, "seed": seed, "draw": draw, "tag": f"{arm}{draw if draw else ''}-s{seed}-lr{lr:.0e}"}


def test_the_progress_line_counts_the_design_against_the_runs_made(tmp_path):
    """Protects the page's account of an unfinished Table 1: planned runs are every rate x seeds (random arms:
    x draws) plus the frontier rates' extra seeds; a point is readable from 3 runs; the rest is estimated at each
    arm's own mean cost per run (full: 100 s a run, 3 left; random: 10 s a run, 18 left → 480 s)."""
    full = [_row("full", lr, s) for lr in (1e-4, 3e-4) for s in (0, 1, 2)][:5]       # 3e-4 has 2 runs
    rnd = [_row("precise-random", lr, 0, d) for lr in (1e-3, 3e-3) for d in (0,)]
    plan = {"suite": "cpu", "heads": {}, "runs": [], "seeds": [0, 1, 2], "draws": 10, "frontier_seeds": 5, "complete": False,
            "arms": {"full": {"grid": [1e-4, 3e-4], "grid_rows": full, "frontier_rates": [1e-4]},
                     "precise-random": {"grid": [1e-3, 3e-3], "grid_rows": rnd, "frontier_rates": [1e-3]}},
            "cost": {"total_s": 520.0, "run_s": {**{r["tag"]: 100.0 for r in full}, **{r["tag"]: 10.0 for r in rnd}}}}
    (tmp_path / "finetune").mkdir()
    (tmp_path / "finetune" / "table1.json").write_text(json.dumps(plan))
    line = T.progress_line(_plan_only(tmp_path))
    # full: 2 rates x 3 seeds + 1 frontier rate x 2 extra seeds = 8 planned; random: 2 rates x 10 draws = 20
    assert line.startswith("**7 of 28 planned runs made** (in progress)")
    assert "1 of the 4 grid points the rules read have the 3 runs" in line
    assert "0.1 hours of this machine so far" in line and "about 0.1 hours more" in line   # 300 + 180 = 480 s


def test_the_progress_line_counts_a_cut_grids_ends_once(tmp_path):
    """Protects the count under the grid-point cut (``replicated`` in the plan): a cut rate is planned once, plus
    the runs it had before the cut; the page names the cut. Full: 3 rates, the ends cut, 3 seeds: 3 first runs +
    2 more at the middle rate + the end run of seed 1 made before the cut = 6."""
    full = [_row("full", lr, 0) for lr in (1e-5, 1e-4, 1e-3)] + [_row("full", 1e-5, 1)]
    plan = {"suite": "cpu", "heads": {}, "runs": [], "seeds": [0, 1, 2], "draws": 10, "frontier_seeds": 3,
            "complete": False, "replicated": {"full": [1e-4], "precise": []},
            "rules": {"cut": "--no-replicate-ends: the ends keep their first run"},
            "arms": {"full": {"grid": [1e-5, 1e-4, 1e-3], "grid_rows": full, "frontier_rates": [1e-4]}},
            "cost": {"total_s": 40.0, "run_s": {r["tag"]: 10.0 for r in full}}}
    (tmp_path / "finetune").mkdir()
    (tmp_path / "finetune" / "table1.json").write_text(json.dumps(plan))
    line = T.progress_line(_plan_only(tmp_path))
    assert line.startswith("**4 of 6 planned runs made**") and "Cut: --no-replicate-ends" in line, line
    assert "0 of the 1 grid points the rules read" in line                 # the cut ends are not read


def test_the_progress_line_plans_what_the_design_gives_each_point_and_keeps_extra_runs(tmp_path):
    """Protects the one account of the design (``claims.detectable.design_runs``, which the detectable table reads
    too): a point plans the runs the design gives its rate, or the runs it has where it has more — here 1e-4 had 5
    seeds while it was on the frontier, which has since moved to 3e-4 (5 + 5 planned; made 5 + 2: 3 left), so made
    never exceeds planned and no run is counted as missing twice."""
    full = [_row("full", 1e-4, s) for s in range(5)] + [_row("full", 3e-4, s) for s in (0, 1)]
    plan = {"suite": "cpu", "heads": {}, "runs": [], "seeds": [0, 1, 2], "draws": 10, "frontier_seeds": 5,
            "complete": False, "arms": {"full": {"grid": [1e-4, 3e-4], "grid_rows": full, "frontier_rates": [3e-4]}},
            "cost": {"total_s": 70.0, "run_s": {r["tag"]: 10.0 for r in full}}}
    (tmp_path / "finetune").mkdir()
    (tmp_path / "finetune" / "table1.json").write_text(json.dumps(plan))
    line = T.progress_line(_plan_only(tmp_path))
    assert line.startswith("**7 of 10 planned runs made**"), line
    assert "1 of the 2 grid points the rules read have the 3 runs" in line


def _heads_plan(tmp_path, tuned, draws, **extra):
    plan = {"suite": "cpu", "runs": [], "heads": {"tuned": tuned, "selection": "the top 4 by rank", "random_draws": draws},
            "steps": 10, "batch_size": 4, "seeds": [0], "arms": {}, "cost": {}, **extra}
    (tmp_path / "finetune").mkdir()
    (tmp_path / "finetune" / "table1.json").write_text(json.dumps(plan))
    return T.setup_line(_plan_only(tmp_path))


def test_the_setup_line_says_how_closely_the_random_draws_match_the_layers(tmp_path):
    """Protects the layer-matched control's description, computed from the plan's heads (it once read a key the
    runner no longer writes and printed "layers matched in 0 of 0 draws"): a tuned layer with no free head sends
    its draw to a neighbour, and the line says how many heads of each draw sit in a tuned head's own layer."""
    tuned = [[2, 0], [2, 1], [3, 4], [5, 0]]
    line = _heads_plan(tmp_path, tuned, [[[1, 3], [1, 5], [3, 1], [5, 2]], [[1, 2], [2, 6], [3, 3], [5, 1]]])
    assert ("2 draws planned: 2–3 of 4 heads of each draw paired with a tuned head of their own layer, the others up to "
            "1 layer away") in line


def test_the_setup_line_of_exactly_matched_draws(tmp_path):
    """Protects the plain case: every drawn head in a tuned head's own layer (one draw: singular)."""
    line = _heads_plan(tmp_path, [[2, 0], [4, 1]], [[[2, 5], [4, 3]]])
    assert "1 draw planned: each head paired with a tuned head of its own layer." in line


def test_the_setup_line_names_what_its_cost_covers_and_the_frontier_seeds(tmp_path):
    """Protects the cost and seed clauses (the page once said "1096 minutes over 115 runs" beside "113 of 149 planned
    runs made": the cost counts base, base-shots and the learning curve too, and the frontier rates get 5 seeds)."""
    rows = [_row("full", 1e-4, s) for s in (0, 1, 2)]
    rnd = [_row("precise-random", 1e-3, 0, d) for d in (0, 1)]
    anyl = [_row("precise-random-any", 1e-3, 0, d) for d in (0, 1, 2)]   # ahead: the line lists precise-random's draws
    line = _heads_plan(tmp_path, [[2, 0]], [[[2, 1]]] * 4, seeds=[0, 1, 2], frontier_seeds=5, replicated={"full": [1e-4]},
                       arms={"full": {"grid": [1e-4], "grid_rows": rows}, "precise-random": {"grid": [1e-3], "grid_rows": rnd},
                             "precise-random-any": {"grid": [1e-3], "grid_rows": anyl}},
                       cost={"total_s": 600.0, "runs": 10, "curve_s": 30.0})
    assert "4 draws planned, draws 0–1 and precise-random-any's 0–2 run at every rate so far:" in line  # each arm's own
    assert "seeds 0, 1, 2 at every rate but the cut ends (below) and up to 5 at each arm's frontier rates" in line
    assert "10 minutes of compute (8 fine-tuning runs, base, base-shots, the learning curve) on this machine." in line


def test_the_setup_line_counts_a_draw_only_where_every_rate_has_it(tmp_path):
    """Protects the draws clause between batches (a hostile reading: with draw 8 made at 3 of 4 rates the line said
    "draws 0–8"): a draw is run when every rate the plan gives draws has it, here draws 0–1 at both rates, draw 2 at
    the first only."""
    rnd = [_row("precise-random", lr, 0, d) for lr in (1e-3, 3e-3) for d in (0, 1)] + [_row("precise-random", 1e-3, 0, 2)]
    line = _heads_plan(tmp_path, [[2, 0]], [[[2, 1]]] * 4, seeds=[0], replicated={"full": [], "precise": [1e-3, 3e-3]},
                       arms={"precise-random": {"grid": [1e-4, 1e-3, 3e-3], "grid_rows": rnd}})
    assert "4 draws planned, draws 0–1 run at every rate so far:" in line


def test_the_progress_line_of_a_complete_design_estimates_nothing_more(tmp_path):
    """Protects the finished table's wording: every planned run made and the plan marked complete, the line gives
    the machine time spent, with no "so far" and no hours left."""
    full = [_row("full", 1e-4, s) for s in (0, 1, 2)]
    plan = {"suite": "cpu", "heads": {}, "runs": [], "seeds": [0, 1, 2], "draws": 10, "frontier_seeds": 3, "complete": True,
            "arms": {"full": {"grid": [1e-4], "grid_rows": full, "frontier_rates": [1e-4]}},
            "cost": {"total_s": 7200.0, "run_s": {r["tag"]: 2400.0 for r in full}}}
    (tmp_path / "finetune").mkdir()
    (tmp_path / "finetune" / "table1.json").write_text(json.dumps(plan))
    line = T.progress_line(_plan_only(tmp_path))
    assert line == ("**3 of 3 planned runs made** (complete): 1 of the 1 grid points the rules read have the 3 runs "
                    "they need; 2.0 hours of this machine (wall clock of each run).")


def test_the_setup_line_lists_draws_with_a_gap_and_a_random_any_arm_behind(tmp_path):
    """Protects the draws clause's two remaining cases (a review's find): draws run with a gap are listed, not
    spanned; random-any behind a complete precise-random still says how far it is."""
    assert (T._span([0, 1, 3]), T._span([0, 1, 2]), T._span([4])) == ("0, 1, 3", "0–2", "4")
    rnd = [_row("precise-random", 1e-3, 0, d) for d in (0, 1, 2, 3)]
    anyl = [_row("precise-random-any", 1e-3, 0, d) for d in (0, 2)]
    line = _heads_plan(tmp_path, [[2, 0]], [[[2, 1]]] * 4, seeds=[0], replicated={"full": [], "precise": [1e-3]},
                       arms={"precise-random": {"grid": [1e-3], "grid_rows": rnd},
                             "precise-random-any": {"grid": [1e-3], "grid_rows": anyl}})
    assert "4 draws planned, precise-random-any's 0, 2 run at every rate so far:" in line


def test_the_toy_scope_box_and_the_verdict_table_agree_on_what_cannot_be_tested(tmp_path):
    """Protects the toy's rows gated, in the intro box too: where full SFT learns nothing (2 % of the validation
    items at its best; the gate needs a gain whose interval clears +5 points), the intro box says every rule reads *not
    testable*, and so does every row of the verdict table and every Table 1 line of the findings box; where full
    SFT learns (60 %), the box says the toy tests the claim."""
    from arithmech.claims.decide import claims
    from arithmech.report.views.pages import claim_lines
    from arithmech.table1 import curves as CV
    from tests.unit.table1.synthetic import jitter, write
    arms = lambda full: {"full": {1e-4: jitter(full, full, 0.0)}, "precise-key": {1e-3: jitter(0.1, 0.1, 0.0)},
                         "precise-random": {1e-3: jitter(0.1, 0.1, 0.0)}}
    f = write(tmp_path / "a", arms(0.02))
    plan = {**json.loads((f / "finetune" / "table1.json").read_text()), "steps": 30}
    assert "every Table 1 rule reads *not testable* here" in T.toy_scope(Table1Result.load(f), plan)
    assert set(CV.verdicts(Table1Result.load(f)).verdict) == {"not testable"}
    from arithmech.table1.page import TABLE1_CLAIMS
    ids = list(TABLE1_CLAIMS)
    assert len(ids) == 5 and all("**not testable** (not testable: full SFT does not learn" in x for x in claim_lines(claims(f), ids))
    g = write(tmp_path / "b", arms(0.6))
    plan = {**json.loads((g / "finetune" / "table1.json").read_text()), "steps": 30}
    assert T.toy_scope(Table1Result.load(g), plan).startswith("Full SFT learns the toy's new skills")
