"""From path-patching results to effects with intervals, rankings and key heads (paper §4.1, Fig. 2).

::

    Patched (n samples × L layers × (H heads + MLP))
        ──► effects_frame: mean relative change per head / MLP, with a 95% bootstrap interval over prompts
        ──► ranking: heads and MLPs, most negative effect first
        ──► key_heads: the heads (and MLPs) whose whole interval lies below the threshold

The paper calls a head *key* when its mean effect is below −5%. A mean over a few hundred prompts
moves when other prompts are drawn, so here a head is key only if the **upper end of its 95%
bootstrap interval** is below the threshold (``effect_hi < threshold``): a head that passes on
these prompts by chance does not. The interval resamples prompts (percentile bootstrap,
:func:`arithmech.core.stats.bootstrap_mean_intervals`, ``n_boot`` resamples, seeded), all heads
with the same resamples.

**A calibrated measure beside the paper's.** The relative change of the raw answer logit depends on the
model's logit scale (−5% of SmolLM2's answer logit, ≈30, is 1.5 logits; of the embedded model's, ≈12, 0.6).
So each component also gets its **share** of the whole counterfactual's effect on the logit difference
``LD = logit(answer_r) - logit(answer_c)`` (``answer_c``: the model's top-1 on ``X_c``;
:mod:`arithmech.methods.patching`)::

    share = mean_k[LD_k(patched) - LD_k(X_r)] / mean_k[LD_k(X_r) - LD_k(X_c)]      # k: prompts

a ratio of means (a mean of ratios blows up on prompts with a small total), −1 when the sender carries the
whole effect, negative when it lowers the answer (the paper's sign). Its interval resamples the same
prompts for numerator and denominator, with the same ``n_boot`` and seed as ``effect``'s
(:func:`arithmech.core.stats.bootstrap_ratio_intervals`). :func:`key_heads_by_share` is the rule under it:
``share_hi < share_threshold`` (−5%: the head carries at least 5% of the counterfactual's effect).

>>> eff = effects_frame(patched, "addition", seed=0)      # rows task, layer, head, effect, effect_lo, …
>>> key_heads(eff, "addition")["heads"][:3]
>>> key_heads_by_share(eff, "addition", -0.05)["heads"][:3]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import torch

from arithmech.core.stats import bootstrap_mean_intervals, bootstrap_ratio_intervals
from arithmech.methods.patched import FIELDS as PATCHED_FIELDS
from arithmech.methods.patching import Patched
from arithmech.paper import KEY_THRESHOLD, N_BOOT

LEVEL = 0.95
KEY_RULE = "effect_hi < threshold"
SHARE_RULE = "share_hi < share_threshold"
SHARE_METRIC = (
    "share = mean(LD(patched) - LD(X_r)) / mean(LD(X_r) - LD(X_c)) over prompts, "
    "LD = logit(answer_r) - logit(answer_c), answer_c = the model's top-1 token at END of X_c"
)


def effects_frame(
    p: Patched, task: str, prob: bool = True, n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL, clusters=None
) -> pd.DataFrame:
    """Mean effects over samples as rows ``task, layer, head, effect, effect_lo, effect_hi, logit_diff, prob,
    prob_change, n, share, share_lo, share_hi`` (``head = "mlp"`` for MLP rows; ``prob`` = mean patched
    P({C}), NaN unless computed; ``share``: the module docstring's, NaN where ``p`` has no counterfactual
    answer logits).

    ``effect_lo`` / ``effect_hi``: the ``level`` percentile bootstrap interval of ``effect`` over the
    ``n`` prompts (``n_boot`` resamples from ``seed``; the same seed gives the same interval), or over their
    ``clusters`` (one label per prompt: a cluster bootstrap, :func:`arithmech.core.stats.bootstrap_counts`);
    ``share_lo`` / ``share_hi``: the same resamples' interval of the ratio of means."""
    n, L, H1 = p.logit_p.shape
    rel = p.relative_change()
    lo, hi = bootstrap_mean_intervals(rel, n_boot, level, seed, clusters)
    cols = {"effect": rel.mean(0), "effect_lo": lo, "effect_hi": hi, "logit_diff": p.logit_diff().mean(0)}
    if prob and p.lse_p is not None:
        cols["prob"] = p.prob().mean(0)
        cols["prob_change"] = (p.prob() - p.prob_o()[..., None]).mean(0)
    else:  # same columns either way; NaN = not computed
        cols["prob"] = cols["prob_change"] = torch.full((L, H1), float("nan"))
    after = {k: torch.full((L, H1), float("nan")) for k in ("share", "share_lo", "share_hi")}
    if p.counter_p is not None and p.ld_r is not None:
        after["share"] = p.share()
        after["share_lo"], after["share_hi"] = bootstrap_ratio_intervals(
            p.ld_effect(), p.ld_total(), n_boot, level, seed, clusters
        )
    n_clusters = n if clusters is None else len(set(clusters))  # the units the intervals resample
    rows = []
    for l in range(L):
        for h in range(H1):
            rows.append(
                {
                    "task": task,
                    "layer": l,
                    "head": "mlp" if h == H1 - 1 else str(h),
                    **{k: float(v[l, h]) for k, v in cols.items()},
                    "n": n,
                    **{k: float(v[l, h]) for k, v in after.items()},
                    "n_clusters": n_clusters,
                }
            )
    return pd.DataFrame(rows)


def ranking(effects: pd.DataFrame, task: str) -> tuple[list[tuple[int, int]], list[int]]:
    """Heads ``(layer, head)`` and MLP layers of ``task``, most negative effect first (ties: layer, head)."""
    order = ranked(effects, task)
    return [c for c in order if c[1] != "mlp"], [c[0] for c in order if c[1] == "mlp"]


def ranked(effects: pd.DataFrame, task: str) -> list[tuple]:
    """Heads ``(layer, head)`` and MLPs ``(layer, "mlp")`` of ``task`` in one list, most negative effect first
    (ties: layer, head): :func:`ranking`'s two orders merged (the faithfulness circuits,
    :mod:`arithmech.methods.faithfulness`)."""
    df = effects[effects["task"] == task].sort_values(["effect", "layer", "head"], kind="stable")
    return [(int(l), "mlp") if h == "mlp" else (int(l), int(h)) for l, h in zip(df["layer"], df["head"])]


def key_heads(effects: pd.DataFrame, task: str, threshold: float = KEY_THRESHOLD) -> dict:
    """Key heads (and MLPs) of ``task``: the upper end of the effect's bootstrap interval below
    ``threshold`` (the paper: mean below −5%), ranked by effect. ``effects`` needs ``effect_hi``
    (:func:`effects_frame`); the rule and the interval are recorded in the result."""
    if "effect_hi" not in effects.columns:
        raise ValueError(
            "key_heads needs the effect's interval (column effect_hi, written by effects_frame "
            "since effects.csv version 2): re-run identify"
        )
    df = effects[(effects["task"] == task) & (effects["effect_hi"] < threshold)]
    df = df.sort_values(["effect", "layer", "head"], kind="stable")
    row = lambda r, i: {
        "rank": i + 1,
        "layer": int(r.layer),
        "effect": float(r.effect),
        "effect_lo": float(r.effect_lo),
        "effect_hi": float(r.effect_hi),
        "logit_diff": float(r.logit_diff),
    }
    heads = [
        {**row(r, i), "head": int(r.head), "name": f"{int(r.layer)}.{int(r.head)}"}
        for i, r in enumerate(df[df["head"] != "mlp"].itertuples())
    ]
    mlps = [row(r, i) for i, r in enumerate(df[df["head"] == "mlp"].itertuples())]
    n_below = int(((effects["task"] == task) & (effects["effect"] < threshold) & (effects["head"] != "mlp")).sum())
    return {
        "task": task,
        "threshold": threshold,
        "metric": "effect = (logit_p - logit_o) / logit_o",
        "rule": f"{KEY_RULE}: the whole 95% percentile bootstrap interval of the mean effect (resampling "
        "prompts) lies below the threshold",
        "n_heads_mean_below": n_below,
        "heads": heads,
        "mlps": mlps,
    }


def key_heads_by_share(effects: pd.DataFrame, task: str, share_threshold: float) -> dict:
    """Key heads (and MLPs) of ``task`` under the calibrated measure: the upper end of the share's bootstrap
    interval below ``share_threshold`` (``share_hi < share_threshold``), ranked by share. Rows without a
    share (NaN: results made before it was measured) pass no rule. Returns ``{"rule", "threshold", "metric",
    "n_heads_mean_below", "heads", "mlps"}``."""
    if "share_hi" not in effects.columns:
        raise ValueError(
            "key_heads_by_share needs the share's interval (column share_hi, written by effects_frame): re-run identify"
        )
    mine = effects["task"] == task
    df = effects[mine & (effects["share_hi"] < share_threshold)].sort_values(["share", "layer", "head"], kind="stable")
    row = lambda r, i: {
        "rank": i + 1,
        "layer": int(r.layer),
        "share": float(r.share),
        "share_lo": float(r.share_lo),
        "share_hi": float(r.share_hi),
        "effect": float(r.effect),
    }
    heads = [
        {**row(r, i), "head": int(r.head), "name": f"{int(r.layer)}.{int(r.head)}"}
        for i, r in enumerate(df[df["head"] != "mlp"].itertuples())
    ]
    mlps = [row(r, i) for i, r in enumerate(df[df["head"] == "mlp"].itertuples())]
    n_below = int((mine & (effects["share"] < share_threshold) & (effects["head"] != "mlp")).sum())
    return {
        "threshold": share_threshold,
        "metric": SHARE_METRIC,
        "rule": f"{SHARE_RULE}: the whole 95% percentile bootstrap interval of the head's share of the "
        "counterfactual's logit-difference effect (resampling prompts) lies below the threshold: it "
        "carries at least that share of the counterfactual's effect",
        "n_heads_mean_below": n_below,
        "heads": heads,
        "mlps": mlps,
    }


TOP = 10  # heads studied where none is key (SmolLM2: no interval passes -5%)


def cluster_effects(p: Patched, task: str, clusters: Sequence) -> pd.DataFrame:
    """Each head's mean relative change over the prompts of each problem cluster (``effects_clusters.csv``): one row
    per cluster (in order of first appearance), columns ``task``, ``cluster`` (its label as text), ``n`` (its prompts)
    and one per head, ``"layer.head"`` (MLPs left out). ``Σ_c n_c · mean_c / Σ_c n_c`` is effects.csv's ``effect``;
    resampling the rows re-ranks every head as a cluster bootstrap would (:func:`top_depths`)."""
    rel = p.relative_change(warn=False)[:, :, :-1]  # (n, L, H): heads only
    n, L, H = rel.shape
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster labels for {n} prompts: one label per prompt")
    ids: dict = {}
    row = torch.tensor([ids.setdefault(c, len(ids)) for c in clusters])
    sums = torch.zeros(len(ids), L * H, dtype=torch.float64).index_add_(0, row, rel.reshape(n, -1).double())
    counts = torch.bincount(row, minlength=len(ids)).double()
    names = [f"{l}.{h}" for l in range(L) for h in range(H)]
    means = pd.DataFrame((sums / counts[:, None]).numpy(), columns=names)
    label = [":".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in ids]
    return pd.concat([pd.DataFrame({"task": task, "cluster": label, "n": counts.long().numpy()}), means], axis=1)


def top_depths(
    means: torch.Tensor, n: torch.Tensor, layers: Sequence[int], n_layers: int, counts: torch.Tensor, top: int
):
    """The median depth ``layer / (n_layers − 1)`` of the ``top`` heads of most negative mean effect on each
    resample: ``means`` ``(m, heads)`` each cluster's mean effect per head (:func:`cluster_effects`, heads in
    (layer, head) order, ``layers`` their layers), ``n`` ``(m,)`` the clusters' prompts, ``counts`` ``(B, m)`` how
    often each resample draws each cluster (:func:`arithmech.core.stats.bootstrap_counts`). A resample's mean effect
    is over the prompts it draws (``Σ counts·n·means / Σ counts·n``); ties keep the (layer, head) order (stable);
    the median of an even ``top`` is the mean of the middle two. Returns ``(B,)`` float64."""
    w = counts.double() * n.double()[None, :]
    mean = w @ means.double() / w.sum(1, keepdim=True)  # (B, heads)
    order = torch.sort(mean, dim=1, stable=True).indices[:, :top]
    depth = torch.tensor(list(layers), dtype=torch.float64)[order] / (n_layers - 1)
    return depth.quantile(0.5, dim=1)


def studied_heads(
    effects: pd.DataFrame, task: str, threshold: float = KEY_THRESHOLD, top: int = TOP
) -> tuple[list, str]:
    """The heads a later step studies, and where they come from: the key heads of ``task``
    (:func:`key_heads`), or, where none passes ``threshold``, the ``top`` heads of most negative effect
    (:func:`ranking`). One rule for every model: the transfer test, the held-out family and analyze use it,
    so a model without key heads is studied on its strongest heads, and says so (the knockout compares
    its own ``k``: the key heads, or the top 8 of its random comparison).

    Returns ``([(layer, head), ...], source)``, ``source`` ``"key heads"`` or ``"top <top> by effect rank
    (no key head)"``."""
    key = [(h["layer"], h["head"]) for h in key_heads(effects, task, threshold)["heads"]]
    if key:
        return key, "key heads"
    return ranking(effects, task)[0][:top], f"top {top} by effect rank (no key head)"


def concat_patched(ps: Sequence[Patched]) -> Patched:
    """The samples of several :class:`Patched` results, in order, as one."""
    cat = lambda f: None if any(getattr(p, f) is None for p in ps) else torch.cat([getattr(p, f) for p in ps])
    joined: dict[str, Any] = {f: cat(f) for f in PATCHED_FIELDS}  # the optional fields stay None
    return Patched(**joined)
