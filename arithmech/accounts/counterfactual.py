"""Stolfo's result-preserving counterfactual beside identify's operator counterfactual and the operand one.

Every head and MLP is path-patched at END (:func:`arithmech.methods.patching.path_patch`, exact, identify's method)
from each counterfactual's X_c into the grid prompt X_r. A component's effect is the mean change of the answer
digit's logit (``logit_p - logit_o``; negative: the patch lowers the answer). For a **group** (the studied heads,
the flagged MLPs) the effects are summed per prompt. The **ratio** of a group is its mean effect under the
result-preserving counterfactual over its mean effect under the operand counterfactual, on the same X_r prompts
(a ratio of means, the same cluster-bootstrap resamples for both; clusters: operand pairs): near 0 the group
writes the result (nothing changes when the result stays), near 1 it carries operands (it still mixes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from arithmech.accounts.grid import counterfactual_prompts
from arithmech.core.stats import bootstrap_mean_intervals, bootstrap_ratio_intervals
from arithmech.data.batches import answer_ids
from arithmech.methods.patching import path_patch

KINDS = ("operator", "operand", "result-preserving")


def patch_effects(model, tok, samples: Sequence, kind: str, seed: int, batch_size: int) -> tuple[list, torch.Tensor]:
    """The samples that have a counterfactual of ``kind`` (:func:`arithmech.accounts.grid.counterfactual_prompts`)
    and ``(n, L, H + 1)`` each component's change of the answer logit when patched from it (index ``H``: the
    MLP)."""
    kept = counterfactual_prompts(tok, samples, kind, seed)
    if not kept:
        return [], torch.empty(0)
    p = path_patch(
        model, tok, [s.clean for s in kept], [s.corrupt for s in kept], answer_ids(tok, kept), batch_size=batch_size
    )
    return kept, (p.logit_p - p.logit_o[:, :, None]).float()


def group_sum(effects: torch.Tensor, heads: Sequence[tuple[int, int]], mlps: Sequence[int]) -> dict[str, torch.Tensor]:
    """``(n,)`` per prompt: the summed effect of ``heads`` and of the MLPs of ``mlps``."""
    H = effects.shape[2] - 1
    zero = torch.zeros(effects.shape[0])
    return {
        "heads": sum((effects[:, l, h] for l, h in heads), zero),
        "mlp": sum((effects[:, l, H] for l in mlps), zero),
    }


def compare(
    model,
    tok,
    samples: Sequence,
    heads: Sequence[tuple[int, int]],
    mlps: Sequence[int],
    seed: int,
    n_boot: int,
    batch_size: int,
) -> dict:
    """Each counterfactual's group effects with cluster intervals, and each group's ratio (result-preserving over
    operand) on the prompts that have both; ``rows``: per component and counterfactual, the mean effect."""
    out: dict = {"groups": {}, "rows": []}
    per: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        kept, eff = patch_effects(model, tok, samples, kind, seed, batch_size)
        if not kept:
            continue
        keys = [(s.template, s.a, s.b) for s in kept]
        clusters = [(s.a, s.b) for s in kept]
        sums = group_sum(eff, heads, mlps)
        per[kind] = {"keys": keys, "sums": sums}
        for g, x in sums.items():
            lo, hi = bootstrap_mean_intervals(x[:, None], n_boot, seed=seed, clusters=clusters)
            out["groups"][f"{kind}/{g}"] = {
                "mean": float(x.mean()),
                "lo": float(lo[0]),
                "hi": float(hi[0]),
                "n": len(kept),
                "clusters": len(set(clusters)),
            }
        mean = eff.mean(0)
        L, H1 = mean.shape
        out["rows"] += [
            {"counterfactual": kind, "layer": l, "head": "mlp" if h == H1 - 1 else h, "effect": float(mean[l, h])}
            for l in range(L)
            for h in range(H1)
        ]
    if "operand" in per and "result-preserving" in per:
        both = sorted(set(per["operand"]["keys"]) & set(per["result-preserving"]["keys"]))
        clusters = [(a, b) for _, a, b in both]
        out["clusters_cf"] = len(set(clusters))
        for g in ("heads", "mlp"):
            by: dict[str, dict] = {
                k: dict(zip(per[k]["keys"], per[k]["sums"][g].tolist())) for k in ("operand", "result-preserving")
            }
            num = torch.tensor([by["result-preserving"][k] for k in both])
            den = torch.tensor([by["operand"][k] for k in both])
            lo, hi = bootstrap_ratio_intervals(num[:, None], den, n_boot, seed=seed, clusters=clusters)
            dlo, dhi = bootstrap_mean_intervals(den[:, None], n_boot, seed=seed, clusters=clusters)
            out[f"rho_{g}"] = (float(num.mean() / den.mean()), float(lo[0]), float(hi[0]))
            out[f"den_{g}"] = (float(den.mean()), float(dlo[0]), float(dhi[0]))
    else:
        out["clusters_cf"] = 0
        for g in ("heads", "mlp"):
            out[f"rho_{g}"], out[f"den_{g}"] = (np.nan, np.nan, np.nan), (np.nan, np.nan, np.nan)
    return out
