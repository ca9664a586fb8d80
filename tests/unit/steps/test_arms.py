"""Table 1's arms (arithmech.steps.arms): random heads and the learning-rate rule."""

from __future__ import annotations


def test_random_heads_never_key_and_layer_matched():
    """Protects: the random-heads control: k distinct heads, never a key head, each drawn from its key
    head's layer while that layer has free heads, else from the nearest layer; seeded per draw."""
    from arithmech.steps.arms import random_heads
    all_heads = [(l, h) for l in range(6) for h in range(8)]
    tuned = [(0, 1), (0, 4), (0, 3), (0, 2), (1, 0), (3, 2), (0, 0), (2, 7)]       # the embedded model's top 8
    draws = [random_heads(tuned, all_heads, set(tuned), d) for d in range(3)]
    for r in draws:
        assert len(set(r)) == 8 and not set(r) & set(tuned)
        layers = sorted(l for l, _ in r)
        assert layers == [0, 0, 0, 1, 1, 1, 2, 3]        # layer 0 has 3 free heads: its other 2 go to layer 1
    assert draws[0] != draws[1] and random_heads(tuned, all_heads, set(tuned), 0) == draws[0]
    matched = random_heads([(2, 0), (4, 1)], all_heads, {(2, 0), (4, 1)}, 0)
    assert sorted(l for l, _ in matched) == [2, 4]


def test_learning_rate_rule_and_interior_extension():
    """Protects: the pre-stated selection rule (highest validation math accuracy; within 0.01 of it the
    lowest validation loss) and the grid extension until the chosen rate is interior."""
    from arithmech.steps.arms import choose, extension
    rows = [{"lr": 1e-3, "val_math": 0.30, "val_nll": 2.0}, {"lr": 3e-3, "val_math": 0.305, "val_nll": 1.5},
            {"lr": 1e-2, "val_math": 0.20, "val_nll": 1.0}]
    assert choose(rows) == 3e-3                                    # 0.30 is within 0.01 of 0.305 but has the higher loss
    rows[2]["val_math"] = 0.5
    assert choose(rows) == 1e-2
    assert extension([1e-3, 3e-3, 1e-2], 1e-2) == 3e-2 and extension([1e-3, 3e-3, 1e-2], 1e-3) == 3e-4
    assert extension([1e-3, 3e-3, 1e-2], 3e-3) is None and extension([0.1, 0.3, 0.9], 0.9) is None


def test_knee_rule_on_a_known_curve():
    """Protects: the step budget's rule, written before the run — the fewest steps reaching base + 0.9 x
    (best - base); a flat curve takes its first checkpoint after 0, never step 0 (the base model)."""
    from arithmech.steps.arms import knee
    pts = [{"step": s, "val_math": v} for s, v in ((0, 0.0), (20, 0.3), (40, 0.6), (60, 0.68), (80, 0.7), (100, 0.69))]
    assert knee(pts) == 60                      # 0.68 >= 0.63; 0.6 < 0.63
    assert knee([{"step": 0, "val_math": 0.1}, {"step": 20, "val_math": 0.1}]) == 20
