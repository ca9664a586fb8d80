"""Unit tests of ``arithmech/report/views/table1_controls.py``: the scope gate, the format control and the tuned
parameters as the pages print them."""
from __future__ import annotations

import json

from arithmech.core.stats import wilson_interval
from arithmech.report.views import table1_controls as T


def _scoped(tmp_path, *curve, steps=None):
    """A full-SFT grid at 90, 80 and 86 of 200 validation items (45, 40, 43 %), and a learning curve whose points
    after step 0 (at steps 240, 480, ...) score ``curve``; ``steps``: the grid runs' budget, where the plan says."""
    from tests.unit.claims.synthetic import write
    tmp_path.mkdir(parents=True, exist_ok=True)
    f = write(tmp_path, {"full": {1e-4: [(0.45, 0.45, 0.0), (0.40, 0.40, 0.0), (0.43, 0.43, 0.0)]}})
    plan = json.loads((f / "finetune" / "table1.json").read_text())
    budget = {} if steps is None else {"steps": steps}
    (f / "finetune" / "table1.json").write_text(json.dumps({**plan, "sizes": {"carry_val": 200}, **budget}))
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


def test_the_scope_line_says_when_the_gate_is_met_past_the_grid_runs_budget(tmp_path):
    """Protects the account of where the gate is met (a hostile reading: SmolLM2 meets it only at its learning
    curve's last point, step 240, while every grid run trains 220 steps, the knee; the page did not say): a best
    score reached past the grid's steps says so, with the curve's score at the grid's budget; one within it says
    nothing more."""
    past = _scoped(tmp_path / "a", 0.46, 0.505, steps=240)
    assert "reached by the learning curve at step 480 (rate 1e-04) — past the 240 steps each grid run trains; no " \
           "grid run is trained as long (the curve's best within them: 46.0%, below the gate); over full SFT's grid " \
           "runs" in past
    within = _scoped(tmp_path / "b", 0.505, 0.46, steps=240)
    assert "reached by the learning curve at step 240 (rate 1e-04); over" in within and "past the" not in within


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


def _pt(arm, lr, math, general, loss=None, collapsed=False):
    """A grid point of 3 runs, each at ``math`` gain, ``general`` change and ``loss`` change from base."""
    from arithmech.claims.frontier import Point
    return Point(arm, lr, tags=[f"{arm}-s{s}-lr{lr:.0e}" for s in range(3)], math={"carry": [math] * 3},
                 general=[general] * 3, loss=[] if loss is None else [loss] * 3, collapsed=[collapsed] * 3)


def _curves(*points, suite="cpu", scope=(True, "")):
    from arithmech.claims.frontier import Curves
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
    line = T.dominated_line(_curves(*full, *key, _pt("precise-share", 1e-3, 0.1, -0.5, collapsed=True)))
    assert "a full-SFT point dominates 2 of precise-key's 3 points read: 1e-03 (+50.0, +0.0) by full 3e-05 (+60.0, " \
           "+1.0) and on text loss; 9e-03 (+70.0, -2.0) by full 1e-04 (+90.0, +0.0), though no dominating full point " \
           "has less text loss — none of precise-share's points (every point read collapsed" in line
    assert "3e-03" not in line and "decides nothing" in line and "(points)" in line


def test_the_dominated_line_is_absent_where_it_has_nothing_to_compare_or_the_math_is_ruled_out():
    """Protects the line's edges: no full-SFT point, no precise point, or a model whose scope rules the math rules
    out (the toy: every rule reads not testable) give no line, never a sentence with an empty list; a suite without
    a text loss gets no text-loss clause."""
    key, full = _pt("precise-key", 1e-3, 0.5, 0.0), _pt("full", 1e-4, 0.9, 0.0)
    assert T.dominated_line(_curves(key)) is None and T.dominated_line(_curves(full)) is None
    assert T.dominated_line(_curves(full, key, scope=(False, "not testable: full SFT does not learn"))) is None
    line = T.dominated_line(_curves(full, key, suite="toy"))
    assert "1e-03 (+50.0, +0.0) by full 1e-04 (+90.0, +0.0) —" not in line and "text loss" not in line
    assert "1e-03 (+50.0, +0.0) by full 1e-04 (+90.0, +0.0)." in line
