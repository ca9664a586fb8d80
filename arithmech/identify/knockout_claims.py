"""The knockout claims' deciders (paper §4.1, Fig. 3): the top ``K`` heads knocked out against random draws of as
many heads, on accuracy (``knockout-key-vs-random``, ``knockout-random-flat``) and on the logit difference
(``knockout-ld-key-vs-random``), each read from ``knockout.csv``'s END rows of the primary task, or from the
cross-fitted knockout (``knockout_crossfit.csv``, :mod:`arithmech.methods.ablation.crossfit`) where the folder has it;
the rules' texts are in :mod:`arithmech.identify.claims`. Every one is inconclusive below
:data:`~arithmech.data.answers.MIN_CLUSTERS` problem clusters among the knockout prompts."""

from __future__ import annotations

import pandas as pd

from arithmech.claims.controls import layer_matched
from arithmech.claims.evidence import Context, Missing, cluster_interval, end_rows
from arithmech.data.answers import MIN_CLUSTERS
from arithmech.methods.ablation.crossfit import FOLDS, LEVEL, N_BOOT, CrossFit, Paired, Reading
from arithmech.methods.ablation.run import LAYER_MATCHED

K = 8  # heads knocked out in the knockout claims
MIN_DRAWS = 20  # distinct random draws a knockout on the logit difference is decided against (identify's n_random)
DESIGN = (
    "where the folder has knockout_crossfit.csv (python -m arithmech crossfit), the rule reads it instead of "
    "knockout.csv: identify's ranking-side problem clusters (effects_clusters.csv; a cluster is the operation and "
    f"the unordered operand pair, so a problem and its mirror stay together) are dealt into {FOLDS} folds in the "
    "order of a seeded hash (crc32 of 'crossfit:<seed>:<cluster>'); each fold's top "
    f"{K} heads are ranked on the other folds' clusters alone (the mean effect over their prompts, most negative "
    f"first, as effects.csv ranks) and knocked out at END on the fold's own X_r prompts only, beside "
    f"{MIN_DRAWS} random draws of {K} heads outside that fold's top {K} and the key heads and {MIN_DRAWS} "
    "layer-matched draws; every cluster is held out once and the heads differ by fold (each fold's top "
    f"{K} and their overlap are reported)"
)
CROSSFIT = (
    f"{DESIGN}; the readings are pooled over the folds (draw s of every fold "
    f"together), the top {K}'s interval a {LEVEL:.0%} percentile bootstrap over the pooled held-out clusters "
    f"({N_BOOT} resamples, seeded), with the same bounds, the same layer-matched test and the same minimum of "
    f"{MIN_CLUSTERS} problem clusters"
)
PAIRED = (
    f"{DESIGN}; the top {K} is read against each kind of draw by their paired difference: on each held-out cluster "
    f"the top {K}'s reading minus the mean of the draws' readings on the same prompts (the draws present in every "
    "fold), pooled over the folds by prompts, with a "
    f"{LEVEL:.0%} percentile bootstrap interval that resamples the held-out clusters within each fold ({N_BOOT} "
    "resamples, one seed; each fold's own difference and interval are reported beside it); the bounds are the "
    "rule's, measured from the draws' mean (each draw pooled over the folds, draw s of every fold together): the top "
    f"{K} lies below every draw where the difference lies below the lowest draw's, and the difference's interval is "
    "read against the draws' 5th percentile's (holds iff its upper end lies below it, does not hold iff its lower end "
    "lies at or above it), with the same layer-matched test and the same minimum of "
    f"{MIN_CLUSTERS} problem clusters"
)
DISTINCT = f"distinct draws are distinct head sets of {K}, counted in each fold (the fewest decides)"


def knocked(ctx: Context, k: int):
    ko = end_rows(ctx)
    d = ko[(ko.kind == "head") & (ko.k == k)]
    key, rnd = d[d.order == "effect-rank"], d[d.order == "random-rank"]
    if key.empty or rnd.empty:
        raise Missing(f"knockout.csv has no head curve at k = {k}")
    intact = (
        ko[(ko.kind == "sanity") & (ko.order == "nothing-out")].accuracy
        if "sanity" in set(ko.kind)
        else ko[(ko.kind == "head") & (ko.k == 0)].accuracy
    )
    return key.iloc[0], rnd, float(intact.iloc[0]) if len(intact) else float("nan")


def too_few_clusters(row) -> str:
    """Why a knockout.csv ``row`` decides nothing: ``""`` where it counts at least :data:`MIN_CLUSTERS` problem
    clusters (or counts none: a file made before the count), else what to print."""
    m = getattr(row, "n_clusters", None)
    if m is None or m != m or int(m) >= MIN_CLUSTERS:
        return ""
    return f"; fewer than {MIN_CLUSTERS} problem clusters ({int(m)}): inconclusive"


def crossfit_said(cf: CrossFit) -> str:
    """What every cross-fitted verdict prints first: the pooled prompts and clusters, each fold's top ``k`` and
    their overlap."""
    every, anyf = cf.overlap()
    tops = " | ".join(" ".join(t) for t in cf.tops)
    return (
        f"cross-fitted over {len(cf.tops)} folds, {cf.n} held-out prompts from {cf.clusters} problem clusters; the "
        f"folds' top {cf.k}: {tops} ({every} in every fold's, {anyf} in any)"
    )


def crossfit_against(
    draws: tuple[float, ...], top: Reading, paired: Paired | None, name: str, measure: str, distinct_draws: bool
) -> tuple[str, bool | None]:
    """The cross-fitted top ``k`` (``top``: its pooled reading) against one kind of pooled draws (``draws``), through
    their paired difference (``paired``: :func:`~arithmech.methods.ablation.crossfit.paired`, top ``k`` minus the
    draws' mean per held-out cluster, its interval resampling the clusters within each fold), read against the
    rule's bounds measured from the draws' mean: holds where the top ``k`` lies below every draw and the interval's
    upper end below the draws' 5th percentile minus their mean, does not hold where its lower end lies at or above
    that, inconclusive in between; with ``distinct_draws`` (the logit difference) also where a fold has fewer than
    :data:`MIN_DRAWS` distinct head sets among its draws; ``None`` holds with no draw ("not run")."""
    if not draws or paired is None:
        return f"{name}: not run", None
    fmt, unit = ("{:.0%}", " points") if measure == "acc" else ("{:+.2f}", "")
    dif = (lambda x: f"{100 * x:+.0f}") if measure == "acc" else "{:+.2f}".format
    d = pd.Series(draws)
    mean, p5 = float(d.mean()), float(d.quantile(0.05))
    low, band, r = float(d.min()) - mean, p5 - mean, paired.diff
    sets = min(f.sets for f in paired.folds)
    here = (
        f"{name}: mean {fmt.format(mean)} (lowest {fmt.format(d.min())}, 5th percentile {fmt.format(p5)}, {len(d)} "
        f"draws, {'/'.join(str(f.sets) for f in paired.folds)} distinct head sets by fold); top minus their mean, "
        f"paired by cluster: {dif(r.value)} [{dif(r.lo)}, {dif(r.hi)}]{unit} (by fold "
        f"{' / '.join(dif(f.diff.value) for f in paired.folds)}) vs {dif(low)}{unit} to the lowest draw, "
        f"{dif(band)}{unit} to the 5th percentile"
    )
    if distinct_draws and sets < MIN_DRAWS:
        return here + f", fewer than {MIN_DRAWS} distinct head sets in a fold", None
    return here, True if top.value < d.min() and r.hi < band else (False if r.lo >= band else None)


def crossfit_verdict(cf: CrossFit, measure: str) -> tuple[str, bool | None]:
    """knockout-key-vs-random (``measure="acc"``) or knockout-ld-key-vs-random (``"ld"``) on the cross-fitted
    knockout: the pooled top ``k`` against the pooled random draws and the layer-matched ones, each through their
    paired difference (:func:`crossfit_against`); both must hold, either not holding: does not hold; layer-matched
    draws not run: the random verdict stands."""
    fmt = "{:.0%}" if measure == "acc" else "{:+.2f}"
    top: Reading = getattr(cf, f"top_{measure}")
    intact = getattr(cf, f"intact_{measure}")
    what = "accuracy" if measure == "acc" else "logit difference"
    here = f"{crossfit_said(cf)}; {what} {fmt.format(intact)} intact → {fmt.format(top.value)} with each fold's top "
    here += f"{cf.k} out"
    if cf.clusters < MIN_CLUSTERS:
        return here + f"; fewer than {MIN_CLUSTERS} problem clusters ({cf.clusters}): inconclusive", None
    rnd, lm = (
        crossfit_against(
            getattr(cf, f"{kind}_{measure}"), top, getattr(cf, f"{kind}_{measure}_diff"), name, measure, measure == "ld"
        )
        for kind, name in (("random", "random heads"), ("matched", "layer-matched"))
    )
    here += f"; {rnd[0]}; {lm[0]}"
    holds = [rnd[1]] + ([lm[1]] if getattr(cf, f"matched_{measure}") else [])
    return here, False if False in holds else (True if all(h is True for h in holds) else None)


def key_vs_random(ctx: Context):
    if (cf := ctx.crossfit()) is not None:
        return crossfit_verdict(cf, "acc")
    key, rnd, intact = knocked(ctx, K)
    acc, n = float(key.accuracy), int(key.n)
    here = (
        f"accuracy {intact:.0%} → {acc:.0%} (top {K}) vs random {rnd.accuracy.mean():.0%} (lowest "
        f"{rnd.accuracy.min():.0%}, {len(rnd)} draws); n = {n} prompts"
    )
    if few := too_few_clusters(key):
        return here + few, None
    p5 = float(rnd.accuracy.quantile(0.05))
    lo, hi, what = cluster_interval(key) if "ci_high" in key else (acc, acc, "no interval in the file")
    if acc >= rnd.accuracy.min():  # not below every draw: does it lie within the band?
        here += f"; lower bound {lo:.0%} ({what}) vs 5th percentile {p5:.0%}"
        return layer_matched(ctx, K, key, here, False if lo >= p5 else None)
    if "ci_high" in key:
        here, holds = here + f"; upper bound {hi:.0%} ({what}) vs 5th percentile {p5:.0%}", (True if hi < p5 else None)
        return layer_matched(ctx, K, key, here, holds)
    return layer_matched(ctx, K, key, here, True)


def ld_against(rnd: pd.DataFrame, key, name: str) -> tuple[str, bool | None]:
    """The top k's logit difference (``key``: its row, with ``ld``, ``ld_lo``, ``ld_hi``) against one set of random
    draws (``rnd``): holds where it lies below every draw and its interval's upper end below the draws' 5th
    percentile, does not hold where its interval's lower end lies at or above that percentile, inconclusive in
    between and where fewer than :data:`MIN_DRAWS` distinct draws were made (distinct mean logit differences: two
    different head sets do not give the same float mean; a universe with no more heads than ``k`` outside the top
    ``k`` gives one set drawn again and again)."""
    distinct = rnd.ld.round(9).nunique()
    p5 = float(rnd.ld.quantile(0.05))
    here = f"{name}: mean {rnd.ld.mean():+.2f} (lowest {rnd.ld.min():+.2f}, 5th percentile {p5:+.2f}, {len(rnd)} draws"
    here += f", {distinct} distinct)" if distinct < len(rnd) else ")"
    if distinct < MIN_DRAWS:
        return here + f", fewer than {MIN_DRAWS} distinct draws", None
    below = float(key.ld) < float(rnd.ld.min()) and float(key.ld_hi) < p5
    return here, True if below else (False if float(key.ld_lo) >= p5 else None)


def ld_key_vs_random(ctx: Context):
    """The knockout on the logit difference (knockout.csv's ``ld`` columns): the top ``K`` heads against both random
    baselines, each by :func:`ld_against`; both must hold, either not holding: does not hold. On the cross-fitted
    knockout where the folder has it (:func:`crossfit_verdict`)."""
    if (cf := ctx.crossfit()) is not None:
        return crossfit_verdict(cf, "ld")
    key, rnd, _ = knocked(ctx, K)
    if "ld" not in rnd or key.ld != key.ld:
        raise Missing("knockout.csv has no logit-difference columns (made before them; re-run identify)")
    ko = end_rows(ctx)
    intact = ko[(ko.kind == "sanity") & (ko.order == "nothing-out")]
    m = getattr(key, "n_clusters", float("nan"))
    clusters = int(m) if m == m else "?"
    here = (
        f"logit difference {float(intact.ld.iloc[0]) if len(intact) else float('nan'):+.2f} intact → "
        f"{float(key.ld):+.2f} [{float(key.ld_lo):+.2f}, {float(key.ld_hi):+.2f}] with the top {K} out (95% over "
        f"{clusters} problem clusters)"
    )
    if few := too_few_clusters(key):
        return here + few, None
    lm = ko[(ko.kind == "head") & (ko.k == K) & (ko.order == LAYER_MATCHED)]
    verdicts = [ld_against(rnd, key, "random heads")] + ([ld_against(lm, key, "layer-matched")] if len(lm) else [])
    here += "; " + "; ".join(t for t, _ in verdicts) + ("" if len(lm) else "; layer-matched: not run")
    holds = [h for _, h in verdicts]
    return here, False if False in holds else (True if all(h is True for h in holds) else None)


def random_flat(ctx: Context):
    if (cf := ctx.crossfit()) is not None:
        m = float(pd.Series(cf.random_acc).mean()) if cf.random_acc else float("nan")
        here = f"{crossfit_said(cf)}; random mean {m:.1%} vs intact {cf.intact_acc:.1%} ({len(cf.random_acc)} draws)"
        if cf.clusters < MIN_CLUSTERS or not cf.random_acc:
            return here + f"; fewer than {MIN_CLUSTERS} problem clusters or no draw: inconclusive", None
        return here, abs(cf.intact_acc - m) <= 0.02
    key, rnd, intact = knocked(ctx, K)
    m = float(rnd.accuracy.mean())
    here = f"random mean {m:.1%} vs intact {intact:.1%} ({len(rnd)} draws, n = {int(rnd.n.iloc[0])} prompts)"
    if few := too_few_clusters(key):
        return here + few, None
    return here, abs(intact - m) <= 0.02
