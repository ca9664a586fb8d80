"""Unit tests of ``arithmech/methods/mlp.py``."""
from __future__ import annotations

import numpy as np
import pytest

from arithmech.methods import mlp


def test_breakpoints_on_synthetic_curves():
    """Protects the App. C rule: knots of rise-fall and plateau-rise curves (32 layers, noise) are found."""
    rng = np.random.default_rng(0)
    x = np.arange(32)
    rise_fall = np.interp(x, [0, 13, 18, 28, 31], [0, 0, 0.3, 0.05, 0.05]) + rng.normal(0, 0.005, 32)
    assert mlp.breakpoints(rise_fall) == (13, 18, 28)
    plateau_rise = np.interp(x, [0, 13, 20, 28, 31], [0, 0, 0.05, 0.4, 0.4]) + rng.normal(0, 0.005, 32)
    assert mlp.breakpoints(plateau_rise) == (13, 20, 28)
    assert mlp.breakpoints(np.interp(np.arange(6), [0, 1, 3, 4, 5], [0, 0, 1, 0.2, 0.2])) == (1, 3, 4)
    with pytest.raises(ValueError, match="at least 5"):
        mlp.breakpoints([0, 1, 2, 3])


def test_ripple_carry_matches_fig17_and_adds():
    """Protects App. H: 3 + 4 gives the partial results 1, 3, 7 of Fig. 17; every 4-bit sum is exact."""
    assert mlp.ripple_carry(3, 4).partial.tolist() == [1, 3, 7]
    for a in range(16):
        for b in range(16):
            r = mlp.ripple_carry(a, b, bits=4)
            assert r.partial.iloc[-1] + (int(r.carry_out.iloc[-1]) << 4) == a + b
