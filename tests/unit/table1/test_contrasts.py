"""The confirmation's statistics (arithmech.table1.contrasts): the readings at their bounds, the stratified paired
interval against a literal computation, its coverage at the seeds the protocol runs, and the detectable difference."""

from __future__ import annotations

import math
import random

import pytest

from arithmech.core.stats import t_quantile
from arithmech.table1 import contrasts


@pytest.mark.parametrize(
    ("lo", "hi", "word"),
    [(0.1, 3, "a ahead"), (-3, -0.1, "b ahead"), (-4, 4.9, "within the margin"), (-6, 2, "inconclusive")],
)
def test_direction_reads_each_side_of_zero_and_the_margin(lo, hi, word):
    """Protects the two-sided reading: each side of 0, inside the margin, and neither."""
    assert contrasts.direction(lo, hi, 5.0) == word


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


def test_the_stratified_interval_equals_a_literal_computation():
    """Protects the paired, stratified interval: equal to the formula computed by hand on a small matrix."""
    a = [[1, 0, 1, 1, 0, 1], [1, 1, 1, 0, 0, 1], [0, 0, 1, 1, 0, 1]]
    b = [[0, 0, 1, 0, 0, 1], [1, 0, 0, 0, 0, 1]]
    strata = ["p", "p", "p", "q", "q", "q"]
    d, lo, hi = contrasts.interval(a, b, strata, family=4)
    ma, mb = [sum(r) / 6 for r in a], [sum(r) / 6 for r in b]
    y = [sum(c) / 3 - sum(e) / 2 for c, e in zip(zip(*a), zip(*b))]
    var = lambda x: sum((v - sum(x) / len(x)) ** 2 for v in x) / (len(x) - 1)
    item = (3 * var(y[:3]) + 3 * var(y[3:])) / 36
    q = 1 - 0.05 / 4 / 2
    half = math.sqrt(
        t_quantile(q, 2) ** 2 * var(ma) / 3 + t_quantile(q, 1) ** 2 * var(mb) / 2 + t_quantile(q, 4) ** 2 * item
    )
    assert d == pytest.approx(sum(ma) / 3 - sum(mb) / 2)
    assert (lo, hi) == pytest.approx((d - half, d + half))


def test_a_phrasing_gap_is_not_item_noise():
    """Protects the phrasing strata: a gap shared by both arms does not widen the interval. Two phrasings that differ by 40 points in both arms: stratified, the item term drops that gap."""
    a = [[1.0 if i < 50 else 0.6 for i in range(100)], [0.9 if i < 50 else 0.5 for i in range(100)]]
    a = [[x + 0.01 * (i % 3) for i, x in enumerate(r)] for r in a]
    b = [[x - 0.1 for x in r] for r in a]
    strata = ["p"] * 50 + ["q"] * 50
    plain = contrasts.interval(a, b, None, 1)
    split = contrasts.interval(a, b, strata, 1)
    assert split[2] - split[1] <= plain[2] - plain[1] + 1e-12


def _simulate(rng: random.Random, n: int, true_d: float) -> tuple[list, list, list, float]:
    """Binary items in two phrasings: an item difficulty, a seed effect per run, a phrasing x arm interaction."""
    items = 200
    strata = ["p" if i < items // 2 else "q" for i in range(items)]
    diff = [rng.gauss(0, 1.0) for _ in range(items)]
    inter = {"p": 0.15, "q": -0.15}

    def arm(shift: float, sign: int) -> list[list[float]]:
        runs = []
        for _ in range(n):
            seed = rng.gauss(0, 0.15)
            runs.append(
                [
                    float(rng.random() < 1 / (1 + math.exp(-(shift + seed + diff[i] + sign * inter[strata[i]]))))
                    for i in range(items)
                ]
            )
        return runs

    a, b = arm(true_d, 1), arm(0.0, -1)
    return a, b, strata, 0.0


def test_the_interval_covers_at_the_protocols_seeds():
    """Protects the interval's coverage at the protocol's 8 seeds a side and a family level (a halved interval fails it). At 8 seeds a side (the protocol's n) and the family's level, the interval covers the expected difference
    over fresh seeds on these items (computed by a large reference simulation) at least as often as its level."""
    rng = random.Random(0)
    # the estimand: the expected difference on the fixed items, over seeds; its value by a long run of seeds
    n, family, sims = 8, 2, 300
    covered = 0
    truth_runs = 400
    a_ref, b_ref, strata, _ = _simulate(random.Random(1), truth_runs, 0.3)
    for _ in range(sims):
        sub = random.Random(rng.random())
        ia = [sub.randrange(truth_runs) for _ in range(n)]
        ib = [sub.randrange(truth_runs) for _ in range(n)]
        a, b = [a_ref[i] for i in ia], [b_ref[i] for i in ib]
        _, lo, hi = contrasts.interval(a, b, strata, family)
        truth = sum(map(sum, a_ref)) / (truth_runs * 200) - sum(map(sum, b_ref)) / (truth_runs * 200)
        covered += lo <= truth <= hi
    assert covered / sims >= 1 - 0.05 / family - 0.02


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
