"""Knockout curves (Fig. 3): accuracy as the top ``k`` components are knocked out, against random draws.

:func:`knockout_curve` knocks out the top ``k`` of a ranking for each ``k`` (:func:`default_ks` by default) and
``n_random`` seeded random orders of the components *outside* the key ones (:func:`random_orders`,
:func:`random_draw`), every accuracy with its count and Wilson interval (:func:`with_interval`). The ablated
forward passes themselves are :mod:`arithmech.methods.ablation.knockout`'s.

Beside accuracy, each row has the knockout on the **logit difference** (:func:`scored_rows`): ``ld``, the mean over
the prompts of ``logit({C}) − logit(X_c's answer)`` at END under the ablation (X_c's answer: the intact model's top-1
on the counterfactual prompt, :func:`~arithmech.methods.ablation.knockout.counter_answers`), and ``ld_lo``, ``ld_hi``,
its 95% cluster-robust t interval over problem clusters (:func:`arithmech.core.stats.cluster_mean_intervals`, the
clusters of :func:`arithmech.data.splits.resampling_units`: a problem's prompts count as one unit; prompts without
integer operands each their own). Accuracy on prompts chosen to be right moves only once the answer loses the top
rank; the logit difference moves with every ablation.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pandas as pd
import torch

from arithmech.core.stats import cluster_mean_intervals, wilson_interval
from arithmech.data.pairs import Sample
from arithmech.data.splits import resampling_units
from arithmech.methods.ablation.intervention import Forwards, MeanSource
from arithmech.methods.ablation.knockout import Ablation, counter_answers, scores
from arithmech.methods.ablation.settings import Curve


def with_interval(row: dict, k: int, n: int) -> dict:
    """``row`` with ``accuracy = k / n``, ``correct``, ``n`` and the Wilson 95% ``ci_low``, ``ci_high``."""
    lo, hi = wilson_interval(k, n)
    return {**row, "accuracy": k / n, "correct": k, "n": n, "ci_low": lo, "ci_high": hi}


LD = ("ld", "ld_lo", "ld_hi")  # knockout.csv's logit-difference columns (:func:`scored_rows`)


def scored_rows(
    model,
    tok,
    samples: Sequence[Sample],
    means: MeanSource,
    ablations: Sequence[Ablation],
    rows: list[dict],
    forwards: Forwards = Forwards(),
    other: torch.Tensor | None = None,
) -> pd.DataFrame:
    """One row per ablation (``rows[a]`` for ``ablations[a]``) with its accuracy (:func:`with_interval`) and its
    logit difference (module docstring: ``ld``, ``ld_lo``, ``ld_hi``), from one pass of ablated forwards; ``other``:
    the counterfactual answers it reads (:func:`~arithmech.methods.ablation.knockout.counter_answers` of ``samples``
    at ``forwards``, one more intact pass where not given)."""
    if not ablations:  # nothing to score: no forward at all
        return pd.DataFrame()
    other = counter_answers(model, tok, samples, means, forwards) if other is None else other
    hits, gaps = scores(model, tok, samples, means, ablations, other, forwards)
    lo, hi = cluster_mean_intervals(gaps.T, resampling_units(list(samples), "cluster"))
    n, ld = len(samples), gaps.mean(1)
    return pd.DataFrame(
        [
            {**with_interval(r, int(c), n), "ld": float(m), "ld_lo": float(a), "ld_hi": float(b)}
            for r, c, m, a, b in zip(rows, hits.sum(-1).tolist(), ld, lo, hi)
        ]
    )


def random_orders(universe: Sequence, exclude: Sequence, n_random: int, seed: int) -> list[list]:
    """``n_random`` seeded orders of the components of ``universe`` that are not in ``exclude``."""
    norm = lambda x: tuple(x) if isinstance(x, (list, tuple)) else x
    ex = {norm(x) for x in exclude}
    pool = [u for u in universe if norm(u) not in ex]
    out = []
    for s in range(n_random):
        perm = list(pool)
        random.Random(seed * 1000 + s).shuffle(perm)
        out.append(perm)
    return out


def random_draw(order: Sequence, k: int, avoid: Sequence = ()) -> list:
    """The first ``k`` components of a random ``order`` that are not in ``avoid`` (``[]`` when fewer remain than
    ``k``). A uniform random order filtered by ``avoid`` is a uniform order of what remains, so this is a uniform
    draw of ``k`` components outside ``avoid``; one order per seed makes the draws at successive ``k`` share
    their components (less noise between neighbouring points of the band)."""
    norm = lambda x: tuple(x) if isinstance(x, (list, tuple)) else x
    out = {norm(x) for x in avoid}
    kept = [c for c in order if norm(c) not in out]
    return kept[:k] if len(kept) >= k else []


def knockout_curve(
    model,
    tok,
    samples: Sequence[Sample],
    means: MeanSource,
    curve: Curve,
    n_random: int,
    seed: int,
    forwards: Forwards = Forwards(),
) -> pd.DataFrame:
    """Fig. 3: accuracy after knocking out the top-``k`` components by effect rank (each ``k`` in ``curve.ks``),
    and ``k`` random ones (each ``k`` in ``curve.random_ks``, default ``curve.ks``) drawn from ``curve.universe``
    minus ``curve.exclude`` (the key components: a random draw never holds one), ``n_random`` orders seeded by
    ``seed`` (:class:`~arithmech.methods.ablation.settings.Curve`); ``forwards``: :func:`knockout_topk`'s batching
    and positions.

    ``curve.exclude_top``: the draw at ``k`` also leaves out the top ``k`` by effect rank — the components the
    effect-rank point it is compared with knocks out — so it is "``k`` components outside the top ``k`` and the
    key ones" at every ``k``. A ``k`` for which fewer than ``k`` components remain outside them (about
    ``k`` > half the universe) gets no random row.

    Returns rows ``kind, order, seed, k, accuracy, correct, n, ci_low, ci_high, ld, ld_lo, ld_hi`` (``seed = -1`` for
    effect rank; Wilson 95% intervals over the ``n`` prompts; the logit difference of :func:`scored_rows`).
    """
    kind, ranking, ks, random_ks = curve.kind, curve.ranking, curve.ks, curve.random_ks
    make = (lambda c: Ablation.of(heads=c)) if kind == "head" else (lambda c: Ablation.of(mlps=c))
    abls, rows = [], []

    def add(order: str, s: int, k: int, comps: Sequence) -> None:
        abls.append(make(list(comps)))
        rows.append({"kind": kind, "order": order, "seed": s, "k": k})

    for k in ks:
        if k <= len(ranking):
            add("effect-rank", -1, k, ranking[:k])
    rand = random_orders(curve.universe, curve.exclude, n_random, seed)
    draws = {
        k: [random_draw(perm, k, ranking[:k] if curve.exclude_top else ()) for perm in rand]
        for k in (ks if random_ks is None else random_ks)
    }
    drawable = [k for k, ds in draws.items() if rand and all(len(d) == k for d in ds)]
    for s in range(len(rand)):  # seed-major, as knockout.csv has always been written
        for k in drawable:
            add("random-rank", s, k, draws[k][s])
    return scored_rows(model, tok, samples, means, abls, rows, forwards, curve.counter)


def default_ks(total: int) -> list[int]:
    """0, 1, …, 8, then roughly doubling steps up to ``total``."""
    ks = list(range(0, min(total, 8) + 1))
    k = 12
    while k < total:
        ks.append(k)
        k = int(k * 1.5)
    return sorted(set(ks + [total]))
