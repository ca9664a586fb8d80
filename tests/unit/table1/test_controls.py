"""Unit tests of ``arithmech/table1/controls.py``: the scope gate, the format control and the tuned
parameters as the pages print them."""
from __future__ import annotations

import json

from arithmech.core.stats import wilson_interval
from arithmech.table1 import controls as T
from arithmech.table1.frontier import curves_of
from arithmech.table1.result import Table1Result


def _scoped(tmp_path, *vals):
    """A full-SFT grid at one rate, its 3 runs at validation (and test) math accuracies ``vals``; base at 0 %."""
    from tests.unit.table1.synthetic import write
    tmp_path.mkdir(parents=True, exist_ok=True)
    f = write(tmp_path, {"full": {1e-4: [(v, v, 0.0) for v in vals]}})
    return T.scope_line(Table1Result.load(f))


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
    line = T.shots_line(Table1Result.load(f))
    lo, hi = wilson_interval(30, 400)
    assert f"answers 30/400 = 7.5% [{lo:.1%}, {hi:.1%}] (addition 20/200, subtraction 10/200) of the carry" in line
    assert "the zero-shot base 0/400 = 0.0%" in line
    q, a = carry_items("train", 2, 0, seed=10_000)[0]
    assert f"the same 2 solved problems before every test item (`{q} {a}` | " in line


def test_no_shots_line_without_a_base_shots_record(tmp_path):
    """Protects a run made without the format control: no line (not a line about nothing)."""
    from tests.unit.table1.synthetic import write
    assert T.shots_line(Table1Result.load(write(tmp_path, {"full": {1e-4: [(0.5, 0.5, 0.0)] * 3}}))) is None


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
    assert T.tuned_line(Table1Result.load(f)) == ("Tuned parameters per run: precise-key 1,000; precise-random 900–1,100 (-10.0 % to "
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
