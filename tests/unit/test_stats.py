"""The intervals of Table 1 (arithmech.core.stats): Wilson, paired bootstrap, normal-theory mean."""
from __future__ import annotations

import math
import random

import pytest
import torch

from arithmech.core.stats import mean_interval, paired_bootstrap, wilson_interval


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (37, 150), (1, 4)])
def test_wilson_bounds_solve_the_score_equation(k, n):
    """Protects: each Wilson bound p0 solves (p̂ − p0)² = z² p0 (1 − p0) / n (the interval's definition),
    the interval contains p̂ and stays inside [0, 1]."""
    z = 1.959964
    lo, hi = wilson_interval(k, n, z)
    p = k / n
    assert 0 <= lo <= p <= hi <= 1
    for b in (lo, hi):
        assert math.isclose((p - b) ** 2, z * z * b * (1 - b) / n, abs_tol=1e-12)
    with pytest.raises(ValueError, match="k=11 must lie in 0..n=10"):
        wilson_interval(11, 10)


def test_paired_bootstrap_matches_normal_theory():
    """Protects: the paired bootstrap interval of a mean difference matches mean ± 1.96·sd/√n on a large
    sample (within 10% of the half-width) and collapses to a point for a constant difference."""
    rng = random.Random(0)
    before = [rng.random() < 0.4 for _ in range(2000)]
    after = [b if rng.random() < 0.8 else not b for b in before]
    d, lo, hi = paired_bootstrap([float(x) for x in before], [float(x) for x in after], n_boot=4000)
    diffs = torch.tensor([float(a) - float(b) for a, b in zip(after, before)], dtype=torch.float64)
    half = 1.959964 * float(diffs.std()) / math.sqrt(len(diffs))
    assert math.isclose(d, float(diffs.mean()), abs_tol=1e-12)
    assert abs((hi - lo) / 2 - half) < 0.1 * half and lo < d < hi
    assert paired_bootstrap([0.0, 1.0, 0.0], [1.0, 2.0, 1.0])[1:] == (1.0, 1.0)


def test_mean_interval_is_normal_theory():
    """Protects: the loss interval is mean ± 1.96 · sd / √n with the sample standard deviation."""
    x = [2.0, 3.0, 4.0, 5.0]
    m, lo, hi = mean_interval(x)
    sd = math.sqrt(sum((v - 3.5) ** 2 for v in x) / 3)
    assert m == 3.5 and math.isclose(hi - m, 1.959964 * sd / 2) and math.isclose(m - lo, hi - m)
    with pytest.raises(ValueError, match="at least two"):
        mean_interval([1.0])
