"""The step budget of a Table 1 run (arithmech.table1.train): the knee of full SFT's learning curve."""
from __future__ import annotations

from arithmech.table1.train import knee


def test_knee_rule_on_a_known_curve():
    """Protects: the step budget's rule, written before the run — the fewest steps reaching base + 0.9 x
    (best - base); a flat curve takes its first checkpoint after 0, never step 0 (the base model)."""
    pts = [{"step": s, "val_math": v} for s, v in ((0, 0.0), (20, 0.3), (40, 0.6), (60, 0.68), (80, 0.7), (100, 0.69))]
    assert knee(pts) == 60                      # 0.68 >= 0.63; 0.6 < 0.63
    assert knee([{"step": 0, "val_math": 0.1}, {"step": 20, "val_math": 0.1}]) == 20


def _curve(scores: dict[int, int], n: int = 60) -> list[dict]:
    """Points whose ``k`` first of ``n`` validation clusters are right at each step (a curve that only ever gains)."""
    return [{"step": s, "val_items": [1] * k + [0] * (n - k)} for s, k in sorted(scores.items())]


def test_bend_rule_takes_the_first_doubling_that_gains_no_more_than_its_interval():
    """Protects the planted suite's step budget (BEND_RULE): the first s = 20 x 2^j above base whose gain to every
    later doubling has a paired interval reaching 0; a curve still rising at its last doubling gives no budget (None),
    so does one that never leaves base (an early flat stretch is not a bend), and a plateau followed by a second rise
    is not a bend."""
    from arithmech.table1.train import bend, doublings

    steps = (0, 20, 40, 80, 160, 320, 640)
    rising = _curve(dict(zip(steps, (5, 5, 10, 20, 30, 40, 50))))
    assert bend(rising) is None                              # every doubling gains 10 of 60 clusters: significant
    bent = _curve(dict(zip(steps, (5, 5, 10, 20, 30, 31, 31))))
    assert bend(bent) == 160                                 # 160 -> 320 gains 1 cluster: interval reaches 0
    assert [r["step"] for r in doublings(bent)] == [20, 40, 80, 160, 320]
    flat = _curve(dict(zip(steps, (5, 5, 5, 5, 5, 5, 5))))
    assert bend(flat) is None                                # never above base: no budget, not step 20
    late = _curve(dict(zip(steps, (5, 5, 5, 20, 21, 40, 41))))
    assert bend(late) == 320                                 # 80 -> 160 is flat, but 80 -> 320 gains 20


def test_curve_lr_is_an_exploration_curve_only():
    """Protects the arms' budget: it is read from the curve at the middle rate of full's grid, so a curve at another
    rate (--curve-lr) is refused unless --curve-only stops there; a rate of 0, below 0 or above 1 is refused; the
    command a curve records names its rate."""
    import pytest

    from arithmech.core.config import command_line
    from arithmech.steps.config_training import Table1

    with pytest.raises(ValueError, match="add --curve-only"):
        Table1(model_name="planted", suite="planted", curve_lr=1e-4)
    for bad in (0.0, -1e-4, 2.0):
        with pytest.raises(ValueError, match="--curve-lr"):
            Table1(model_name="planted", suite="planted", curve_lr=bad, curve_only=True)
    c = Table1(model_name="planted", suite="planted", top_k=3, curve_steps=1280, curve_only=True, curve_lr=3e-5)
    assert command_line("table1", c).endswith("--curve-only --curve-lr 3e-05")
