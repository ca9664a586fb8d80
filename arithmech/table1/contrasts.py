"""A confirmatory contrast: its scores, its paired interval, what it can detect, and its two verdicts.

A contrast compares arm ``a`` (the paper's heads, in every contrast here) with arm ``b`` on one measure, as
``d = mean(a) − mean(b)`` in points of accuracy (nats for the text loss). Every run of both arms is scored on the
same test items, so the interval is :func:`arithmech.core.stats.crossed_interval`'s, paired over items (an item's
difficulty cancels) and crossed with the seeds (each arm's spread of run means, on its own t), with the items
stratified by test phrasing (or cloze set): the phrasings' gap is a fixed part of what is estimated, each phrasing at
its share of the items, and the per-phrasing estimates are shown beside. The level is Bonferroni's over the primary
family alone: ``1 − 0.05 / family``.

Each contrast is read twice, both rules fixed in the protocol before its runs:

* **direction** (two-sided): ``a ahead`` when the interval lies above 0, ``b ahead`` when below, ``within ±m``
  when it lies inside the margin, else ``inconclusive`` — "the control beats the paper's heads" is a result;
* **the paper's claim**, by its kind: ``better`` (the paper's heads beat the control: holds when the interval lies
  above 0, does not hold when below the margin ``m``), ``not-worse`` (within ``m`` of the other arm or above:
  holds when it lies above ``−m``, does not hold when below ``−m``), ``not-worse-lower`` (the same for a loss,
  lower is better: holds below ``+m``, does not hold above ``+m``).

:func:`detectable` is the power side: the smallest true difference the design finds with probability ``power``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from arithmech.core.stats import crossed_interval, sample_variance, t_quantile

FAMILY_ALPHA = 0.05
"""The primary family's error rate, split evenly over its tests (Bonferroni)."""

KINDS = ("better", "not-worse", "not-worse-lower")


def level(family: int) -> float:
    """The two-sided level of each interval in a family of ``family`` tests."""
    return 1 - FAMILY_ALPHA / family


def interval(a, b, strata: Sequence[str] | None, family: int) -> tuple[float, float, float]:
    """``(d, lo, hi)`` of ``mean(a) − mean(b)``: ``a``, ``b`` runs × items on the same items, ``strata`` their
    phrasings (module docstring)."""
    return crossed_interval(a, b, level(family), strata=strata)


def direction(lo: float, hi: float, margin: float) -> str:
    """The two-sided reading of an interval of ``a − b``."""
    if lo > 0:
        return "a ahead"
    if hi < 0:
        return "b ahead"
    if -margin < lo and hi < margin:
        return "within the margin"
    return "inconclusive"


def claim(kind: str, lo: float, hi: float, margin: float) -> str:
    """The paper's claim of ``kind`` (:data:`KINDS`) read from an interval of ``a − b``."""
    if kind == "better":
        return "holds" if lo > 0 else "does not hold" if hi < margin else "inconclusive"
    if kind == "not-worse":
        return "holds" if lo > -margin else "does not hold" if hi < -margin else "inconclusive"
    if kind == "not-worse-lower":
        return "holds" if hi < margin else "does not hold" if lo > margin else "inconclusive"
    raise ValueError(f"claim kind {kind!r}: one of {KINDS}")


@dataclass(frozen=True)
class Spread:
    """What a design's precision depends on, per contrast and measure: each arm's variance of run means and the
    (stratified) item variance of the per-item difference, with the number of items."""

    run_var_a: float
    run_var_b: float
    item_var: float
    n_items: int

    @classmethod
    def of(cls, a, b, strata: Sequence[str] | None = None) -> Spread:
        """The spreads measured on runs × items matrices ``a`` and ``b`` (each at least two runs)."""
        ma, mb = ([sum(r) / len(r) for r in x] for x in (a, b))
        y = [sum(ca) / len(a) - sum(cb) / len(b) for ca, cb in zip(zip(*a), zip(*b))]
        if strata is None:
            iv = sample_variance(y)
        else:
            groups: dict[str, list[float]] = {}
            for s, v in zip(strata, y):
                groups.setdefault(s, []).append(v)
            iv = sum(len(g) * sample_variance(g) for g in groups.values()) / len(y)
        return cls(sample_variance(ma), sample_variance(mb), iv, len(y))


def detectable(s: Spread, n_a: int, n_b: int, family: int, power: float = 0.8) -> float:
    """The smallest true difference from a bound that an interval at the family's level excludes with probability
    ``power``, at ``n_a`` and ``n_b`` runs: ``√Σ (t_df(1 − α/2) + t_df(power))² · v`` over the three terms
    (each arm's run variance over its runs, on ``n − 1`` df; the item variance over the items)."""
    q = 1 - (1 - level(family)) / 2
    terms = [(s.run_var_a / n_a, n_a - 1), (s.run_var_b / n_b, n_b - 1), (s.item_var / s.n_items, s.n_items - 1)]
    return math.sqrt(sum((t_quantile(q, df) + t_quantile(power, df)) ** 2 * v for v, df in terms if v))


def by_stratum(a, b, strata: Sequence[str]) -> dict[str, float]:
    """``mean(a) − mean(b)`` within each stratum (phrasing): shown beside the pooled interval."""
    out: dict[str, list[float]] = {}
    for i, s in enumerate(strata):
        out.setdefault(s, []).append(sum(r[i] for r in a) / len(a) - sum(r[i] for r in b) / len(b))
    return {s: sum(v) / len(v) for s, v in sorted(out.items())}
