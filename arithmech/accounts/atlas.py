"""The operand-grid neuron atlas: rank the flagged MLPs' neurons, check the ranking, map, classify and ablate them.

From the clean pass (:meth:`arithmech.accounts.runner.Runner.clean`) over every grid prompt:

1. **attribution** of each neuron on each prompt, ``(mu - act) * dLD/dact`` (``mu``: its grid mean), and its
   score, the mean absolute attribution; the top ``k`` of each flagged layer are studied;
2. **parity** (:func:`parity`): attribution against exact mean-ablation of single neurons (half top, half random)
   on a prompt sample;
3. **maps** (:func:`maps`): each top neuron's mean END activation per cell over the templates, classified by
   :func:`arithmech.accounts.classify.classify`;
4. **faithfulness** of the top neurons, **associated against unassociated** ablation and the **shared subspace**
   (:mod:`arithmech.accounts.ablate`), on the intervention sample.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from arithmech.accounts import ablate, classify
from arithmech.accounts.rules import FAITHFUL_F, SUBSPACE_DIM
from arithmech.accounts.runner import Clean, Runner, exact_neuron_effects
from arithmech.core.stats import bootstrap_mean_intervals, bootstrap_ratio_intervals, wilson_interval


def attribution(clean: Clean) -> tuple[dict[int, torch.Tensor], dict[int, torch.Tensor], dict[int, torch.Tensor]]:
    """Per flagged layer: the grid means ``mu`` (width,), the attributions (n, width) and the scores (width,)."""
    mu = {l: a.mean(0) for l, a in clean.acts.items()}
    attr = {l: (mu[l] - clean.acts[l]) * clean.grads[l] for l in clean.acts}
    return mu, attr, {l: a.abs().mean(0) for l, a in attr.items()}


def ranking(scores: dict[int, torch.Tensor]) -> dict[int, list[int]]:
    """Each layer's neurons, highest score first."""
    return {l: s.argsort(descending=True).tolist() for l, s in scores.items()}


def parity(
    runner: Runner, rows: Sequence[int], attr, order, mu, n_neurons: int, seed: int
) -> tuple[pd.DataFrame, dict]:
    """Attribution against exact single-neuron mean ablation on the prompts ``rows`` of ``runner`` (its own
    prompts are these rows of the grid): per neuron the mean of each, and the correlations over (neuron, prompt)
    pairs and over neurons."""
    g = torch.Generator().manual_seed(seed)
    layers = list(order)
    per_layer = max(1, n_neurons // (2 * len(layers)))
    out, pairs_a, pairs_e = [], [], []
    for l in layers:
        top = order[l][:per_layer]
        rest = order[l][per_layer:]
        rand = [rest[i] for i in torch.randperm(len(rest), generator=g)[:per_layer].tolist()]
        neurons = top + rand
        exact = exact_neuron_effects(runner, l, neurons, mu[l])  # (k, m)
        approx = attr[l][rows][:, neurons].T
        pairs_a.append(approx.flatten())
        pairs_e.append(exact.flatten())
        out += [
            {
                "layer": l,
                "neuron": i,
                "kind": "top" if j < len(top) else "random",
                "attribution": float(approx[j].mean()),
                "exact": float(exact[j].mean()),
            }
            for j, i in enumerate(neurons)
        ]
    df = pd.DataFrame(out)
    a, e = torch.cat(pairs_a), torch.cat(pairs_e)
    return df, {
        "r_pairs": float(torch.corrcoef(torch.stack([a, e]))[0, 1]),
        "r_neurons": float(np.corrcoef(df.attribution, df.exact)[0, 1]),
        "sign_agreement": float(((a > 0) == (e > 0)).float().mean()),
        "n_prompts": len(rows),
        "n_neurons": len(df),
    }


def maps(
    samples: Sequence, acts: dict[int, torch.Tensor], top: dict[int, list[int]], operands
) -> tuple[np.ndarray, list]:
    """``(neurons, cells)`` each top neuron's mean activation per grid cell over the templates, and the neurons'
    ``(layer, index)`` in row order. A cell no template has is the neuron's grid mean."""
    ab = classify.cells(operands)
    where = {(int(a), int(b)): i for i, (a, b) in enumerate(ab)}
    cell = torch.tensor([where[(s.a, s.b)] for s in samples])
    ids, rows = [], []
    for l, idx in top.items():
        x = acts[l][:, idx]  # (n, k)
        sums = torch.zeros(len(ab), len(idx)).index_add_(0, cell, x)
        counts = torch.zeros(len(ab)).index_add_(0, cell, torch.ones(len(cell)))
        m = torch.where(counts[:, None] > 0, sums / counts.clamp(min=1)[:, None], x.mean(0))
        rows.append(m.T)
        ids += [(l, i) for i in idx]
    return torch.cat(rows).numpy(), ids


def neuron_table(ids: list, scores, c: classify.Classified, maps_: np.ndarray) -> pd.DataFrame:
    """One row per top neuron: its score, heuristic class and pattern, periodic fit, held-out R^2 of each, its own
    permuted-grid 95th percentile."""
    h, p = c.heuristic, c.periodic
    return pd.DataFrame(
        {
            "neuron": [f"{l}.{i}" for l, i in ids],
            "layer": [l for l, _ in ids],
            "index": [i for _, i in ids],
            "score": [float(scores[l][i]) for l, i in ids],
            "class": [c.kind(j) for j in range(len(ids))],
            "pattern": [c.h_family.names[b] for b in h.best],
            "r2_heuristic": h.r2_heldout,
            "periodic_fit": [c.p_family.names[b] for b in p.best],
            "period": [c.p_family.kinds[b] for b in p.best],
            "r2_periodic": p.r2_heldout,
            "null_q95": c.null_q95,
            "slope": h.slope,
            "spread": maps_.max(1) - maps_.min(1),
        }
    )


def association_masks(samples, ids, c: classify.Classified, operands, width: int) -> dict[int, torch.Tensor]:
    """Per flagged layer ``(n, width)`` bool: the classified top neurons whose pattern covers each prompt's cell."""
    ab = classify.cells(operands)
    where = {(int(a), int(b)): i for i, (a, b) in enumerate(ab)}
    cell = np.array([where[(s.a, s.b)] for s in samples])
    ok = c.classified()
    out: dict[int, torch.Tensor] = {}
    for j, (l, i) in enumerate(ids):
        m = out.setdefault(l, torch.zeros(len(samples), width, dtype=torch.bool))
        if ok[j]:
            covers = classify.bernoulli_pattern(ab, c.h_family, int(c.heuristic.best[j]), float(c.heuristic.slope[j]))
            m[:, i] = torch.from_numpy(covers[cell])
    return out


def associated_vs_unassociated(runner: Runner, samples, ids, c, operands, mu, seed: int, n_boot: int) -> dict:
    """LD drops of each prompt's associated neurons and of as many unassociated top neurons of the same layers
    (prompts with at least one associated neuron), their paired difference with a cluster interval."""
    width = next(iter(mu.values())).shape[0]
    assoc = association_masks(samples, ids, c, operands, width)
    top_mask = {l: torch.zeros(width, dtype=torch.bool) for l in assoc}
    for l, i in ids:
        top_mask[l][i] = True
    pool = {l: top_mask[l][None] & ~a for l, a in assoc.items()}
    un = ablate.unassociated_masks(assoc, pool, torch.Generator().manual_seed(seed))
    base = runner.ld()
    drop_a = base - ablate.masked_ablation(runner, assoc, mu)
    drop_u = base - ablate.masked_ablation(runner, un, mu)
    n_assoc = torch.stack([a.sum(1) for a in assoc.values()]).sum(0)
    has = n_assoc > 0
    keep = has.nonzero()[:, 0]
    clusters = [(samples[r].a, samples[r].b) for r in keep.tolist()]
    diff = (drop_a - drop_u)[keep]
    if len(keep) == 0:
        return {"assoc_diff": (np.nan, np.nan, np.nan), "assoc_clusters": 0, "n": 0}
    lo, hi = bootstrap_mean_intervals(diff[:, None], n_boot, seed=seed, clusters=clusters)
    return {
        "assoc_diff": (float(diff.mean()), float(lo[0]), float(hi[0])),
        "assoc_drop": float(drop_a[keep].mean()),
        "unassoc_drop": float(drop_u[keep].mean()),
        "assoc_clusters": len(set(clusters)),
        "n": len(keep),
        "mean_associated": float(n_assoc[keep].float().mean()),
    }


def faithful(runner: Runner, order, mu, width: int) -> tuple[pd.DataFrame, dict]:
    """The faithfulness curve of the top neurons and the smallest faithful ``k``."""
    curve = ablate.faithfulness(runner, order, mu, ablate.ks_for(width))
    k, F = ablate.smallest_faithful(curve, FAITHFUL_F)
    ks = sorted(curve)
    df = pd.DataFrame({"k": ks, "ld": [curve[x] for x in ks], "faithfulness": [F[x] for x in ks]})
    return df, {"b1_k": k, "f_denominator": curve[ks[-1]] - curve[ks[0]], "width": width}


def shared_subspace(model, runner: Runner, clean_acts, top, mu, samples, seed: int, n_boot: int) -> dict:
    """D2: LD drops of ablating the top neurons and of removing only their write's top-``SUBSPACE_DIM``
    principal directions, and the ratio with its cluster interval."""
    bases = ablate.subspace_bases(model, runner, clean_acts, mu, top, SUBSPACE_DIM)
    base = runner.ld()
    masks = {l: torch.zeros(runner.n, mu[l].shape[0], dtype=torch.bool) for l in top}
    for l, idx in top.items():
        masks[l][:, idx] = True
    d_all = ablate.masked_ablation(runner, masks, mu) - base  # negative: a drop
    d_sub = ablate.subspace_removal(runner, top, mu, bases) - base
    clusters = [(s.a, s.b) for s in samples]
    lo, hi = bootstrap_mean_intervals(d_all[:, None], n_boot, seed=seed, clusters=clusters)
    rlo, rhi = bootstrap_ratio_intervals(d_sub[:, None], d_all, n_boot, seed=seed, clusters=clusters)
    return {
        "all": (float(d_all.mean()), float(lo[0]), float(hi[0])),
        "sub": float(d_sub.mean()),
        "ratio": (float(d_sub.mean() / d_all.mean()), float(rlo[0]), float(rhi[0])),
        "dim": SUBSPACE_DIM,
    }


def class_rate(c: classify.Classified) -> tuple[float, float, float]:
    """The classified share of the top neurons with its Wilson interval."""
    k, n = int(c.classified().sum()), len(c.classified())
    lo, hi = wilson_interval(k, n)
    return k / n, lo, hi


def periodic_wins(c: classify.Classified, n_boot: int, seed: int) -> tuple[float, float, float] | None:
    """The share of fitted neurons whose periodic fit wins, with a bootstrap interval over neurons."""
    w = torch.tensor(c.periodic_wins(), dtype=torch.float64)
    if len(w) < 2:
        return None
    lo, hi = bootstrap_mean_intervals(w[:, None], n_boot, seed=seed)
    return float(w.mean()), float(lo[0]), float(hi[0])
