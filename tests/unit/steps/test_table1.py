"""Table 1's arms (arithmech.steps.table1): random heads and the learning-rate rule."""

from __future__ import annotations


def test_random_heads_never_key_and_layer_matched():
    """Protects: the random-heads control: k distinct heads, never a key head, each drawn from its key
    head's layer while that layer has free heads, else from the nearest layer; seeded per draw."""
    from arithmech.steps.table1 import random_heads
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
    from arithmech.steps.table1 import choose, extension
    rows = [{"lr": 1e-3, "val_math": 0.30, "val_nll": 2.0}, {"lr": 3e-3, "val_math": 0.305, "val_nll": 1.5},
            {"lr": 1e-2, "val_math": 0.20, "val_nll": 1.0}]
    assert choose(rows) == 3e-3                                    # 0.30 is within 0.01 of 0.305 but has the higher loss
    rows[2]["val_math"] = 0.5
    assert choose(rows) == 1e-2
    assert extension([1e-3, 3e-3, 1e-2], 1e-2) == 3e-2 and extension([1e-3, 3e-3, 1e-2], 1e-3) == 3e-4
    assert extension([1e-3, 3e-3, 1e-2], 3e-3) is None and extension([0.1, 0.3, 0.9], 0.9) is None
