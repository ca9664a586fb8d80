"""A confirmatory contrast: its scores, its paired interval, what it can detect, and its two verdicts.

A contrast compares arm ``a`` (the paper's heads, in every contrast here) with arm ``b`` on one measure, as
``d = mean(a) − mean(b)`` in points of accuracy (nats for the text loss). Every run of both arms is scored on the
same fresh test items and both arms train at the same seeds (the same data order), so the interval is paired twice:
over seeds (the run term is the spread of the per-seed difference, on ``n − 1`` degrees of freedom) and over items (an
item's difficulty cancels; the item term is the spread of the per-item difference within strata — test phrasing, or
cloze set — each weighted by its share, on ``I − S`` degrees of freedom), each term studentized by its own t and
added in quadrature (:func:`arithmech.core.stats.studentized_half_width`; conservative, the binomial residual
enters both terms). The phrasings' gap is a fixed part of what is estimated (two held-out phrasings at their realised
shares: a random phrasing term would rest on one degree of freedom), and the per-phrasing estimates are shown beside.
The level is Bonferroni's over the primary family alone: ``1 − 0.05 / family``.

Each contrast is read twice, both rules fixed in the protocol before its runs:

* **direction** (two-sided): ``a better`` when the interval lies above 0 (a loss: below), ``b better`` on the other
  side, ``within the margin`` when it lies inside ``±m``, else ``inconclusive`` — "the control beats the paper's
  heads" is a result;
* **the paper's claim**, by its kind: ``better`` (the paper's heads beat the control: holds when the interval lies
  above 0, read first; does not hold when below the margin ``m``), ``not-worse`` (within ``m`` of the other arm or
  above: holds when it lies above ``−m``, does not hold when below ``−m``), ``not-worse-lower`` (the same for a
  loss, lower is better: holds below ``+m``, does not hold above ``+m``).

:func:`detectable` is the power side: the smallest true difference the design finds with probability ``power``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from arithmech.core.stats import sample_variance, studentized_half_width, t_quantile

FAMILY_ALPHA = 0.05
"""The primary family's error rate, split evenly over its tests (Bonferroni)."""

KINDS = ("better", "not-worse", "not-worse-lower")


def level(family: int) -> float:
    """The two-sided level of each interval in a family of ``family`` tests."""
    return 1 - FAMILY_ALPHA / family


def interval(a, b, strata: Sequence[str] | None, family: int) -> tuple[float, float, float]:
    """``(d, lo, hi)`` of ``mean(a) − mean(b)``: ``a``, ``b`` runs × items on the same items, run ``s`` of each arm
    trained with the same seed (paired over seeds and items), ``strata`` the items' phrasings (module docstring)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"a paired interval needs the same seeds on both arms, two or more: {len(a)} and {len(b)}")
    n_items = len(a[0])
    per_seed = [sum(x) / n_items - sum(y) / n_items for x, y in zip(a, b)]
    d = sum(per_seed) / len(per_seed)
    y = [sum(ca) / len(a) - sum(cb) / len(b) for ca, cb in zip(zip(*a), zip(*b))]
    item_var, item_df = _item_term(y, strata)
    terms = [(sample_variance(per_seed) / len(per_seed), len(per_seed) - 1), (item_var / n_items, item_df)]
    half = studentized_half_width(terms, level(family))
    return d, d - half, d + half


def _item_term(y: Sequence[float], strata: Sequence[str] | None) -> tuple[float, int]:
    """The per-item variance of ``y`` (within strata, each weighted by its share) and its degrees of freedom."""
    if strata is None:
        return sample_variance(y), len(y) - 1
    if len(strata) != len(y):
        raise ValueError(f"{len(strata)} strata labels for {len(y)} items")
    groups: dict[str, list[float]] = {}
    for s, v in zip(strata, y):
        groups.setdefault(s, []).append(v)
    return sum(len(g) * sample_variance(g) for g in groups.values()) / len(y), len(y) - len(groups)


def direction(lo: float, hi: float, margin: float, lower_is_better: bool = False) -> str:
    """The two-sided reading of an interval of ``a − b`` (for a loss, lower is better)."""
    if lower_is_better:
        lo, hi = -hi, -lo
    if lo > 0:
        return "a better"
    if hi < 0:
        return "b better"
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
        return cls(sample_variance(ma), sample_variance(mb), _item_term(y, strata)[0], len(y))


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
