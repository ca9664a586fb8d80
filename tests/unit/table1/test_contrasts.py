"""The confirmation's statistics (arithmech.table1.contrasts): the readings at their bounds, the stratified paired
interval against a literal computation, its coverage at the seeds the protocol runs, and the detectable difference."""

from __future__ import annotations

import math

import pytest

from arithmech.core.stats import t_quantile
from arithmech.table1 import contrasts


@pytest.mark.parametrize(
    ("lo", "hi", "loss", "word"),
    [
        (0.1, 3, False, "a better"),
        (-3, -0.1, False, "b better"),
        (-4, 4.9, False, "within the margin"),
        (-6, 2, False, "inconclusive"),
        (0.12, 0.2, True, "b better"),  # a loss higher for a: b is better
        (-0.2, -0.1, True, "a better"),
    ],
)
def test_direction_reads_each_side_of_zero_and_the_margin(lo, hi, loss, word):
    """Protects the two-sided reading: each side of 0, inside the margin, neither; a loss read lower-is-better."""
    assert contrasts.direction(lo, hi, 0.05 if loss else 5.0, lower_is_better=loss) == word


@pytest.mark.parametrize(
    ("kind", "lo", "hi", "word"),
    [
        ("better", 0.5, 9, "holds"),
        ("better", -3, 4, "does not hold"),  # any advantage below the margin
        ("better", -12, -2, "does not hold"),  # reversed: the control ahead
        ("better", -1, 8, "inconclusive"),
        ("not-worse", -4.9, 3, "holds"),
        ("not-worse", -30, -6, "does not hold"),
        ("not-worse", -8, 1, "inconclusive"),
        ("not-worse-lower", -0.2, 0.04, "holds"),
        ("not-worse-lower", 0.06, 0.3, "does not hold"),
        ("not-worse-lower", 0.0, 0.2, "inconclusive"),
    ],
)
def test_the_papers_claim_reads_its_bound(kind, lo, hi, word):
    """Protects each claim kind's bounds (better, not-worse, a loss's not-worse), reversal included."""
    margin = 0.05 if kind == "not-worse-lower" else 5.0
    assert contrasts.claim(kind, lo, hi, margin) == word


def test_the_paired_stratified_interval_equals_a_literal_computation():
    """Protects the paired, stratified interval: equal to the formula computed by hand on a small matrix (the run term
    over the per-seed differences, the item term within strata), and a refusal of unpaired arms."""
    a = [[1, 0, 1, 1, 0, 1], [1, 1, 1, 0, 0, 1], [0, 0, 1, 1, 0, 1]]
    b = [[0, 0, 1, 0, 0, 1], [1, 0, 0, 0, 0, 1], [0, 1, 0, 0, 1, 1]]
    strata = ["p", "p", "p", "q", "q", "q"]
    d, lo, hi = contrasts.interval(a, b, strata, family=4)
    per_seed = [sum(x) / 6 - sum(y) / 6 for x, y in zip(a, b)]
    y = [sum(c) / 3 - sum(e) / 3 for c, e in zip(zip(*a), zip(*b))]
    var = lambda x: sum((v - sum(x) / len(x)) ** 2 for v in x) / (len(x) - 1)
    item = (3 * var(y[:3]) + 3 * var(y[3:])) / 36
    q = 1 - 0.05 / 4 / 2
    half = math.sqrt(t_quantile(q, 2) ** 2 * var(per_seed) / 3 + t_quantile(q, 4) ** 2 * item)
    assert d == pytest.approx(sum(per_seed) / 3)
    assert (lo, hi) == pytest.approx((d - half, d + half))
    with pytest.raises(ValueError, match="same seeds"):
        contrasts.interval(a, b[:2], strata, family=4)


def test_a_phrasing_gap_is_not_item_noise():
    """Protects the phrasing strata: where a's advantage is 20 points in one phrasing and none in the other, that gap
    is a fixed part of the estimand, not item noise: the stratified interval is narrower than the unstratified one."""
    a = [[0.5 + 0.01 * (i % 3) + 0.01 * r for i in range(100)] for r in range(3)]
    b = [[x - (0.2 if i < 50 else 0.0) + 0.02 * (i % 5) for i, x in enumerate(row)] for row in a]
    strata = ["p"] * 50 + ["q"] * 50
    plain = contrasts.interval(a, b, None, 1)
    split = contrasts.interval(a, b, strata, 1)
    assert split[0] == pytest.approx(plain[0]) and split[2] - split[1] < 0.5 * (plain[2] - plain[1])


def _misses(sims: int, inter_sd: float, keep: str = "both", seed: int = 0) -> int:
    """Misses of the true difference by the family-level interval over ``sims`` fresh designs: 8 seeds a side,
    280 fresh items drawn from a population per design (an item x arm interaction, so which items are drawn moves the
    difference), a seed effect shared by both arms at a seed (pairing) plus one of each arm's own, and noise.
    ``keep``: ``"both"`` terms, or only the ``"run"`` or the ``"item"`` term (the negative controls)."""
    import numpy as np

    from arithmech.core import stats

    rng = np.random.default_rng(seed)
    n, items, true_d, family = 8, 280, 0.05, 8
    misses = 0
    for _ in range(sims):
        inter = rng.normal(0, inter_sd, items)  # a's advantage varies by item: the items are a sample
        shared = rng.normal(0, 0.05, (n, 1))
        a = true_d + inter / 2 + shared + rng.normal(0, 0.04, (n, 1)) + rng.normal(0, 0.3, (n, items))
        b = -inter / 2 + shared + rng.normal(0, 0.04, (n, 1)) + rng.normal(0, 0.3, (n, items))
        if keep == "both":
            _, lo, hi = contrasts.interval(a.tolist(), b.tolist(), None, family)
        else:
            d = a.mean() - b.mean()
            run = ((a.mean(1) - b.mean(1)).var(ddof=1) / n, n - 1)
            item = ((a.mean(0) - b.mean(0)).var(ddof=1) / items, items - 1)
            half = stats.studentized_half_width([run if keep == "run" else item], contrasts.level(family))
            lo, hi = d - half, d + half
        misses += not lo <= true_d <= hi
    return misses


def test_the_interval_covers_at_the_protocols_seeds_and_level():
    """Protects the interval's coverage at the protocol's design (8 seeds a side, 280 fresh items, its family of 8,
    level 1 − 0.05/8) where items are a sample: it misses the true difference no more often than its level allows
    (0.625 %: at most 10 of 800 designs, the expected count being at most 5) whether the items or the seeds carry
    most of the error, while the run term alone (items matter) or the item term alone (seeds matter) misses several
    times as often (the test can fail)."""
    assert _misses(800, 0.8) <= 10 and _misses(800, 0.3, seed=3) <= 10
    assert _misses(800, 0.8, "run", seed=1) > 40
    assert _misses(800, 0.3, "item", seed=2) > 20


def test_detectable_shrinks_with_seeds_and_is_the_interval_plus_the_power_quantile():
    """Protects the power calculation: the literal formula, and fewer detectable points at more seeds."""
    s = contrasts.Spread(run_var_a=4.0, run_var_b=16.0, item_var=0.0, n_items=400)
    d3, d8 = contrasts.detectable(s, 3, 3, 10), contrasts.detectable(s, 8, 8, 10)
    assert d8 < d3
    q = 1 - 0.05 / 10 / 2
    want = math.sqrt(
        (t_quantile(q, 7) + t_quantile(0.8, 7)) ** 2 * 4.0 / 8 + (t_quantile(q, 7) + t_quantile(0.8, 7)) ** 2 * 16.0 / 8
    )
    assert d8 == pytest.approx(want)
