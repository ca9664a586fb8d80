"""Identify's claims as rules: which heads matter, where they sit, what knocking them out does, and whether the
key-head set is a stable measurement.

:data:`IDENTIFY` and :data:`STABILITY` hold one :class:`~arithmech.claims.rule.Rule` per claim, each with the
decider that applies it (here, or for the knockout claims in
:mod:`arithmech.identify.knockout_claims`) to ``results/<model>/`` (``effects.csv``, ``knockout.csv``, ``heldout.json``,
``stability.csv``). The identify claims are gated by the control (:func:`arithmech.claims.controls.controlled`):
inconclusive where identify's task fails it. :mod:`arithmech.claims.decide` decides them with every other rule.
The numbers below are the ones both the texts print and the deciders read (their values are fingerprinted:
:mod:`arithmech.claims.changelog`).
"""

from __future__ import annotations

import math
import statistics

import pandas as pd
import torch

from arithmech.claims.controls import controlled as _controlled
from arithmech.claims.evidence import Context, Missing
from arithmech.claims.rule import Rule
from arithmech.core.names import components
from arithmech.core.stats import bootstrap_counts
from arithmech.data.answers import MIN_CLUSTERS
from arithmech.identify.config import Identify
from arithmech.identify.knockout_claims import (
    CROSSFIT,
    DISTINCT,
    MIN_DRAWS,
    PAIRED,
    K,
    key_vs_random,
    ld_key_vs_random,
    random_flat,
)
from arithmech.methods.effects import (  # "the top heads": the first TOP by effect rank (studied where none is key)
    TOP,
    top_depths,
)
from arithmech.paper import KEY_THRESHOLD
from arithmech.steps.stability import claims as stability_claims

THRESHOLD = KEY_THRESHOLD  # the paper's key-head threshold (relative change of the answer logit)
SHARE_THRESHOLD = Identify.share_threshold  # the LD-ratio rule's: a ratio to the counterfactual's LD effect
FEW_FRACTION = 0.05  # few-heads: the paper's "below 5% of heads" (Fig. 2), scaled to each model
AGREE_HOLDS, AGREE_FAILS = 8, 5  # logit-diff-ranking: top-TOP heads two measures must share (holds) / at most (fails)
MIDDLE = (1 / 3, 2 / 3)  # middle-layers: the middle third of the depth layer/(L−1)
DEPTH_LEVEL, N_BOOT_DEPTH = 0.95, 2000  # middle-layers: the median depth's bootstrap interval over problem clusters


def signed_percent(x: float) -> str:
    """``x`` as a signed whole percent with a true minus sign: ``-0.14`` → ``"−14%"``."""
    return f"{x:+.0%}".replace("-", "−")


# ------------------------------------------------------------------------------------ deciders
def _key_heads(ctx: Context):
    hd = ctx.heads()
    key = hd[hd["effect_hi"] < THRESHOLD]  # effects.csv v2 always has the interval (v1 is refused)
    names = components(zip(key.layer, key["head"]))
    return (
        f"{len(key)} of {len(hd)} heads have their bootstrap interval below {THRESHOLD:+.0%} ({names}); strongest: "
        f"{hd.effect.iloc[0]:+.1%}; n = {int(hd.n.iloc[0])} prompts",
        len(key) > 0,
    )


def _key_heads_share(ctx: Context):
    hd = ctx.heads()
    if "share_hi" not in hd or hd.share_hi.isna().all():
        raise Missing("effects.csv has no share columns (made before the calibrated measure; re-run identify)")
    hd = hd.sort_values(["share", "layer", "head"], kind="stable")
    key = hd[hd.share_hi < SHARE_THRESHOLD]
    names = components(zip(key.layer, key["head"]))
    return (
        f"{len(key)} of {len(hd)} heads have their LD ratio's bootstrap interval below {SHARE_THRESHOLD:+.0%} "
        f"({names}); strongest LD ratio: {hd.share.iloc[0]:+.1%}; n = {int(hd.n.iloc[0])} "
        "prompts",
        len(key) > 0,
    )


def _concentration(values: pd.Series, k: int) -> tuple[float, int]:
    """The top ``k`` values' share of the sum of the negative parts (values most negative first), and the fewest
    values whose sum reaches half of it."""
    neg = (-values.clip(upper=0)).sort_values(ascending=False, kind="stable")
    cum = neg.cumsum() / max(float(neg.sum()), 1e-12)
    return float(cum.iloc[k - 1]), int((cum < 0.5).sum()) + 1


def _few_heads(ctx: Context):
    """Version 4: the paper's 5% of heads, by both measures (the module's rule text)."""
    hd = ctx.heads()
    k = math.ceil(FEW_FRACTION * len(hd))
    by_effect, least_e = _concentration(hd.logit_diff.reset_index(drop=True), k)
    here = (
        f"the top {k} of {len(hd)} heads ({FEW_FRACTION:.0%}) hold {by_effect:.0%} of the summed negative change "
        f"by the relative change (half by the top {least_e})"
    )
    if "share" not in hd or hd.share.isna().all():
        return here + "; no LD ratio in effects.csv", by_effect >= 0.5
    by_ratio, least_r = _concentration(hd.share.reset_index(drop=True), k)
    here += f", {by_ratio:.0%} by the LD ratio (half by the top {least_r}); n = {int(hd.n.iloc[0])} prompts"
    both = (by_effect >= 0.5, by_ratio >= 0.5)
    return here, True if all(both) else (False if not any(both) else None)


def _median_depth(ctx: Context) -> tuple[float, list[int], int]:
    hd = ctx.heads()
    L = int(ctx.effects().layer.max()) + 1
    layers = sorted(int(l) for l in hd.layer.iloc[:TOP])
    return statistics.median(l / (L - 1) for l in layers), layers, L


def in_middle(lo: float, hi: float) -> bool | None:
    """The middle-layers verdict on a depth interval ``[lo, hi]``: True inside :data:`MIDDLE` (bounds included),
    False wholly above or below it, None where a bound lies inside the interval."""
    a, b = MIDDLE
    return True if a <= lo and hi <= b else False if hi < a or lo > b else None


def depth_interval(clusters: pd.DataFrame, n_layers: int, top: int = TOP, seed: int = 0) -> tuple[float, float, int]:
    """``(lo, hi, m)``: the :data:`DEPTH_LEVEL` percentile interval of the median depth layer/(L−1) of the ``top``
    heads of most negative mean effect, re-ranked on each of :data:`N_BOOT_DEPTH` resamples of the ``m`` problem
    clusters of ``clusters`` (one task's ``effects_clusters.csv`` rows: :func:`arithmech.methods.effects.top_depths`
    over :func:`arithmech.core.stats.bootstrap_counts`, seeded)."""
    heads = sorted((c for c in clusters.columns if c not in ("task", "cluster", "n")), key=lambda c: _head_key(c))
    means = torch.tensor(clusters[heads].to_numpy(dtype="float64"))
    counts = bootstrap_counts(len(clusters), N_BOOT_DEPTH, seed)
    layers = [_head_key(c)[0] for c in heads]
    med = top_depths(means, torch.tensor(clusters.n.to_numpy()), layers, n_layers, counts, top)
    q = torch.tensor([(1 - DEPTH_LEVEL) / 2, (1 + DEPTH_LEVEL) / 2], dtype=torch.float64)
    lo, hi = torch.quantile(med, q).tolist()
    return lo, hi, len(clusters)


def _head_key(name: str) -> tuple[int, int]:
    layer, head = name.split(".")
    return int(layer), int(head)


def _middle_layers(ctx: Context):
    """Version 12: the median depth layer/(L−1) of the top ``TOP`` heads, with its bootstrap interval over problem
    clusters, every head re-ranked on each resample (:func:`depth_interval`), decided by :func:`in_middle`. The
    paper numbers LLaMA2-7B's 32 layers from 0 ("For the 0–12th layers", "In layers 17–31", §5.2) and puts its key
    heads "between layers 12 and 17" (§5.1): the first layer is depth 0, the last depth 1."""
    hd = ctx.heads()
    L = int(ctx.effects().layer.max()) + 1
    layers = sorted(int(l) for l in hd.layer.iloc[:TOP])
    here = (
        f"median depth of the top {len(layers)}, layer/(L−1) with L = {L}: {statistics.median(layers) / (L - 1):.3f} "
        f"(layers {', '.join(map(str, layers))}) vs the middle third [{MIDDLE[0]:.3f}, {MIDDLE[1]:.3f}]"
    )
    try:
        clusters = ctx.effect_clusters()
    except Missing:
        clusters = None
    if clusters is None or clusters.empty:
        return (
            here + "; no interval: the folder keeps no per-cluster effects (effects_clusters.csv; re-run identify)",
            None,
        )
    lo, hi, m = depth_interval(clusters, L)
    here += f"; {DEPTH_LEVEL:.0%} bootstrap over {m} problem clusters, re-ranked each time: [{lo:.3f}, {hi:.3f}]"
    if m < MIN_CLUSTERS:
        return here + f"; fewer than {MIN_CLUSTERS} problem clusters ({m}): inconclusive", None
    return here, in_middle(lo, hi)


def _logit_diff_ranking(ctx: Context):
    """The paper's measure against the calibrated one, on the heads that matter (their top ``TOP``).

    Not Spearman between the relative change and the logit difference over every head (version 1 of this
    rule): both are means of the same per-prompt change of the answer logit, one divided by the prompt's
    unpatched logit, so they rank alike by construction wherever that logit varies little (ρ = 1.00). The
    share's LD also subtracts X_c's answer logit, so the two can disagree — and do on a model whose heads
    move X_c's answer too."""
    hd = ctx.heads()
    if "share" not in hd or hd.share.isna().all():
        raise Missing("effects.csv has no share columns (made before the calibrated measure; re-run identify)")
    by_effect = list(zip(hd.layer.iloc[:TOP], hd["head"].iloc[:TOP]))
    hs = hd.sort_values(["share", "layer", "head"], kind="stable")
    by_share = list(zip(hs.layer.iloc[:TOP], hs["head"].iloc[:TOP]))
    common = len(set(by_effect) & set(by_share))
    only = lambda a, b: components([x for x in a if x not in set(b)])
    here = (
        f"{common} of the top {TOP} heads in common (by the relative change only: {only(by_effect, by_share)}; "
        f"by the LD ratio only: {only(by_share, by_effect)}); n = {int(hd.n.iloc[0])} prompts"
    )
    return here, True if common >= AGREE_HOLDS else (False if common <= AGREE_FAILS else None)


def _mlps_late(ctx: Context):
    mid, _, L = _median_depth(ctx)
    e = ctx.effects()
    mlp = e[e["head"] == "mlp"].set_index("layer").logit_diff.abs()
    cut = round(mid * (L - 1))
    late, early = float(mlp[mlp.index > cut].mean()), float(mlp[mlp.index <= cut].mean())
    if mlp[mlp.index > cut].empty:
        return f"no MLP after layer {cut}", False
    return f"mean |logit change| after layer {cut}: {late:.3f} vs up to it: {early:.3f}", late > 2 * early


def _transfer(ctx: Context):
    h = ctx.heldout()
    if "relative_drop" not in h:
        raise Missing("heldout.json has no knockout result")
    if not h["base_accuracy"] > 0:
        return (
            f"{h['family']}: the model answers none of the {h.get('n', '?')} held-out prompts right, so "
            "knockout has nothing to remove",
            None,
        )
    here = (
        f"{h['family']}: {h['base_accuracy']:.0%} → {h['knockout_accuracy']:.0%} "
        f"({signed_percent(h['relative_drop'])}); {h['n_heads']} random heads: {h['random_accuracy_mean']:.0%}; "
        f"n = {h.get('n', '?')} prompts"
    )
    if h.get("heads_from", "key heads") != "key heads":  # no key head to test: the claim is about them
        return (
            f"no key head to test; knocked out instead: the {h['heads_from'].replace(' (no key head)', '')}: {here}",
            None,
        )
    m = h.get("n_clusters")
    if m is None or int(m) < MIN_CLUSTERS:  # a point drop on a handful of problems decides nothing
        return here + f"; {m if m is not None else 'uncounted'} problem clusters (fewer than {MIN_CLUSTERS})", None
    return here, h["relative_drop"] <= -0.2 and h["knockout_accuracy"] < h["random_accuracy_mean"]


def _stability(ctx: Context, pattern: str, kind: str | None):
    t = stability_claims(*ctx.stability())
    t = t[(t["set"] == "key") & t.claim.str.contains(pattern) & ((t.kind == kind) if kind else True)]
    if t.empty:
        raise Missing("stability.csv has no such comparison")
    r = t.iloc[0]
    return r.here, (None if pd.isna(r.holds) else bool(r.holds))


IDENTIFY: tuple[Rule, ...] = (
    Rule(
        "key-heads-exist",
        "Some heads pass the key-head threshold",
        "heads below −5% exist (head 12.22: −14.0%); no count given beyond fewer than 5% of heads mattering",
        "holds iff at least one head's effect is below −5% (with its bootstrap interval entirely below −5% where "
        "effects.csv has intervals); does not hold iff none is",
        version=10,
        decider=_key_heads,
        gate=_controlled,
    ),
    Rule(
        "key-heads-exist-share",
        "Some heads pass the key-head threshold, measured as a ratio to the counterfactual's effect",
        "not measured in the paper (the LD ratio, beside the paper's measure)",
        "a head's LD ratio = (mean over prompts of its change of LD = logit(answer) − logit(X_c's answer) when it "
        "alone is patched) / (mean change of LD by the whole counterfactual), −1 when patching it alone moves LD "
        "as much as the whole counterfactual; heads are patched one at a time, so the ratios of several heads need "
        "not add up (they are not shares of one effect: effects.csv's column is still named share); holds iff at "
        f"least one head's bootstrap interval of its ratio lies entirely below {signed_percent(SHARE_THRESHOLD)}; "
        "does not hold iff none does; inconclusive where effects.csv has no share column (results made before it was "
        "measured)",
        version=9,
        decider=_key_heads_share,
        gate=_controlled,
    ),
    Rule(
        "few-heads",
        "A few heads carry the effect",
        "few key heads among 1024 (Fig. 2: below 5% of heads)",
        f"scaled to the model: the top {FEW_FRACTION:.0%} of its heads (rounded up), the paper's fraction; their "
        "concentration = their sum of negative one-at-a-time changes over every head's (a concentration of the "
        "ranking, not a fraction of the effect: one-at-a-time changes need not add up), by the paper's relative "
        "change and by the LD ratio, each ranked by its own measure: holds iff both are ≥ 50%, does not hold iff "
        "both are below; inconclusive where they disagree (decided on the first alone where effects.csv has no "
        "LD ratio); no interval (effects.csv keeps no per-prompt effects)",
        version=9,
        decider=_few_heads,
        gate=_controlled,
    ),
    Rule(
        "middle-layers",
        "The top heads sit in the middle layers",
        "layers 12–17 of 32, numbered 0–31 (§5.2: 'the 0–12th layers', 'layers 17–31'): depth layer/(L−1) 0.39–0.55",
        f"a head's depth is layer/(L−1), the paper's numbering (0 the first layer, 1 the last); the median depth of "
        f"the top {TOP} heads by effect rank, with its {DEPTH_LEVEL:.0%} percentile bootstrap interval over problem "
        f"clusters ({N_BOOT_DEPTH} resamples of the clusters of effects_clusters.csv, every head re-ranked on each "
        "resample's mean relative change): holds iff the interval lies in the middle third [1/3, 2/3]; does not hold "
        "iff it lies entirely above 2/3 or entirely below 1/3; inconclusive where 1/3 or 2/3 lies inside it, below "
        f"{MIN_CLUSTERS} problem clusters, and where the folder keeps no per-cluster effects (runs made before them)",
        version=13,
        decider=_middle_layers,
        gate=_controlled,
    ),
    Rule(
        "logit-diff-ranking",
        "The paper's relative change and the LD ratio pick the same top heads",
        "ranks by the relative change (§4.1)",
        f"the top {TOP} heads by the paper's relative change of the answer logit against the top {TOP} by their ratio "
        "to the counterfactual's LD effect (LD = logit(answer) − logit(X_c's answer), which also moves with X_c's "
        f"answer): holds iff they share ≥ {AGREE_HOLDS} heads, does not hold iff ≤ {AGREE_FAILS}; inconclusive in "
        "between (ranks near the cut are within noise) and where effects.csv has no share",
        version=10,
        decider=_logit_diff_ranking,
        gate=_controlled,
    ),
    Rule(
        "knockout-key-vs-random",
        f"Knocking out the top {K} heads hurts more than {K} random ones",
        "sharp drop by effect rank (Fig. 3)",
        f"holds iff the accuracy with the top {K} heads out lies below every random draw of {K} heads outside the "
        f"top {K} and the key heads (and, where "
        "the file has intervals, its Wilson interval lies below the random draws' 5th percentile — over the problem "
        "clusters where the file counts them, as if each problem's prompts were one trial); does not hold iff it "
        "lies at or above the lowest draw and its interval's lower end at or above the draws' 5th percentile (it "
        "cannot lie below the band); inconclusive in between; the same test against layer-matched random "
        f"draws (as many heads in each layer as the top {K}, outside them and the key heads) where knockout.csv has "
        "them (both must hold; either failing: does not hold), else those are 'not run'; inconclusive below "
        f"{MIN_CLUSTERS} problem clusters among the knockout prompts, the threshold every rule reads; {PAIRED}",
        version=19,
        decider=key_vs_random,
        gate=_controlled,
    ),
    Rule(
        "knockout-ld-key-vs-random",
        f"Knocking out the top {K} heads lowers the logit difference more than {K} random ones",
        "not measured (Fig. 3 reads accuracy)",
        f"on the logit difference logit(answer) − logit(X_c's answer) at END, its mean over the knockout prompts with "
        "a 95% cluster-robust t interval over their problem clusters: holds iff the top "
        f"{K} heads' mean lies below every random draw of {K} heads outside the top {K} and the key heads and its "
        "interval below the 5th percentile of the draws' means, and the same against the layer-matched draws where "
        "knockout.csv has them; does not hold iff its lower end lies at or above either 5th percentile; "
        f"inconclusive otherwise, below {MIN_CLUSTERS} problem clusters, with fewer than {MIN_DRAWS} distinct draws, "
        f"and where knockout.csv has no logit difference (made before it); {PAIRED}; {DISTINCT}",
        version=7,
        decider=ld_key_vs_random,
        gate=_controlled,
    ),
    Rule(
        "knockout-random-flat",
        f"Random knockout of {K} heads keeps accuracy within 2 points",
        "within 2% (Fig. 3)",
        f"holds iff the mean accuracy over random draws of {K} heads (outside the top {K} and "
        "the key heads) is within 2 points of "
        f"the intact accuracy; inconclusive below {MIN_CLUSTERS} problem clusters among the knockout prompts; "
        f"{CROSSFIT} (the draws' pooled mean against the pooled intact accuracy)",
        version=15,
        decider=random_flat,
        gate=_controlled,
    ),
    Rule(
        "mlps-late",
        "MLPs after the top heads matter more than those before",
        "MLPs 0–16 ≈ ±0%, after 17 ≈ ±10%",
        f"holds iff the mean |logit change| of the MLPs after the median layer of the top {TOP} heads is more than "
        "twice that of the MLPs up to it",
        version=9,
        decider=_mlps_late,
        gate=_controlled,
    ),
    Rule(
        "transfer",
        "Key heads transfer to an unseen template family",
        "SVAMP: −66% relative after knockout",
        "holds iff knocking the key heads (found without the held-out family) out lowers the held-out family's "
        "accuracy by ≥ 20% relative and below the mean of as many random heads; inconclusive without key heads and "
        f"below {MIN_CLUSTERS} problem clusters among the held-out prompts (or where heldout.json does not count them)",
        version=11,
        decider=_transfer,
        gate=_controlled,
    ),
)
"""The paper's claims about its key heads, in the order the book states them."""

STABILITY: tuple[Rule, ...] = (
    Rule(
        "key-heads-stable",
        "The key heads are the same for independent draws of prompts",
        "one draw, no interval (Fig. 2)",
        "operator counterfactual, largest sample size, key sets (whole bootstrap interval below −5%) of ≥ 3 seeds: "
        "holds iff their mean pairwise Jaccard overlap is ≥ 0.8 and none is below 0.5; does not hold iff the mean "
        "is below 0.5; inconclusive otherwise or when no run finds a key head",
        version=2,
        decider=lambda ctx: _stability(ctx, "independent draws", "operator"),
    ),
    Rule(
        "counterfactuals-agree",
        "Operator and operand counterfactuals find the same key heads",
        "operator counterfactual only (§4.1)",
        "same seed and size, key sets of the two counterfactuals: holds iff the mean Jaccard over seeds is ≥ 0.8 "
        "and none is below 0.5; does not hold iff the mean is below 0.5; inconclusive otherwise",
        version=1,
        decider=lambda ctx: _stability(ctx, "Operator and operand", None),
    ),
)
"""Beyond the paper: is the key-head set a stable measurement? (:mod:`arithmech.steps.stability`)"""
