"""Unit tests of ``arithmech/methods/stages.py``: the batched knots against the one-curve fit, the answer- and
operand-specific curves against a literal subtraction, and the cluster bootstrap on constructed curves."""

from __future__ import annotations

import numpy as np

from arithmech.methods import stages
from arithmech.methods.mlp import MLP_QUANTITIES, breakpoints


def test_batched_knots_equal_the_one_curve_fit():
    """Protects the batched fit: on random, flat and piecewise-linear curves its knots are breakpoints' own."""
    rng = np.random.default_rng(0)
    L = 12
    x = np.arange(L)
    curves = [rng.normal(size=L) for _ in range(20)] + [np.zeros(L), np.maximum(x - 4, 0) - np.maximum(x - 8, 0)]
    got = stages.knots(np.stack(curves), chunk=7)
    assert [tuple(r) for r in got] == [breakpoints(c) for c in curves]


def test_specific_curves_subtract_their_baselines():
    """Protects the answer- and operand-specific curves: diff_C − diff_other and (in_A + in_B)/2 − in_other."""
    q = (*MLP_QUANTITIES, "in_other")
    x = np.random.default_rng(1).normal(size=(3, 6, len(q)))
    c = stages.specific_curves(x, q)
    i = {name: k for k, name in enumerate(q)}
    assert np.allclose(c["answer"], x[..., i["diff_C"]] - x[..., i["diff_other"]])
    assert np.allclose(c["operands"], (x[..., i["in_A"]] + x[..., i["in_B"]]) / 2 - x[..., i["in_other"]])


def test_the_bootstrap_finds_a_late_answer_and_widens_with_disagreeing_clusters():
    """Protects the intervals: operands with knots (2, 5, 8) and the answer with knots (12, 15, 18) in every cluster
    give an inflection difference whose interval lies above 0; clusters that disagree on the answer's layer widen it."""
    L, x = 24, np.arange(24)
    relu = lambda at: np.maximum(x - at, 0)
    ramp = lambda at: 0.1 * relu(at - 3) + 0.3 * relu(at) - 0.4 * relu(at + 3)
    rng = np.random.default_rng(2)
    n, clusters = 60, [i // 3 for i in range(60)]
    same = {"operands": np.stack([ramp(5) + rng.normal(0, 0.01, L) for _ in range(n)]),
            "answer": np.stack([ramp(15) + rng.normal(0, 0.01, L) for _ in range(n)])}
    r = stages.stage_intervals(same, clusters, n_boot=200, seed=0)
    assert r["clusters"] == 20 and r["difference"]["lo"] > 0 and r["difference"]["value"] >= 8
    mixed = {**same, "answer": np.stack([ramp(3 if c % 2 else 17) + rng.normal(0, 0.01, L) for c in clusters])}
    m = stages.stage_intervals(mixed, clusters, n_boot=200, seed=0)
    assert m["difference"]["hi"] - m["difference"]["lo"] > r["difference"]["hi"] - r["difference"]["lo"]
