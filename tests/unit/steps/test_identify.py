"""Unit tests of ``arithmech/steps/identify.py``."""
from __future__ import annotations


def test_public_names_stay_importable_from_identify():
    """Protects the book's and the packages' imports: effects_frame, ranking and key_heads moved to
    methods/effects.py and are the same objects under arithmech.steps.identify."""
    from arithmech.methods import effects
    from arithmech.steps import identify
    assert identify.effects_frame is effects.effects_frame and identify.ranking is effects.ranking
    assert identify.key_heads is effects.key_heads


def test_task_control_fails_a_guessable_task_and_leaves_it_out_of_the_pool():
    """Protects the per-task control (steps.config.CONTROL_FLOOR = 0.5, on the conditioned floor): products
    whose carried tens digit and operand pin the last digit fail it (conditioned floor 4/4), sums spread over
    four last digits pass (0/4); the failed task is named with its floor, left out of the pool, and both floors
    are recorded; where every task fails, "all" pools them all and is itself marked failed."""
    from arithmech.data.pairs import Sample
    from arithmech.steps.config import CONTROL_FLOOR
    from arithmech.steps.identify import task_control
    mk = lambda op, a, b, c: Sample("p", "q", str(c)[-1], str(c), a, b, op, "t", "equation", carried=str(c)[:-1])
    mul = [mk("multiplication", 8, 7, 56)] * 3 + [mk("multiplication", 7, 8, 56)]
    add = [mk("addition", 1, 2, 3), mk("addition", 2, 2, 4), mk("addition", 1, 4, 5), mk("addition", 3, 3, 6)]
    c = task_control({"addition": add, "multiplication": mul})
    assert CONTROL_FLOOR == 0.5 and c["pooled"] == ["addition"] and list(c["failed"]) == ["multiplication"]
    assert "4/4 = 100%" in c["failed"]["multiplication"]
    assert c["floors"]["multiplication"] == {"majority": 1.0, "conditioned": 1.0, "by": "op, carried", "n": 4}
    assert c["floors"]["addition"]["conditioned"] == 0.0 and c["floors"]["addition"]["majority"] == 0.25
    every = task_control({"m1": mul, "m2": mul})
    assert every["pooled"] == ["m1", "m2"] and set(every["failed"]) == {"m1", "m2", "all"}
    assert task_control({"addition": add})["failed"] == {}
