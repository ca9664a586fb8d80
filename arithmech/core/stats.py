"""Confidence intervals for small evaluations (a 135M model sits near chance on MMLU and CSQA).

* :func:`wilson_interval`: a proportion ``k / n`` (accuracy on ``n`` items);
* :func:`paired_bootstrap`: the mean of a paired difference (the same items scored before and after
  fine-tuning), percentile bootstrap over items;
* :func:`mean_interval`: mean ± z standard errors (per-chunk language-model losses);
* :func:`bootstrap_mean_intervals`: percentile bootstrap intervals of many means at once (the effect of
  every head and MLP over the same prompts), resampling the prompts, vectorised with an index matrix;
* :func:`bootstrap_ratio_intervals`: the same for ratios of means ``mean(num) / mean(den)`` (each head's share
  of a total), numerator and denominator resampled with the same prompts;
* :func:`stratified_counts`: resample counts that draw items within their strata (problem clusters within the
  folds of a cross-fit).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from statistics import NormalDist

import torch


def wilson_interval(k: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion ``k / n`` (95% for the default ``z``); ``k`` successes of ``n`` trials
    (a float where it is a share times the trials: :func:`arithmech.methods.ablation.tables.row_interval`).

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
    return (0.0 if k == 0 else lo), (1.0 if k == n else hi)  # exact at the ends


def paired_bootstrap(
    before: Sequence[float], after: Sequence[float], n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
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


def hierarchical_bootstrap(
    before: Sequence[Sequence[float]],
    after: Sequence[Sequence[float]],
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``(estimate, lo, hi)`` of ``mean(after) - mean(before)`` when each arm has several runs (seeds) scoring
    the same items: ``before`` ``(R_b, n)``, ``after`` ``(R_a, n)`` per-run, per-item scores.

    Resample ``b`` draws each arm's runs with replacement (``R_b`` and ``R_a`` of them: the run-to-run spread of
    training) and one set of ``n`` items with replacement, shared by both arms (the pairing); its value is
    the mean over the drawn items of (after's drawn runs' mean − before's). The interval thus carries both
    sources of variance; with one run per arm it is :func:`paired_bootstrap`'s (the same resamples for the
    same ``seed``). ``estimate``: the difference of the arms' means over all runs and items.
    """
    a = torch.tensor([list(r) for r in before], dtype=torch.float64)
    b = torch.tensor([list(r) for r in after], dtype=torch.float64)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1] or a.numel() == 0 or b.numel() == 0:
        raise ValueError("hierarchical_bootstrap needs runs x items scores of the same items for both arms")
    n = a.shape[1]
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, n, (n_boot, n), generator=g)  # first: paired_bootstrap's items
    pick = lambda x: (
        x.mean(0, keepdim=True).expand(n_boot, -1)
        if x.shape[0] == 1
        else x[torch.randint(0, x.shape[0], (n_boot, x.shape[0]), generator=g)].mean(1)
    )  # (B, n): drawn runs' mean
    d = pick(b) - pick(a)
    means = d.gather(1, idx).mean(1)
    q = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)
    lo, hi = torch.quantile(means, q).tolist()
    return float((b.mean(0) - a.mean(0)).mean()), lo, hi


def mean_interval(x: Sequence[float], z: float = 1.959964) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: mean ± ``z`` standard errors (sample standard deviation / √n)."""
    n = len(x)
    if n < 2:
        raise ValueError(f"mean_interval needs at least two values, got {n}")
    m = sum(x) / n
    half = z * math.sqrt(sum((v - m) ** 2 for v in x) / (n - 1) / n)
    return m, m - half, m + half


def bootstrap_indices(n: int, n_boot: int = 1000, seed: int = 0) -> torch.Tensor:
    """``(n_boot, n)`` resampled row indices: row ``b`` draws ``n`` of ``0..n-1`` with replacement.

    Seeded with its own generator (``torch.Generator().manual_seed(seed)``): the same arguments give the
    same matrix on any machine, whatever else used torch's global generator."""
    if n < 1 or n_boot < 1:
        raise ValueError(f"bootstrap needs n >= 1 samples and n_boot >= 1 resamples, got n={n}, n_boot={n_boot}")
    return torch.randint(0, n, (n_boot, n), generator=torch.Generator().manual_seed(seed))


def bootstrap_mean_intervals(
    x: torch.Tensor, n_boot: int = 1000, level: float = 0.95, seed: int = 0, clusters=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(lo, hi)``, each of shape ``x.shape[1:]``: percentile bootstrap interval of the mean over dim 0.

    ``x``: ``(n, ...)`` per-sample values (e.g. ``(n, L, H + 1)`` relative changes of every head and MLP).
    All columns are resampled with the same :func:`bootstrap_indices` matrix (one resample = one set of
    prompts, as a rerun on other prompts would draw). Vectorised: the index matrix becomes a count matrix
    ``C`` ``(n_boot, n)`` (how often each prompt is drawn) and the ``n_boot`` resampled means are
    ``C @ x / n`` in float64, one matrix product for every column; the interval is the
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of those means (linear interpolation).
    Equals the plain loop ``x[idx[b]].mean(0)`` per resample to float64 rounding
    (``tests/unit/core/test_stats.py``).

    ``clusters`` (one label per row, e.g. the problem a prompt asks): a cluster bootstrap — each resample
    draws clusters with replacement and takes every row of each (:func:`bootstrap_counts`); the mean is over
    the rows drawn. Rows of one cluster are not independent, and resampling rows would narrow the interval.
    """
    if not 0 < level < 1:
        raise ValueError(f"level {level}: expected a probability in (0, 1), e.g. 0.95")
    n = x.shape[0]
    counts = bootstrap_counts(n, n_boot, seed, clusters)
    means = counts @ x.reshape(n, -1).to(torch.float64) / counts.sum(1, keepdim=True)  # (n_boot, columns)
    q = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)
    lo, hi = torch.quantile(means, q, dim=0)
    return lo.reshape(x.shape[1:]), hi.reshape(x.shape[1:])


def bootstrap_counts(n: int, n_boot: int = 1000, seed: int = 0, clusters=None) -> torch.Tensor:
    """``(n_boot, n)`` float64: how often resample ``b`` of :func:`bootstrap_indices` draws each prompt.

    With ``clusters`` (``n`` hashable labels): resample ``b`` draws ``m`` of the ``m`` distinct clusters (in
    order of first appearance) with replacement, row ``b`` of :func:`bootstrap_indices` ``(m, ...)``, and a
    prompt counts as often as its cluster was drawn."""
    if clusters is None:
        idx = bootstrap_indices(n, n_boot, seed)
        return torch.zeros(n_boot, n, dtype=torch.float64).scatter_add_(
            1, idx, torch.ones(n_boot, n, dtype=torch.float64)
        )
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster labels for {n} samples: one label per sample")
    ids: dict = {}
    row_cluster = torch.tensor([ids.setdefault(c, len(ids)) for c in clusters])
    return bootstrap_counts(len(ids), n_boot, seed)[:, row_cluster]


def stratified_counts(strata: Sequence, n_boot: int = 1000, seed: int = 0) -> torch.Tensor:
    """``(n_boot, n)`` float64: how often resample ``b`` draws each of ``n`` items (``strata``: one hashable label
    each) when every stratum is resampled on its own, its ``m`` items drawn ``m`` times with replacement (so each
    stratum keeps its size), the strata in order of first appearance, all from one generator seeded with ``seed``."""
    g, out = torch.Generator().manual_seed(seed), torch.zeros(n_boot, len(strata), dtype=torch.float64)
    for s in dict.fromkeys(strata):
        cols = torch.tensor([i for i, t in enumerate(strata) if t == s])
        idx = cols[torch.randint(0, len(cols), (n_boot, len(cols)), generator=g)]
        out.scatter_add_(1, idx, torch.ones(idx.shape, dtype=torch.float64))
    return out


def bootstrap_ratio_intervals(
    num: torch.Tensor, den: torch.Tensor, n_boot: int = 1000, level: float = 0.95, seed: int = 0, clusters=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(lo, hi)``, each of shape ``num.shape[1:]``: percentile bootstrap interval of ``mean(num) / mean(den)``.

    ``num``: ``(n, ...)`` per-sample numerators (e.g. ``(n, L, H + 1)``: each component's change of a
    per-prompt quantity), ``den``: ``(n,)`` the per-sample denominator (the whole change). A ratio of means,
    not a mean of ratios (which blows up on a prompt with a small denominator). Resample ``b`` draws the
    prompts of row ``b`` of :func:`bootstrap_indices` (the same ``seed`` as :func:`bootstrap_mean_intervals`
    draws the same prompts) for numerator and denominator alike: ``ratio_b = (C @ num)_b / (C @ den)_b``
    (the ``1/n`` cancels). A resample whose denominator mean is 0 gives an infinite or NaN ratio.
    """
    if not 0 < level < 1:
        raise ValueError(f"level {level}: expected a probability in (0, 1), e.g. 0.95")
    n = num.shape[0]
    if den.shape != (n,):
        raise ValueError(f"den has shape {tuple(den.shape)}; expected ({n},), one value per sample of num")
    counts = bootstrap_counts(n, n_boot, seed, clusters)  # the same resamples as bootstrap_mean_intervals
    ratios = (counts @ num.reshape(n, -1).to(torch.float64)) / (counts @ den.to(torch.float64))[:, None]
    q = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)
    lo, hi = torch.quantile(ratios, q, dim=0)
    return lo.reshape(num.shape[1:]), hi.reshape(num.shape[1:])


def paired_halfwidth(n: int, discordant: float, z: float = 1.96) -> float:
    """Half-width of the normal 95% interval of a paired difference of two accuracies on the same ``n``
    items when a fraction ``discordant`` of the items is right under one and wrong under the other and
    the difference is near 0: ``z * sqrt(discordant / n)`` (McNemar's variance). 800 items resolve
    ±3 points up to 19 % discordant items; 200 items, up to 4.7 %."""
    return z * math.sqrt(discordant / n)


# ----------------------------------------------------------------- intervals over a few run means
def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _betai(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student t distribution's CDF at ``t`` with ``df`` (real, > 0) degrees of freedom."""
    tail = 0.5 * _betai(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def f_sf(f: float, d1: float, d2: float) -> float:
    """P(F > ``f``) for Fisher's F with ``d1``, ``d2`` degrees of freedom: I_{d2/(d2 + d1 f)}(d2/2, d1/2)."""
    if f <= 0:
        return 1.0
    return _betai(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f))


def one_way_f(groups: Sequence[Sequence[float]]) -> tuple[float, int, int, float]:
    """``(F, d1, d2, p)``: one-way analysis of variance of ``groups`` (k groups, N values in all): the spread between
    group means over the spread within groups, F = [SS_between/(k − 1)] / [SS_within/(N − k)], and its p-value
    (:func:`f_sf`). Needs two groups or more and more values than groups; within-group spread of zero gives F = inf
    (p = 0) where the means differ, else F = 0."""
    gs = [list(g) for g in groups if len(g)]
    k, n = len(gs), sum(len(g) for g in gs)
    if k < 2 or n <= k:
        raise ValueError(f"one_way_f needs two groups or more and more values than groups, got {k} and {n}")
    grand = sum(sum(g) for g in gs) / n
    between = sum(len(g) * (sum(g) / len(g) - grand) ** 2 for g in gs)
    within = sum((x - sum(g) / len(g)) ** 2 for g in gs for x in g)
    d1, d2 = k - 1, n - k
    if within == 0:
        return (math.inf, d1, d2, 0.0) if between > 0 else (0.0, d1, d2, 1.0)
    f = (between / d1) / (within / d2)
    return f, d1, d2, f_sf(f, d1, d2)


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on :func:`t_cdf`; to 1e-10)."""
    if not 0 < p < 1 or df <= 0:
        raise ValueError(f"t_quantile: p={p} must lie in (0, 1) and df={df} be positive")
    lo, hi = -1e4, 1e4
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
        if hi - lo < 1e-10:
            break
    return (lo + hi) / 2


def cluster_mean_intervals(
    x: torch.Tensor, clusters: Sequence | None = None, level: float = 0.95
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(lo, hi)``, each of shape ``x.shape[1:]``: the cluster-robust t interval of the mean over dim 0 of ``x``
    (``(n, ...)`` per-prompt values), with ``clusters`` one label per row (``None``: each row its own cluster).

    The mean is over the rows; its variance is the sandwich estimator over the ``m`` clusters with the small-sample
    factor, ``m / (m − 1) · Σ_c (Σ_{i∈c} (x_i − mean))² / n²``, and the interval is the mean ± the ``(1 + level) / 2``
    quantile of Student's t with ``m − 1`` degrees of freedom times its root. A percentile bootstrap over 15 to 40
    clusters covers less than it says (about 92–93 % for 95 %); this interval keeps close to its level there. Fewer
    than 2 clusters: NaN."""
    n = x.shape[0]
    flat = x.reshape(n, -1).to(torch.float64)
    ids: dict = {}
    label = torch.tensor([ids.setdefault(c, len(ids)) for c in (clusters if clusters is not None else range(n))])
    m = len(ids)
    if m < 2:
        nan = torch.full(flat.shape[1:], float("nan"), dtype=torch.float64)
        return nan.reshape(x.shape[1:]), nan.reshape(x.shape[1:])
    mean = flat.mean(0)
    sums = torch.zeros(m, flat.shape[1], dtype=torch.float64).index_add_(0, label, flat - mean)
    half = t_quantile((1 + level) / 2, m - 1) * (m / (m - 1) * (sums**2).sum(0) / n**2).sqrt()
    return (mean - half).reshape(x.shape[1:]), (mean + half).reshape(x.shape[1:])


def t_interval(x: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: Student t interval of the mean of a few values (run means: one value per training
    run), ``mean ± t_{n-1} · sd / √n``; needs two values or more. Its coverage at n = 3, 5, 10 runs is checked on
    simulated runs (``tests/unit/core/test_stats.py``)."""
    n = len(x)
    if n < 2:
        raise ValueError(f"t_interval needs at least two values, got {n}")
    m = sum(x) / n
    half = t_quantile((1 + level) / 2, n - 1) * math.sqrt(sum((v - m) ** 2 for v in x) / (n - 1) / n)
    return m, m - half, m + half


def welch_interval(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """``(mean(b) − mean(a), lo, hi)``: Welch's t interval of a difference of two means of a few runs each
    (unequal variances, Welch–Satterthwaite degrees of freedom); each side needs two values or more. Where both
    sides have no spread at all the interval is the point."""
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        raise ValueError(f"welch_interval needs at least two values a side, got {na} and {nb}")
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((v - ma) ** 2 for v in a) / (na - 1) / na
    vb = sum((v - mb) ** 2 for v in b) / (nb - 1) / nb
    d, se2 = mb - ma, va + vb
    if se2 == 0:
        return d, d, d
    df = se2**2 / ((va**2 / (na - 1) if va else 0.0) + (vb**2 / (nb - 1) if vb else 0.0))
    half = t_quantile((1 + level) / 2, df) * math.sqrt(se2)
    return d, d - half, d + half


def bonferroni_z(m: int) -> float:
    """The normal quantile of a two-sided 95 % interval that is one of ``m`` read at once (Bonferroni: each at level
    1 − 0.05 / m, so with probability ≥ 95 % all ``m`` cover together): z_{1 − 0.025/m}; 1.96 for one."""
    return NormalDist().inv_cdf(1 - 0.025 / max(1, m))


def sample_variance(x: Sequence[float]) -> float:
    """The unbiased sample variance of ``x`` (divisor ``len(x) − 1``; at least two values): what every run and item
    term of :func:`crossed_interval` and its projection (:mod:`arithmech.table1.design`) reads."""
    m = sum(x) / len(x)
    return sum((v - m) ** 2 for v in x) / (len(x) - 1)


def studentized_half_width(terms: Sequence[tuple[float, float]], level: float = 0.95) -> float:
    """The half-width of an interval whose variance is a sum of independently estimated terms ``(v, df)``:
    √Σ (t_{df}(1 − (1 − level)/2)² · v) — each term studentized by its own degrees of freedom, then added in
    quadrature. Exact where one term is all the variance; conservative in between (unlike one Welch–Satterthwaite t
    on Σ v, which is liberal where a term of few degrees of freedom is large: :func:`crossed_interval`)."""
    q = (1 + level) / 2
    return math.sqrt(sum(t_quantile(q, d) ** 2 * v for v, d in terms if v))


def crossed_interval(
    a: Sequence[Sequence[float]],
    b: Sequence[Sequence[float]] | None = None,
    level: float = 0.95,
    strata: Sequence[str] | None = None,
) -> tuple[float, float, float]:
    """``(estimate, lo, hi)`` of the mean of ``a`` (or of ``mean(a) − mean(b)``) where every run is scored on **the
    same test items**: ``a`` is runs × items (``a[r][i]``: run ``r``'s score, or change from base, on item ``i``),
    ``b`` likewise, on the same items in the same order.

    Two sources of error, crossed: the training runs (seeds, draws) and the finite test set. A Student t over run
    means sees the first only (three runs that score alike give an interval of width zero, however few the items);
    an item bootstrap sees the second only. The variance of the estimate has one term per source:

        v_run = var(run means)/R for each side,   v_item = var over items of (ā_i − b̄_i) / I

    (ā_i: item i's score averaged over a's runs; item effects shared with b on the same items cancel), and the
    half-width is :func:`studentized_half_width`: each term scaled by its own t quantile (R − 1 degrees of freedom
    for a run term, I − 1 for the item term), added in quadrature. Under the two-way model score = μ + run + item +
    residual the terms count the residual twice (σ²_res/(R·I) once too often), and the quadrature never misses
    more often than the level says: conservative. (The seventh rule version used one Welch–Satterthwaite t on the
    summed variance: at 3 runs, where the run spread is most of the error and the runs happen to agree, its
    estimated degrees of freedom jump toward I − 1 and, at a Bonferroni level of 1 − 0.05/40, it missed 3 to 14
    times as often as the level says; the test checks both.) Each side needs at least two runs (one run says
    nothing of the training spread); where every term is zero the interval is the point. Coverage with a fixed test
    set is checked on simulated runs at n = 3, 5, 10 and at a Bonferroni level (``tests/unit/core/test_stats.py``).

    ``strata`` (one label per item: e.g. the test phrasing) makes the item term that of a stratified sample,
    ``Σ_s I_s · var_s(ā_i − b̄_i) / I²`` on ``I − S`` degrees of freedom: a difference between phrasings is then a
    fixed part of the estimand (the test's phrasings, each at its share of the items), not item noise."""
    sides = [a] if b is None else [a, b]
    n_items = len(a[0]) if a else 0
    if any(len(s) < 2 for s in sides) or any(len(r) != n_items for s in sides for r in s):
        raise ValueError("crossed_interval needs at least two runs a side, scored on the same items (equal lengths)")
    means = [[sum(r) / n_items for r in s] for s in sides]
    est = sum(means[0]) / len(means[0]) - (sum(means[1]) / len(means[1]) if b is not None else 0.0)
    item = [sum(col) / len(a) for col in zip(*a)]
    if b is not None:
        item = [x - sum(col) / len(b) for x, col in zip(item, zip(*b))]
    if strata is None:
        terms = [(sample_variance(item) / n_items, n_items - 1)] if n_items >= 2 else []
    else:
        if len(strata) != n_items:
            raise ValueError(f"crossed_interval: {len(strata)} strata labels for {n_items} items")
        groups: dict[str, list[float]] = {}
        for s_, y in zip(strata, item):
            groups.setdefault(s_, []).append(y)
        if any(len(g) < 2 for g in groups.values()):
            raise ValueError("crossed_interval: every stratum needs at least two items")
        v = sum(len(g) * sample_variance(g) for g in groups.values()) / n_items**2
        terms = [(v, n_items - len(groups))]
    terms += [(sample_variance(m) / len(m), len(m) - 1) for m in means]
    half = studentized_half_width(terms, level)
    return est, est - half, est + half
