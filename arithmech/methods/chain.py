"""The END chain: the forward at the last position (END) with every attention head frozen.

Path patching (:mod:`~arithmech.methods.patching`), head → head patching
(:mod:`~arithmech.methods.upstream`) and attribution patching (:mod:`~arithmech.methods.attribution`)
all change the END residual stream of a reference prompt ``X_r`` while every attention head at END
keeps its clean output. A head at END reads the other positions, and those stay clean; so with the
heads frozen the answer logit is a function of the END residual stream alone::

    r = rows entering at layer i                  # (b, R, d): R runs per sample (baseline, senders)
    for k = i .. L-1:
        r = r + a[k]                              # the frozen heads: a constant attention output
        r = r + MLP_k(norm_k(r))                  # mlp_block: the MLPs recompute ("live")
        r = r + m[k]                              # optional extra write after MLP k
    logit = final_norm(r) @ W_U[{C}] + b_U[{C}]   # final_norm, answer_logits: the answer row only

:func:`carry` is that loop. Its steps are public for a caller with its own schedule
(:func:`~arithmech.methods.patching.path_patch_fast` lets new rows join the running state at every
layer): :func:`mlp_block`, :func:`final_norm` and :func:`answer_logits` (:func:`final_logits`: a final
residual's logits, for the counterfactual's own answer). Every step is the model's own
module (found through :class:`~arithmech.core.models.Arch`), so the RMSNorm, the gated MLP and any
unembedding bias are exactly the model's; each step moves its input to its module's device (a
no-op on one device, the hand-over under ``device_map="auto"``). Only the answer row of the
unembedding is used: ``b × R`` dot products instead of ``b × R × vocab`` logits.

A norm can be replaced (``norm=``): a function ``(norm_module, x) -> y`` that the attribution
diagnostics use to freeze each RMSNorm's scale (:mod:`~arithmech.methods.attribution`).

>>> a = {k: clean.attn_out[:, k, None] for k in range(i + 1, L)}     # heads frozen after layer i
>>> lg = carry(model, clean.resid_mid[:, i, None] + delta, answer, first=i, attn=a)   # (b, R)

Shapes: ``b`` samples, ``R`` rows per sample, ``d`` model width; ``answer`` ``(b,)`` token ids {C}.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
from torch import nn

from arithmech.core.models import arch_for, geometry, module, weight

Norm = Callable[[nn.Module, torch.Tensor], torch.Tensor]  # (norm module, x) -> normed x


def own_norm(norm: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The model's norm as it is: ``norm(x)``."""
    return norm(x)


def device_of(mod: nn.Module) -> torch.device:
    """Where ``mod``'s parameters live (its input must go there)."""
    return next(mod.parameters()).device


def mlp_block(model, layer: int, r: torch.Tensor, norm: Norm = own_norm) -> torch.Tensor:
    """``r + MLP(norm(r))`` of ``layer``: ``r`` ``(b, R, d)`` → ``(b, R, d)`` on the MLP's device."""
    arch = arch_for(model)
    mlp = module(model, arch, "mlp", layer)
    r = r.to(device_of(mlp))
    return r + mlp(norm(module(model, arch, "mlp_norm", layer), r))


def final_norm(model, r: torch.Tensor, norm: Norm = own_norm) -> torch.Tensor:
    """The final norm of the residual rows ``r`` ``(b, R, d)`` → ``(b, R, d)`` on the norm's device."""
    fnorm = module(model, arch_for(model), "final_norm")
    return norm(fnorm, r.to(device_of(fnorm)))


def answer_logits(model, x: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    """The unembedding's answer row only: ``x`` ``(b, R, d)`` (after the final norm), ``answer`` ``(b,)``
    → ``(b, R)`` logits of each sample's own answer token, with the unembedding's bias where it has one;
    on the unembedding's device, in the model's dtype."""
    unembed = module(model, arch_for(model), "unembed")
    w = weight(unembed)  # (vocab, d)
    a = answer.to(w.device)
    lg = torch.einsum("brd,bd->br", x.to(w.device), w[a])
    if getattr(unembed, "bias", None) is not None:
        lg = lg + weight(unembed, "bias")[a][:, None]
    return lg


def final_logits(model, r: torch.Tensor, ids: torch.Tensor | None = None) -> torch.Tensor:
    """Logits of final residual rows ``r`` ``(n, d)`` (after the last MLP), float32 on the CPU: ``(n,)``
    row ``k``'s logit of token ``ids[k]``, or ``(n, vocab)`` every token's when ``ids`` is None."""
    x = final_norm(model, r[:, None])
    if ids is not None:
        return answer_logits(model, x, ids)[:, 0].float().cpu()
    unembed = module(model, arch_for(model), "unembed")
    return unembed(x.to(weight(unembed).device))[:, 0].float().cpu()


def carry(
    model,
    r: torch.Tensor,
    answer: torch.Tensor,
    first: int = 0,
    attn: Mapping[int, torch.Tensor] | None = None,
    mlp_add: Mapping[int, torch.Tensor] | None = None,
    norm: Norm = own_norm,
) -> torch.Tensor:
    """The END chain from layer ``first`` to the answer logits (the module docstring's loop).

    Args:
        r: ``(b, R, d)`` residual rows entering layer ``first``.
        answer: ``(b,)`` answer ids {C}.
        first: the layer the rows enter; layers before it are not run.
        attn: ``{k: (b, R or 1, d)}`` the frozen heads' output added before MLP ``k``; a layer missing
            adds nothing (rows entering after the heads of ``first`` leave ``first`` out).
        mlp_add: ``{k: (b, R or 1, d)}`` added after MLP ``k`` (a patched MLP output's change).
        norm: how every norm is applied (:func:`own_norm`: the model's own).
    Returns:
        ``(b, R)`` answer logits, in the model's dtype.
    """
    attn, mlp_add = attn or {}, mlp_add or {}
    for k in range(first, geometry(model).n_layers):
        if k in attn:
            dev = device_of(module(model, arch_for(model), "mlp", k))
            r = r.to(dev) + attn[k].to(dev)
        r = mlp_block(model, k, r, norm)
        if k in mlp_add:
            r = r + mlp_add[k]
    return answer_logits(model, final_norm(model, r, norm), answer)
