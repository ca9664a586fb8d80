"""Confidence intervals for small evaluations (a 135M model sits near chance on MMLU and CSQA).

* :func:`wilson_interval`: a proportion ``k / n`` (accuracy on ``n`` items);
* :func:`paired_bootstrap`: the mean of a paired difference (the same items scored before and after
  fine-tuning), percentile bootstrap over items;
* :func:`mean_interval`: mean ± z standard errors (per-chunk language-model losses).
"""
from __future__ import annotations

import math
from typing import Sequence

import torch


def wilson_interval(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion ``k / n`` (95% for the default ``z``).

    Unlike the normal approximation it stays inside [0, 1] and is sensible at ``k = 0`` or ``k = n``,
    which matters for a small model near chance or near zero on a benchmark.
    """
    if n <= 0:
        raise ValueError(f"wilson_interval: n={n}, need at least one trial")
    if not 0 <= k <= n:
        raise ValueError(f"wilson_interval: k={k} must lie in 0..n={n}")
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if k == 0 else lo), (1.0 if k == n else hi)      # exact at the ends


def paired_bootstrap(before: Sequence[float], after: Sequence[float], n_boot: int = 2000, level: float = 0.95,
                     seed: int = 0) -> tuple[float, float, float]:
    """``(mean(after - before), lo, hi)``: percentile bootstrap over items of a paired difference.

    Both lists score the same items in the same order (0/1 correctness or per-item losses), so the
    resampling keeps each item's pair together; the interval is that of the mean difference.
    """
    a, b = torch.tensor(before, dtype=torch.float64), torch.tensor(after, dtype=torch.float64)
    if a.shape != b.shape or a.numel() == 0:
        raise ValueError("paired_bootstrap needs two non-empty lists scoring the same items")
    d = b - a
    g = torch.Generator().manual_seed(seed)
    means = d[torch.randint(0, len(d), (n_boot, len(d)), generator=g)].mean(1)
    q = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)
    lo, hi = torch.quantile(means, q).tolist()
    return float(d.mean()), lo, hi


def mean_interval(x: Sequence[float], z: float = 1.959964) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: mean ± ``z`` standard errors (sample standard deviation / √n)."""
    n = len(x)
    if n < 2:
        raise ValueError(f"mean_interval needs at least two values, got {n}")
    m = sum(x) / n
    half = z * math.sqrt(sum((v - m) ** 2 for v in x) / (n - 1) / n)
    return m, m - half, m + half

