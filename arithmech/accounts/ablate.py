"""The causal tests at END, each against a control of matched size: faithfulness of the top neurons, associated
against unassociated heuristic neurons, the shared subspace, and the periodic digit-logit removal.

Every function takes a :class:`~arithmech.accounts.runner.Runner` on the prompts it tests and returns LD per
prompt (or a curve); the neuron means ``mu`` are the grid means of the END activations (mean ablation).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from arithmech.accounts import fourier
from arithmech.accounts.runner import Runner, set_neurons
from arithmech.core.models import module, weight


def down(runner: Runner, layer: int) -> str:
    """The path of layer ``layer``'s ``down_proj`` (its input: the neuron activations)."""
    return runner.path("mlp", layer) + ".down_proj"


def ks_for(width: int) -> list[int]:
    """Neurons kept per layer on the faithfulness curve: 0, powers of two, 5% of the width, the width."""
    ks = {0, width, max(1, int(0.05 * width))} | {2**i for i in range(width.bit_length()) if 2**i < width}
    return sorted(ks)


def faithfulness(
    runner: Runner, ranking: dict[int, list[int]], mu: dict[int, torch.Tensor], ks: Sequence[int]
) -> dict[int, float]:
    """Mean LD with the top ``k`` neurons (``ranking``: each flagged layer's neurons, best first) of every flagged
    layer kept and the rest mean-ablated, for each ``k``; ``k = width`` is the clean model, ``k = 0`` every neuron
    of the flagged layers ablated."""
    out = {}
    for k in ks:
        edits = {}
        for layer, order in ranking.items():
            mask = torch.ones(mu[layer].shape[0], dtype=torch.bool)
            mask[order[:k]] = False
            edits[down(runner, layer)] = set_neurons(mu[layer], mask)
        out[k] = float(runner.ld(edit_in=edits).mean())
    return out


def smallest_faithful(curve: dict[int, float], f: float) -> tuple[int | None, dict[int, float]]:
    """``F(k) = (LD_k - LD_0) / (LD_width - LD_0)`` per ``k`` and the smallest ``k`` with ``F >= f`` (None if
    none)."""
    ks = sorted(curve)
    lo, hi = curve[ks[0]], curve[ks[-1]]
    den = hi - lo
    F = {k: (curve[k] - lo) / den if den else float("nan") for k in ks}
    return next((k for k in ks if F[k] >= f), None), F


def masked_ablation(runner: Runner, masks: dict[int, torch.Tensor], mu: dict[int, torch.Tensor]) -> torch.Tensor:
    """LD per prompt with each prompt's own neurons (``masks[layer]``: ``(n, width)`` bool) mean-ablated."""
    return runner.ld(edit_in={down(runner, l): set_neurons(mu[l], m) for l, m in masks.items()})


def unassociated_masks(
    assoc: dict[int, torch.Tensor], pool: dict[int, torch.Tensor], generator: torch.Generator
) -> dict[int, torch.Tensor]:
    """Per prompt and layer, as many neurons as it has associated ones, drawn from ``pool`` (``(n, width)`` bool:
    the layer's top neurons not associated with that prompt); fewer where the pool is smaller."""
    out = {}
    for layer, a in assoc.items():
        m = torch.zeros_like(a)
        for r in range(a.shape[0]):
            cand = pool[layer][r].nonzero()[:, 0]
            k = min(int(a[r].sum()), len(cand))
            m[r, cand[torch.randperm(len(cand), generator=generator)[:k]]] = True
        out[layer] = m
    return out


def subspace_bases(
    model,
    runner: Runner,
    acts: dict[int, torch.Tensor],
    mu: dict[int, torch.Tensor],
    top: dict[int, list[int]],
    dim: int,
) -> dict[int, torch.Tensor]:
    """Per flagged layer, ``(d, dim)``: the top principal directions (over the grid) of the top neurons' joint write
    ``W_down[:, top] (act - mu)``."""
    out = {}
    for layer, idx in top.items():
        w = weight(module(model, runner.arch, "mlp", layer).get_submodule("down_proj")).float()[:, idx]
        write = (acts[layer][:, idx] - mu[layer][idx]) @ w.T  # (n, d)
        _, _, vh = torch.linalg.svd(write - write.mean(0), full_matrices=False)
        out[layer] = vh[:dim].T.contiguous()
    return out


def subspace_removal(runner: Runner, top: dict[int, list[int]], mu: dict[int, torch.Tensor], bases) -> torch.Tensor:
    """LD per prompt with the part of the top neurons' write that lies in ``bases`` (per layer) removed, the rest
    of their write kept: what a shared low-dimensional variable would carry."""
    captured: dict[int, torch.Tensor] = {}

    def make_in(layer: int):
        def fn(x, rows):
            captured[layer] = x.clone()
            return x

        return fn

    def make_out(layer: int):
        w = weight(module(runner.model, runner.arch, "mlp", layer).get_submodule("down_proj")).float()[:, top[layer]]

        def fn(y, rows):
            write = (captured[layer][:, top[layer]].float() - mu[layer][top[layer]]) @ w.T
            return y - (write @ bases[layer]) @ bases[layer].T

        return fn

    in_edits = {down(runner, layer): make_in(layer) for layer in top}
    out_edits = {down(runner, layer): make_out(layer) for layer in top}
    return runner.ld(edit_in=in_edits, edit_out=out_edits)


def removal(runner: Runner, q: torch.Tensor, site: str) -> torch.Tensor:
    """LD per prompt with the span of ``q`` (``(d, r)``, orthonormal) removed from every layer's ``site`` output
    (``mlp`` or ``attn``) at END."""
    edits = {runner.path(site, layer): (lambda y, rows: fourier.remove(y, q)) for layer in range(runner.geo.n_layers)}
    return runner.ld(edit_out=edits)


def periodic_and_random(runner: Runner, b: torch.Tensor, site: str, n_random: int, seed: int) -> dict:
    """The periodic removal on ``site`` against ``n_random`` removals of as many random centred digit patterns and
    the whole centred subspace: LD per prompt for each (``periodic`` (n,), ``random`` (n_random, n), ``full``)."""
    pats = fourier.fourier_patterns()
    g = torch.Generator().manual_seed(seed)
    return {
        "periodic": removal(runner, fourier.removal_basis(b, pats), site),
        "random": torch.stack(
            [
                removal(runner, fourier.removal_basis(b, fourier.random_patterns(pats.shape[1], g)), site)
                for _ in range(n_random)
            ]
        ),
        "full": removal(runner, fourier.removal_basis(b, fourier.centred_basis()), site),
    }


def as_numpy(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()
