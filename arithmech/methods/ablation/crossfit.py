"""The knockout by cross-fitting: rank on two thirds of the problem clusters, knock out on the third left out.

Identify ranks its heads on the ranking side of a fixed split (:mod:`arithmech.data.splits`) and knocks them out on
the other side. With one-digit operands that side holds one cluster in three of 45 per operation (15): too few for a
verdict. Cross-fitting uses every ranking-side cluster for both, never the same one for both in one fold::

    effects_clusters.csv (each head's mean effect per problem cluster)
      ──► folds: the clusters dealt round-robin in the order of a seeded hash (fold_of; a cluster is the operation and
          the unordered operand pair, so a problem and its mirror share a fold)
      ──► fold f's ranking: each head's mean effect over the prompts of the clusters *outside* f (fold_ranking: the
          weighted mean Σ n_c·e_c / Σ n_c, which over every cluster is effects.csv's effect), most negative first,
          ties by (layer, head), as effects.csv ranks
      ──► on fold f's own X_r prompts only: nothing out, its top k out, ``n_random`` random draws of k heads outside
          its top k and the key heads, ``n_random`` layer-matched draws (plan, run)
      ──► rows per fold × ablation × held-out cluster (``correct``, ``n``, mean logit difference ``ld``)
      ──► pooled over the folds (draw s of every fold together), the top k's interval a percentile bootstrap over
          the pooled held-out clusters (pooled)
      ──► the top k against each kind of draw, paired by held-out cluster: the top k's reading minus the mean of the
          draws' on that cluster, pooled by prompts, its interval resampling the clusters within each fold, and
          each fold's own (paired: what the knockout rules decide with)

Every cluster is held out exactly once; the heads knocked out differ by fold (:attr:`CrossFit.tops` keeps each
fold's top k). The rules that read it: :mod:`arithmech.identify.knockout_claims`.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from arithmech.core.stats import bootstrap_counts, stratified_counts
from arithmech.methods.ablation.curves import random_draw, random_orders
from arithmech.methods.ablation.knockout import Ablation, counter_answers, scores
from arithmech.methods.ablation.run import layer_matched_draws

FOLDS = 3  # rank on two thirds, knock out on one
K, DRAWS = 8, 20  # heads each fold knocks out, draws of each kind per fold (the knockout rules' K, MIN_DRAWS)
N_BOOT = 1000  # resamples of the pooled held-out clusters (within each fold for the paired differences)
LEVEL = 0.95
COLUMNS = ["task", "fold", "order", "seed", "k", "cluster", "n", "correct", "ld", "heads"]
META = ("task", "cluster", "n")  # effects_clusters.csv's columns that are no head


def head_name(h: tuple[int, int]) -> str:
    """``(20, 8)`` → ``"20.8"`` (effects_clusters.csv's column names)."""
    return f"{h[0]}.{h[1]}"


def parse_head(name: str) -> tuple[int, int]:
    """``"20.8"`` → ``(20, 8)``."""
    layer, head = name.split(".")
    return int(layer), int(head)


def fold_of(labels: Sequence[str], folds: int = FOLDS, seed: int = 0) -> dict[str, int]:
    """Each distinct cluster label's fold: the labels sorted by ``crc32("crossfit:{seed}:{label}")`` (ties by the
    label) and dealt round-robin, so the folds' sizes differ by at most one."""
    order = sorted(dict.fromkeys(labels), key=lambda c: (zlib.crc32(f"crossfit:{seed}:{c}".encode()), c))
    return {c: i % folds for i, c in enumerate(order)}


def fold_ranking(clusters: pd.DataFrame, train: Sequence[str]) -> list[tuple[int, int]]:
    """Every head ``(layer, head)`` by its mean effect over the prompts of the ``train`` clusters (rows of
    ``clusters``, effects_clusters.csv's: ``Σ n_c·e_c / Σ n_c``), most negative first, ties by (layer, head)."""
    rows = clusters[clusters.cluster.isin(set(train))]
    if rows.empty:
        raise ValueError("no training cluster: nothing to rank on")
    names = [c for c in clusters.columns if c not in META]
    w = rows.n.to_numpy(dtype="float64")
    mean = w @ rows[names].to_numpy(dtype="float64") / w.sum()
    return [h for _, h in sorted(zip(mean.tolist(), map(parse_head, names)))]


@dataclass(frozen=True)
class Fold:
    """One fold: its held-out cluster labels, its top ``k`` (ranked without them), and the head sets drawn beside it
    (``random``: outside its top ``k`` and the key heads; ``matched``: as many heads per layer, outside the same)."""

    index: int
    held: tuple[str, ...]
    top: tuple[tuple[int, int], ...]
    random: tuple[tuple[tuple[int, int], ...], ...]
    matched: tuple[tuple[tuple[int, int], ...], ...]


def plan(clusters: pd.DataFrame, key: Sequence, k: int, n_random: int, seed: int, folds: int = FOLDS) -> list[Fold]:
    """The folds of :func:`fold_of` over ``clusters``' labels, each with its top ``k`` (:func:`fold_ranking` on the
    others) and its draws: the same ``n_random`` seeded random orders for every fold
    (:func:`~arithmech.methods.ablation.curves.random_orders` outside the ``key`` heads), each filtered by the fold's
    top ``k`` (:func:`~arithmech.methods.ablation.curves.random_draw`), and layer-matched draws
    (:func:`~arithmech.methods.ablation.run.layer_matched_draws`, seeded by ``seed`` and the fold's top ``k``)."""
    where = fold_of(clusters.cluster.tolist(), folds, seed)
    universe = [parse_head(c) for c in clusters.columns if c not in META]
    key = [tuple(h) for h in key]
    orders = random_orders(universe, key, n_random, seed)
    out = []
    for f in range(folds):
        held = tuple(c for c in clusters.cluster if where[c] == f)
        top = fold_ranking(clusters, [c for c in clusters.cluster if where[c] != f])[:k]
        rnd = [random_draw(o, k, top) for o in orders]
        out.append(
            Fold(
                f,
                held,
                tuple(top),
                tuple(tuple(d) for d in rnd if len(d) == k),
                tuple(tuple(d) for d in layer_matched_draws(top, universe, key, n_random, seed)),
            )
        )
    return out


def run(model, tok, samples, labels: Sequence[str], means, folds: Sequence[Fold], task: str, forwards) -> pd.DataFrame:
    """Each fold's ablations on its held-out prompts only (``samples[i]`` is held out where ``labels[i]`` is one of
    the fold's clusters), from one pass of ablated END forwards per fold
    (:func:`~arithmech.methods.ablation.knockout.scores`, the counterfactual answers of
    :func:`~arithmech.methods.ablation.knockout.counter_answers` computed once): :data:`COLUMNS` rows, one per fold ×
    ablation × held-out cluster (``ld`` the cluster's mean logit difference; ``heads`` the heads knocked out)."""
    other = counter_answers(model, tok, samples, means, forwards)
    rows = []
    for f in folds:
        held = set(f.held)
        idx = [i for i, c in enumerate(labels) if c in held]
        if not idx:
            continue
        named = [("nothing-out", -1, ())] + [("effect-rank", -1, f.top)]
        named += [("random-rank", s, d) for s, d in enumerate(f.random)]
        named += [("layer-matched", s, d) for s, d in enumerate(f.matched)]
        hits, gaps = scores(
            model,
            tok,
            [samples[i] for i in idx],
            means,
            [Ablation.of(heads=h) for _, _, h in named],
            other[idx],
            forwards,
        )
        lab = np.array([labels[i] for i in idx])
        for a, (order, s, heads) in enumerate(named):
            for c in dict.fromkeys(lab):
                m = lab == c
                rows.append(
                    {
                        "task": task,
                        "fold": f.index,
                        "order": order,
                        "seed": s,
                        "k": len(heads),
                        "cluster": c,
                        "n": int(m.sum()),
                        "correct": int(hits[a].numpy()[m].sum()),
                        "ld": float(gaps[a].numpy()[m].mean()),
                        "heads": " ".join(map(head_name, heads)),
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)


@dataclass(frozen=True)
class Reading:
    """A pooled reading with its percentile bootstrap interval over the pooled held-out clusters."""

    value: float
    lo: float
    hi: float


@dataclass(frozen=True)
class FoldDiff:
    """One fold's paired difference (:func:`paired`): its held-out prompts ``n`` and ``clusters``, the ``draws`` read
    and the distinct head sets among them (``sets``), and ``diff`` with the interval that resamples its own clusters."""

    fold: int
    n: int
    clusters: int
    draws: int
    sets: int
    diff: Reading


@dataclass(frozen=True)
class Paired:
    """The top ``k`` against one kind of draw on one measure (:func:`paired`): ``diff`` pooled over every held-out
    cluster with its interval (clusters resampled within each fold), ``folds`` each fold's own reading."""

    diff: Reading
    folds: tuple[FoldDiff, ...]


@dataclass(frozen=True)
class CrossFit:
    """knockout_crossfit.csv pooled over its folds (:func:`pooled`).

    Attributes:
        k: heads each fold knocks out.
        n, clusters: the pooled held-out prompts and problem clusters.
        tops: each fold's top ``k`` (names ``"layer.head"``), in fold order.
        intact_acc, intact_ld: nothing knocked out.
        top_acc, top_ld: the folds' top ``k`` out, with their intervals (each fold's heads held fixed; the rules
            read the paired differences below).
        random_acc, random_ld: one pooled reading per random draw present in every fold.
        matched_acc, matched_ld: the same for the layer-matched draws (empty where a fold has none).
        random_acc_diff, random_ld_diff, matched_acc_diff, matched_ld_diff: the top ``k`` against each kind of draw
            on each measure, paired by held-out cluster (:class:`Paired`; ``None`` where a fold has no such draw).
    """

    k: int
    n: int
    clusters: int
    tops: tuple[tuple[str, ...], ...]
    intact_acc: float
    intact_ld: float
    top_acc: Reading
    top_ld: Reading
    random_acc: tuple[float, ...]
    random_ld: tuple[float, ...]
    matched_acc: tuple[float, ...]
    matched_ld: tuple[float, ...]
    random_acc_diff: Paired | None = None
    random_ld_diff: Paired | None = None
    matched_acc_diff: Paired | None = None
    matched_ld_diff: Paired | None = None

    def overlap(self) -> tuple[int, int]:
        """``(heads in every fold's top k, heads in any fold's)``."""
        sets = [set(t) for t in self.tops]
        return len(set.intersection(*sets)), len(set.union(*sets))


def _percentiles(boot: np.ndarray) -> tuple[float, float]:
    """The :data:`LEVEL` percentile interval of resampled readings (torch's linear interpolation)."""
    q = torch.tensor([(1 - LEVEL) / 2, (1 + LEVEL) / 2], dtype=torch.float64)
    lo, hi = torch.quantile(torch.tensor(boot), q).tolist()
    return lo, hi


def _value(rows: pd.DataFrame, measure: str) -> pd.Series:
    """Each row's accuracy (``measure="acc"``: correct / n) or mean logit difference (``"ld"``)."""
    return rows.correct / rows.n if measure == "acc" else rows.ld


def _whole(d: pd.DataFrame, folds: int) -> list:
    """The draws (``seed``) present in every one of the ``folds`` folds."""
    return [s for s, g in d.groupby("seed") if g.fold.nunique() == folds]


def _pool(rows: pd.DataFrame) -> tuple[float, float]:
    n = rows.n.sum()
    return float(rows.correct.sum() / n), float((rows.n * rows.ld).sum() / n)


def _draws(frame: pd.DataFrame, order: str, folds: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    d = frame[frame.order == order]
    got = [_pool(d[d.seed == s]) for s in _whole(d, folds)]
    return tuple(a for a, _ in got), tuple(b for _, b in got)


def paired(frame: pd.DataFrame, order: str, measure: str, counts: np.ndarray) -> Paired | None:
    """The top ``k`` (``effect-rank``) against the draws of ``order`` on ``measure`` (:func:`_value`), paired by
    held-out cluster: on each cluster the top ``k``'s reading minus the mean of the draws' readings on it (the draws
    present in every fold, as :func:`pooled` pools them, so the pooled difference is the top ``k``'s pooled reading
    minus the draws' mean), pooled by prompts (``Σ n_c·d_c / Σ n_c``); its :data:`LEVEL` percentile interval reads
    the same ratio under each row of ``counts`` (``(B, clusters)``, the top ``k``'s rows in order: how often each
    cluster is drawn, :func:`~arithmech.core.stats.stratified_counts` over their folds), and each fold's own reading
    the same over its clusters alone. ``None`` where no draw of ``order`` is in every fold."""
    top = frame[frame.order == "effect-rank"].reset_index(drop=True)
    d = frame[frame.order == order]
    d = d[d.seed.isin(_whole(d, top.fold.nunique()))]
    if d.empty:
        return None
    mean = _value(d, measure).groupby([d.fold, d.cluster]).mean()
    diff = _value(top, measure).to_numpy(dtype="float64") - mean.loc[list(zip(top.fold, top.cluster))].to_numpy()
    n = top.n.to_numpy(dtype="float64")

    def read(m: np.ndarray) -> Reading:
        boot = (counts[:, m] @ (n[m] * diff[m])) / (counts[:, m] @ n[m])
        return Reading(float(n[m] @ diff[m] / n[m].sum()), *_percentiles(boot))

    folds = []
    for f in sorted(set(top.fold)):
        m, rows = (top.fold == f).to_numpy(), d[d.fold == f]
        sets = rows.heads.map(lambda h: frozenset(h.split())).nunique()
        folds.append(FoldDiff(int(f), int(n[m].sum()), int(m.sum()), rows.seed.nunique(), int(sets), read(m)))
    return Paired(read(np.ones(len(top), dtype=bool)), tuple(folds))


def pooled(frame: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0) -> CrossFit:
    """knockout_crossfit.csv's rows (one task's) pooled over the folds: each reading the sum of ``correct`` (or of
    ``n·ld``) over every held-out cluster row over the sum of ``n``; a random or layer-matched draw ``s`` pools the
    draw ``s`` of every fold (a draw missing from a fold is left out). The top ``k``'s interval: the
    :data:`LEVEL` percentile interval over ``n_boot`` resamples of the held-out clusters
    (:func:`arithmech.core.stats.bootstrap_counts`, seeded), each resample's reading the same ratio of sums. The
    top ``k`` against each kind of draw on each measure: :func:`paired`, its clusters resampled within their folds
    (:func:`arithmech.core.stats.stratified_counts`, the same seed)."""
    folds = frame.fold.nunique()
    top = frame[frame.order == "effect-rank"].reset_index(drop=True)
    counts = bootstrap_counts(len(top), n_boot, seed).numpy()  # (B, clusters)
    within = stratified_counts(top.fold.tolist(), n_boot, seed).numpy()  # (B, clusters), each fold's resampled alone
    n = top.n.to_numpy(dtype="float64")

    def reading(values: np.ndarray) -> Reading:
        boot = (counts @ (n * values)) / (counts @ n)
        return Reading(float((n * values).sum() / n.sum()), *_percentiles(boot))

    acc, ld = _pool(frame[frame.order == "nothing-out"])
    ra, rl = _draws(frame, "random-rank", folds)
    ma, ml = _draws(frame, "layer-matched", folds)
    tops = tuple(tuple(g.heads.iloc[0].split()) for _, g in top.groupby("fold", sort=True))
    return CrossFit(
        int(top.k.iloc[0]),
        int(n.sum()),
        len(top),
        tops,
        acc,
        ld,
        reading(top.correct.to_numpy(dtype="float64") / n),
        reading(top.ld.to_numpy(dtype="float64")),
        ra,
        rl,
        ma,
        ml,
        *(paired(frame, o, m, within) for o in ("random-rank", "layer-matched") for m in ("acc", "ld")),
    )
