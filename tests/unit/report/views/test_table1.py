"""Unit tests of ``arithmech/report/views/table1.py``: what an arms run decided and cost, read from its plan."""
from __future__ import annotations

import json

from arithmech.core.stats import wilson_interval
from arithmech.report.views import table1 as T


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
    line = T.progress_line(tmp_path)
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
    line = T.progress_line(tmp_path)
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
    line = T.progress_line(tmp_path)
    assert line.startswith("**7 of 10 planned runs made**"), line
    assert "1 of the 2 grid points the rules read have the 3 runs" in line


def _heads_plan(tmp_path, tuned, draws, **extra):
    plan = {"suite": "cpu", "runs": [], "heads": {"tuned": tuned, "selection": "the top 4 by rank", "random_draws": draws},
            "steps": 10, "batch_size": 4, "seeds": [0], "arms": {}, "cost": {}, **extra}
    (tmp_path / "finetune").mkdir()
    (tmp_path / "finetune" / "table1.json").write_text(json.dumps(plan))
    return T.setup_line(tmp_path)


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
    line = T.progress_line(tmp_path)
    assert line == ("**3 of 3 planned runs made** (complete): 1 of the 1 grid points the rules read have the 3 runs "
                    "they need; 2.0 hours of this machine (wall clock of each run).")


def _scoped(tmp_path, *curve):
    """A full-SFT grid at 90, 80 and 86 of 200 validation items (45, 40, 43 %), and a learning curve whose points
    after step 0 score ``curve``."""
    from tests.unit.claims.synthetic import write
    tmp_path.mkdir(parents=True, exist_ok=True)
    f = write(tmp_path, {"full": {1e-4: [(0.45, 0.45, 0.0), (0.40, 0.40, 0.0), (0.43, 0.43, 0.0)]}})
    plan = json.loads((f / "finetune" / "table1.json").read_text())
    (f / "finetune" / "table1.json").write_text(json.dumps({**plan, "sizes": {"carry_val": 200}}))
    if curve:
        points = [{"step": 0, "val_math": 0.0}] + [{"step": 240 * (i + 1), "val_math": v} for i, v in enumerate(curve)]
        cv = {"lr": 1e-4, "knee": 240, "rule": "the knee", "sizes": {"carry_val": 200}, "points": points}
        (f / "finetune" / "curve.json").write_text(json.dumps(cv))
    return T.scope_line(f)


def test_the_scope_line_says_by_how_many_items_the_gate_passes(tmp_path):
    """Protects the account of the gate every math rule passes through (a hostile reading: SmolLM2 passes it by a
    whisker, 101 of 200 validation items on its learning curve, and the page did not say): the count, its Wilson
    interval, where it was reached, the grid's own best, how many items fewer would fail it when it is the one score
    that passes (100 of 200 still passes: 2), and full SFT's frontier top on the test items."""
    line = _scoped(tmp_path, 0.505)
    lo, hi = wilson_interval(101, 200)
    assert f"best validation math accuracy 101/200 = 50.5% [{lo:.1%}, {hi:.1%}], reached by the learning curve at " \
           "step 240 (rate 1e-04); over full SFT's grid runs the best is 45.0%." in line
    assert "The gate passes on this one score alone: 2 items fewer would fail it." in line
    assert "Full SFT's frontier top (1e-04, 3 runs, picked on validation) scores 42.7% on the test items (base 0.0%; " \
           "n = 400 items" in line


def test_the_scope_line_at_the_boundary_and_with_several_scores_passing(tmp_path):
    """Protects the margin's edges: exactly 100 of 200 passes (≥ 50 %) and one item fewer fails it; where several
    scores pass (two curve points of the 3 grid runs and 3 curve points), the line counts them instead of a margin
    one score's items cannot give."""
    assert "The gate passes on this one score alone: 1 item fewer would fail it." in _scoped(tmp_path / "a", 0.5)
    several = _scoped(tmp_path / "b", 0.55, 0.6)
    assert "The gate passes: 2 of the 6 scores it reads reach it." in several
    assert "best validation math accuracy 120/200 = 60.0%" in several


def test_the_scope_line_of_a_gate_that_fails(tmp_path):
    """Protects the other side: without the curve the grid's best, 90 of 200, fails the gate by 10 items."""
    line = _scoped(tmp_path)
    assert "best validation math accuracy 90/200 = 45.0%" in line and "The gate fails: 10 more items would pass it." in line


def test_the_shots_line_shows_the_format_controls_own_score_and_its_examples(tmp_path):
    """Protects the format control's account (a hostile reading: base-shots' own score, 3 of 400, was on no page,
    so a reader could not see that the rule against it subtracts almost nothing): base-shots and the zero-shot base
    as counted items with their Wilson intervals, by operation, and the K examples shown before every item."""
    from arithmech.data.splits import carry_items
    from tests.unit.claims.synthetic import write
    f = write(tmp_path, {"full": {1e-4: [(0.5, 0.5, 0.0)] * 3}}, shots=(0.1, 0.05))
    plan = json.loads((f / "finetune" / "table1.json").read_text())
    (f / "finetune" / "table1.json").write_text(json.dumps({**plan, "shots": 2, "data_seed": 0}))
    line = T.shots_line(f)
    lo, hi = wilson_interval(30, 400)
    assert f"answers 30/400 = 7.5% [{lo:.1%}, {hi:.1%}] (addition 20/200, subtraction 10/200) of the carry" in line
    assert "the zero-shot base 0/400 = 0.0%" in line
    q, a = carry_items("train", 2, 0, seed=10_000)[0]
    assert f"the same 2 solved problems before every test item (`{q} {a}` | " in line


def test_no_shots_line_without_a_base_shots_record(tmp_path):
    """Protects a run made without the format control: no line (not a line about nothing)."""
    from tests.unit.claims.synthetic import write
    assert T.shots_line(write(tmp_path, {"full": {1e-4: [(0.5, 0.5, 0.0)] * 3}})) is None


def test_the_tuned_line_gives_each_arms_parameters_and_the_random_arms_range(tmp_path):
    """Protects the size match of the random controls (a hostile reading: the layer-matched draws tune up to 6.7 %
    fewer parameters than the key arm, random-any up to 6.7 % more, and no page said so): each precise arm's tuned
    parameters from its records, a random arm's range over its runs, relative to precise-key's."""
    from tests.unit.claims.synthetic import write
    f = write(tmp_path, {"precise-key": {1e-3: [(0.5, 0.5, 0.0)] * 2}, "precise-random": {1e-3: [(0.4, 0.4, 0.0)] * 2}})
    for path, n in zip(sorted((f / "finetune").glob("precise-*.json")), (1000, 1000, 900, 1100)):
        rec = json.loads(path.read_text())
        path.write_text(json.dumps({**rec, "tuned_parameters": n}))
    names = sorted(p.stem for p in (f / "finetune").glob("precise-*.json"))
    assert names[:2] == ["precise-key-s0-lr1e-03", "precise-key-s1-lr1e-03"]
    assert T.tuned_line(f) == ("Tuned parameters per run: precise-key 1,000; precise-random 900–1,100 (-10.0 % to "
                               "+10.0 % of precise-key's).")


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
