"""Precision and recall of a method's heads against the planted ones, with 95% intervals over problem clusters.

A method's *found set* depends on the problems it ran on. :func:`score_finder` scores the set it finds on every prompt
(:func:`arithmech.embedded.planted_truth.score_heads`), then resamples the problem clusters (an operation and an
unordered operand pair) with replacement (:func:`arithmech.core.stats.bootstrap_counts`), gives each drawn copy of a
cluster its own label (:func:`resample`), reruns the method's rule on those prompts and scores that set again; the
interval is the 2.5th and 97.5th percentiles of the resampled precision and recall.

A method is a :data:`Finder`: ``(rows, cluster labels) -> heads``. :func:`below` and :func:`share_below` are identify's
two key-head rules on per-prompt values (the paper's ``effect_hi < threshold``; the share's ``share_hi <
share_threshold``), with the same intervals identify computes, so on every prompt they name identify's key heads::

    >>> find = below(relative_effects, -0.05, n_boot=1000, seed=0)      # (n, L, H) per-prompt effects
    >>> score_finder(find, clusters, MOVERS, n_resamples=200, seed=0)["recall"]
    {'k': 3, 'n': 3, 'value': 1.0, 'lo': 1.0, 'hi': 1.0}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from arithmech.core.stats import bootstrap_counts, bootstrap_mean_intervals, bootstrap_ratio_intervals
from arithmech.embedded import planted_truth

LEVEL = 0.95
Head = tuple[int, int]
Finder = Callable[[list[int], list], set]  # (rows, cluster labels) -> the heads a rule finds on those prompts


def below(x: torch.Tensor, threshold: float, n_boot: int, seed: int) -> Finder:
    """The paper's rule on per-prompt values ``x`` ``(n, L, H)``: the heads whose mean's whole 95% interval lies below
    ``threshold`` (:func:`arithmech.methods.effects.key_heads`' ``effect_hi < threshold``, the same interval)."""

    def find(rows: list[int], labels: list) -> set:
        _, hi = bootstrap_mean_intervals(x[rows], n_boot, LEVEL, seed, labels)
        return {(int(l), int(h)) for l, h in (hi < threshold).nonzero().tolist()}

    return find


def share_below(num: torch.Tensor, den: torch.Tensor, threshold: float, n_boot: int, seed: int) -> Finder:
    """The share rule (:func:`arithmech.methods.effects.key_heads_by_share`): the whole 95% interval of
    ``mean(num) / mean(den)`` below ``threshold``; ``num`` ``(n, L, H)``, ``den`` ``(n,)``."""

    def find(rows: list[int], labels: list) -> set:
        _, hi = bootstrap_ratio_intervals(num[rows], den[rows], n_boot, LEVEL, seed, labels)
        return {(int(l), int(h)) for l, h in (hi < threshold).nonzero().tolist()}

    return find


def resample(counts: Sequence[int], clusters: Sequence) -> tuple[list[int], list]:
    """The prompts of one cluster resample (``counts``: how often each prompt's cluster was drawn, one row of
    :func:`~arithmech.core.stats.bootstrap_counts`) and their labels: the ``j``-th drawn copy of cluster ``c`` is
    ``(c, j)``, so a rule's own interval resamples the copies as distinct problems."""
    rows, labels = [], []
    for i, k in enumerate(counts):
        for j in range(int(k)):
            rows.append(i)
            labels.append((clusters[i], j))
    return rows, labels


def quantiles(values: Sequence[float]) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles (linear interpolation, as the package's bootstrap intervals)."""
    q = torch.quantile(
        torch.tensor(values, dtype=torch.float64), torch.tensor([(1 - LEVEL) / 2, (1 + LEVEL) / 2], dtype=torch.float64)
    )
    return float(q[0]), float(q[1])


def score_finder(find: Finder, clusters: Sequence, truth: Sequence[Head], n_resamples: int, seed: int) -> dict:
    """A method's found set on every prompt, scored against ``truth``
    (:func:`~arithmech.embedded.planted_truth.score_heads`), with 95% intervals of precision and recall over
    ``n_resamples`` cluster resamples (module docstring) and how often each head was found. A resample whose set is
    empty has no precision: ``precision.empty_resamples`` counts them and the interval is over the others (``None``
    where every one is empty)."""
    n = len(clusters)
    found = find(list(range(n)), list(clusters))
    point = planted_truth.score_heads(found, truth)
    counts = bootstrap_counts(n, n_resamples, seed, list(clusters)).long().tolist()
    prec: list[float] = []
    rec: list[float] = []
    times: dict[tuple[int, int], int] = {}
    for row in counts:
        s = find(*resample(row, clusters))
        sc = planted_truth.score_heads(s, truth)
        rec.append(sc["recall"]["value"])
        if sc["precision"]["value"] is not None:
            prec.append(sc["precision"]["value"])
        for h in s:
            times[h] = times.get(h, 0) + 1
    part = lambda p, vals: (
        {k: p[k] for k in ("k", "n", "value")} | dict(zip(("lo", "hi"), quantiles(vals) if vals else (None, None)))
    )
    return {
        "clusters": len(set(clusters)),
        "n": n,
        "found": sorted(found),
        "recall": part(point["recall"], rec),
        "precision": part(point["precision"], prec) | {"empty_resamples": n_resamples - len(prec)},
        "false_positives": point["false_positives"],
        "missed": point["missed"],
        "found_share": {f"{l}.{h}": round(k / n_resamples, 4) for (l, h), k in sorted(times.items())},
    }
