"""What path patching patches: the END activations of one run (:class:`EndCache`, made by
:func:`arithmech.methods.patching.end_cache`), and the pairs of one run as one checked value (:class:`Inputs`),
which the fast upstream method (:func:`arithmech.methods.upstream.upstream_fast`) and the literal references
(:func:`arithmech.methods.patching.path_patch_reference`,
:func:`arithmech.methods.upstream_reference.upstream_reference`) take whole. Torch and nothing else of arithmech:
both sides import it.

>>> c, x = split_cache(end_cache(model, tok, clean_p + corrupt_p, torch.cat([ans, ans])), len(ans))
>>> inputs = Inputs(clean_p, c, x, ans, corrupt_prompts=corrupt_p, roles=[s.positions for s in samples])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass
class EndCache:
    """Activations of one run at the END position, per layer, rows in prompt order.

    z: ``(n, L, H*dh)`` o_proj input; attn_out: ``(n, L, d)`` o_proj output; resid_pre: ``(n, L, d)``
    residual before attention; resid_mid: ``(n, L, d)`` residual before the MLP; mlp_out:
    ``(n, L, d)``. When answer ids were given: answer_logit, logsumexp, logit_std, top1: ``(n,)``
    from the model's own END logits.
    """

    z: torch.Tensor
    attn_out: torch.Tensor
    resid_pre: torch.Tensor
    resid_mid: torch.Tensor
    mlp_out: torch.Tensor
    answer_logit: torch.Tensor | None = None
    logsumexp: torch.Tensor | None = None
    logit_std: torch.Tensor | None = None
    top1: torch.Tensor | None = None

    def need(self, name: str) -> torch.Tensor:
        """The field ``name`` (``answer_logit``, ``logsumexp``, ``logit_std`` or ``top1``: ``(n,)``), which a cache
        has only when it was made with the answer ids; without them a ``ValueError`` that says so."""
        t = getattr(self, name)
        if t is None:
            raise ValueError(f"this END cache has no {name}: make it with the answer ids (end_cache(..., answer))")
        return t


@dataclass(frozen=True)
class Inputs:
    """What path patching patches, one entry per sample (``n`` of them): the X_r prompts, the END caches of them
    and of their X_c, the answers, and (for the role positions' paths) the X_c prompts and the roles. Checked when
    made. :func:`arithmech.methods.upstream.upstream_fast` reads the caches; the literal references
    (:func:`arithmech.methods.patching.path_patch_reference`,
    :func:`arithmech.methods.upstream_reference.upstream_reference`) run their own hooked forwards and read the
    prompts, each of them what its docstring says.

    Attributes:
        prompts: the X_r prompts.
        clean: the END cache of ``prompts`` (:class:`EndCache`).
        corrupt: the END cache of their X_c.
        answer: ``(n,)`` the answer token ids whose logit the paths move.
        corrupt_prompts: the X_c prompts (each of its X_r's token length), for the role positions' paths;
            ``None``: the END paths only.
        roles: each sample's role positions (:attr:`arithmech.data.pairs.Sample.positions`), given with
            ``corrupt_prompts`` (``None`` with it).
    """

    prompts: Sequence[str]
    clean: EndCache
    corrupt: EndCache
    answer: torch.Tensor
    corrupt_prompts: Sequence[str] | None = None
    roles: Sequence[dict] | None = None

    def __post_init__(self) -> None:
        if (self.roles is None) != (self.corrupt_prompts is None):
            raise ValueError("roles and corrupt_prompts go together (both for the role positions' paths, or neither)")
        if (
            self.roles is not None
            and self.corrupt_prompts is not None
            and not (len(self.roles) == len(self.corrupt_prompts) == len(self.prompts))
        ):
            raise ValueError(
                f"{len(self.prompts)} prompts, {len(self.corrupt_prompts)} corrupt prompts, {len(self.roles)} roles"
            )
