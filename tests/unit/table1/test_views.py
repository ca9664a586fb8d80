"""Unit tests of ``arithmech/table1/views.py``: what an arms run decided and cost, read from its plan; the scope
gate, the format control and the tuned parameters as the pages print them."""
from __future__ import annotations

import json

from arithmech.core.stats import wilson_interval
from arithmech.table1 import views
from arithmech.table1.frontier import curves_of
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
    line = views.progress_line(_plan_only(tmp_path))
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
    line = views.progress_line(_plan_only(tmp_path))
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
    line = views.progress_line(_plan_only(tmp_path))
    assert line.startswith("**7 of 10 planned runs made**"), line
    assert "1 of the 2 grid points the rules read have the 3 runs" in line


def _heads_plan(tmp_path, tuned, draws, **extra):
    plan = {"suite": "cpu", "runs": [], "heads": {"tuned": tuned, "selection": "the top 4 by rank", "random_draws": draws},
            "steps": 10, "batch_size": 4, "seeds": [0], "arms": {}, "cost": {}, **extra}
    (tmp_path / "finetune").mkdir()
    (tmp_path / "finetune" / "table1.json").write_text(json.dumps(plan))
    return views.setup_line(_plan_only(tmp_path))


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
    line = views.progress_line(_plan_only(tmp_path))
    assert line == ("**3 of 3 planned runs made** (complete): 1 of the 1 grid points the rules read have the 3 runs "
                    "they need; 2.0 hours of this machine (wall clock of each run).")


def test_the_setup_line_lists_draws_with_a_gap_and_a_random_any_arm_behind(tmp_path):
    """Protects the draws clause's two remaining cases (a review's find): draws run with a gap are listed, not
    spanned; random-any behind a complete precise-random still says how far it is."""
    assert (views._span([0, 1, 3]), views._span([0, 1, 2]), views._span([4])) == ("0, 1, 3", "0–2", "4")
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
    from arithmech.claims.evidence import Context
    from arithmech.report.views.pages import claim_lines
    from arithmech.table1 import curves
    from tests.unit.table1.synthetic import jitter, write
    arms = lambda full: {"full": {1e-4: jitter(full, full, 0.0)}, "precise-key": {1e-3: jitter(0.1, 0.1, 0.0)},
                         "precise-random": {1e-3: jitter(0.1, 0.1, 0.0)}}
    f = write(tmp_path / "a", arms(0.02))
    plan = {**json.loads((f / "finetune" / "table1.json").read_text()), "steps": 30}
    assert "every Table 1 rule reads *not testable* here" in views.toy_scope(Table1Result.load(f), plan)
    assert set(curves.verdicts(Table1Result.load(f)).verdict) == {"not testable"}
    from arithmech.table1.page import TABLE1_CLAIMS
    ids = list(TABLE1_CLAIMS)
    assert len(ids) == 5 and all("**not testable** (not testable: full SFT does not learn" in x for x in claim_lines(claims(Context(f)), ids))
    g = write(tmp_path / "b", arms(0.6))
    plan = {**json.loads((g / "finetune" / "table1.json").read_text()), "steps": 30}
    assert views.toy_scope(Table1Result.load(g), plan).startswith("Full SFT learns the toy's new skills")


def _scoped(tmp_path, *vals):
    """A full-SFT grid at one rate, its 3 runs at validation (and test) math accuracies ``vals``; base at 0 %."""
    from tests.unit.table1.synthetic import write
    tmp_path.mkdir(parents=True, exist_ok=True)
    f = write(tmp_path, {"full": {1e-4: [(v, v, 0.0) for v in vals]}})
    return views.scope_line(Table1Result.load(f))


def test_the_scope_line_gives_the_gain_that_passes_the_gate(tmp_path):
    """Protects the account of the gate every math rule passes through (tenth version: full SFT's validation gain
    over base, interval above +5 points): the rate, its runs, the gain with its interval, and full SFT's frontier top
    on the test items."""

    from arithmech.core.stats import crossed_interval
    line = _scoped(tmp_path, 0.45, 0.40, 0.43)
    p = curves_of(Table1Result.load(tmp_path)).points["full"][0]
    est, lo, hi = crossed_interval(p.val_items)
    assert f"full SFT learns the skill (1e-04, 3 runs: validation gain {100 * est:+.1f} points [{100 * lo:+.1f}, " \
           f"{100 * hi:+.1f}])" in line and lo > 0.05
    assert "Full SFT's frontier top (1e-04, 3 runs, picked on validation) scores 42.7% on the test items (base 0.0%; " \
           "n = 400 items" in line


def test_the_scope_line_of_a_gate_that_fails(tmp_path):
    """Protects the other side: a validation gain of 2 to 4 points, its interval reaching below +5 points, is no
    skill learned: the line says not testable, with the gain that failed."""
    line = _scoped(tmp_path, 0.02, 0.04, 0.03)
    assert "not testable: full SFT does not learn the skill either (its best 1e-04, 3 runs: validation gain" in line
    assert "a test needs the interval above +5 points" in line


def test_the_shots_line_shows_the_format_controls_own_score_and_its_examples(tmp_path):
    """Protects the format control's account (a hostile reading: base-shots' own score, 3 of 400, was on no page,
    so a reader could not see that the rule against it subtracts almost nothing): base-shots and the zero-shot base
    as counted items with their Wilson intervals, by operation, and the K examples shown before every item."""
    from arithmech.data.splits import carry_items
    from tests.unit.table1.synthetic import write
    f = write(tmp_path, {"full": {1e-4: [(0.5, 0.5, 0.0)] * 3}}, shots=(0.1, 0.05))
    plan = json.loads((f / "finetune" / "table1.json").read_text())
    (f / "finetune" / "table1.json").write_text(json.dumps({**plan, "shots": 2, "data_seed": 0}))
    line = views.shots_line(Table1Result.load(f))
    lo, hi = wilson_interval(30, 400)
    assert f"answers 30/400 = 7.5% [{lo:.1%}, {hi:.1%}] (addition 20/200, subtraction 10/200) of the carry" in line
    assert "the zero-shot base 0/400 = 0.0%" in line
    q, a = carry_items("train", 2, 0, seed=10_000)[0]
    assert f"the same 2 solved problems before every test item (`{q} {a}` | " in line


def test_no_shots_line_without_a_base_shots_record(tmp_path):
    """Protects a run made without the format control: no line (not a line about nothing)."""
    from tests.unit.table1.synthetic import write
    assert views.shots_line(Table1Result.load(write(tmp_path, {"full": {1e-4: [(0.5, 0.5, 0.0)] * 3}}))) is None


def test_the_tuned_line_gives_each_arms_parameters_and_the_random_arms_range(tmp_path):
    """Protects the size match of the random controls (a hostile reading: the layer-matched draws tune up to 6.7 %
    fewer parameters than the key arm, random-any up to 6.7 % more, and no page said so): each precise arm's tuned
    parameters from its records, a random arm's range over its runs, relative to precise-key's."""
    from tests.unit.table1.synthetic import write
    f = write(tmp_path, {"precise-key": {1e-3: [(0.5, 0.5, 0.0)] * 2}, "precise-random": {1e-3: [(0.4, 0.4, 0.0)] * 2}})
    for path, n in zip(sorted((f / "finetune").glob("precise-*.json")), (1000, 1000, 900, 1100)):
        rec = json.loads(path.read_text())
        path.write_text(json.dumps({**rec, "tuned_parameters": n}))
    names = sorted(p.stem for p in (f / "finetune").glob("precise-*.json"))
    assert names[:2] == ["precise-key-s0-lr1e-03", "precise-key-s1-lr1e-03"]
    assert views.tuned_line(Table1Result.load(f)) == ("Tuned parameters per run: precise-key 1,000; precise-random 900–1,100 (-10.0 % to "
                               "+10.0 % of precise-key's).")


def _pt(arm, lr, math, general, loss=None, collapsed=False):
    """A grid point of 3 runs, each at ``math`` gain, ``general`` change and ``loss`` change from base."""
    from arithmech.table1.frontier import Point
    return Point(arm, lr, tags=[f"{arm}-s{s}-lr{lr:.0e}" for s in range(3)], math={"carry": [math] * 3},
                 general=[general] * 3, loss=[] if loss is None else [loss] * 3, collapsed=[collapsed] * 3)


def _curves(*points, suite="cpu", scope=(True, "")):
    from arithmech.table1.frontier import Curves
    by = {}
    for p in points:
        by.setdefault(p.arm, []).append(p)
    return Curves(suite, "carry", "cloze", ("carry",), by, base={}, scope=scope)


def test_the_dominated_line_names_the_precise_points_a_full_sft_point_beats_in_means():
    """Protects the picture beside the undecided "keeps" rule (a hostile reading: in means every precise-key point
    of SmolLM2 is dominated by a full-SFT point, and no page said so): a precise point with less math gain and no
    better general change than a full-SFT point is named with it — with the dominating point that also has less
    text loss where one has (not merely the one with most math gain), and said so where none has; a point with
    more math gain is not named; an arm whose every point collapsed says so; it says it decides nothing."""
    full = [_pt("full", 1e-4, 0.9, 0.0, loss=0.5), _pt("full", 3e-5, 0.6, 0.01, loss=0.01)]
    key = [_pt("precise-key", 1e-3, 0.5, 0.0, loss=0.05), _pt("precise-key", 3e-3, 0.95, -0.1, loss=0.1),
           _pt("precise-key", 9e-3, 0.7, -0.02, loss=0.005)]
    line = views.dominated_line(_curves(*full, *key, _pt("precise-share", 1e-3, 0.1, -0.5, collapsed=True)))
    assert "a full-SFT point dominates 2 of precise-key's 3 points read: 1e-03 (+50.0, +0.0) by full 3e-05 (+60.0, " \
           "+1.0) and on text loss; 9e-03 (+70.0, -2.0) by full 1e-04 (+90.0, +0.0), though no dominating full point " \
           "has less text loss — none of precise-share's points (every point read collapsed" in line
    assert "3e-03" not in line and "decides nothing" in line and "(points)" in line


def test_the_dominated_line_is_absent_where_it_has_nothing_to_compare_or_the_math_is_ruled_out():
    """Protects the line's edges: no full-SFT point, no precise point, or a model whose scope rules the math rules
    out (the toy: every rule reads not testable) give no line, never a sentence with an empty list; a suite without
    a text loss gets no text-loss clause."""
    key, full = _pt("precise-key", 1e-3, 0.5, 0.0), _pt("full", 1e-4, 0.9, 0.0)
    assert views.dominated_line(_curves(key)) is None and views.dominated_line(_curves(full)) is None
    assert views.dominated_line(_curves(full, key, scope=(False, "not testable: full SFT does not learn"))) is None
    line = views.dominated_line(_curves(full, key, suite="toy"))
    assert "1e-03 (+50.0, +0.0) by full 1e-04 (+90.0, +0.0) —" not in line and "text loss" not in line
    assert "1e-03 (+50.0, +0.0) by full 1e-04 (+90.0, +0.0)." in line
