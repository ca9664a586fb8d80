"""Mean ablation (paper §4.1): the one intervention, and the protocol of the stores that hold the means.

A knocked-out component stops writing what it computed on the prompt: its output is replaced by
its mean over counterfactual prompts ``X_c``. A head's output is its slice of the o_proj input (the
heads' outputs before ``W_O``); an MLP's is the MLP's output. Two pieces:

* :class:`MeanSource`: what a store of means answers. Two stores implement it:
  :class:`arithmech.methods.ablation.knockout.Means` (means over the evaluated prompts' own ``X_c``, per
  template × length × position, or position-pooled) and
  :class:`arithmech.methods.ablation.pool.PoolMeans` (a reference pool the evaluated prompts never
  see, leave-one-fold-out over operand pairs). Knockout code is written against the protocol and
  never asks which store it holds.
* :class:`Forwards`: how a knockout batches its forwards and where it ablates, one checked value that
  :func:`arithmech.methods.ablation.knockout.knockout_topk` and the functions above it take whole.
* :class:`MeanAblation`: the replacement at one site of one layer, for a batch of rows. As in
  pyvene, an intervention is a small named object with one method: it takes the site's value and
  returns the edited value::

      x     (rows, seq', C * w)     the site's value: an o_proj input (C = H heads of w = head_dim)
                                    or an MLP output (C = 1 component of w = d_model)
      mask  (rows or 1, C)  bool    which components each row knocks out
      mean  (rows / G, seq', C * w) their means, aligned with x's positions
      x'    = where(mask, mean, x)  at x's last position only (positions="end") or at every one

  with ``G`` consecutive rows sharing one mean row (``repeat``: prompt ``i`` under ``G`` ablations is
  rows ``i * G .. i * G + G - 1``, each with its own mask row).
  :func:`arithmech.methods.ablation.knockout.knockout_topk` puts it on every layer's o_proj input and MLP output with
  one mask row per (prompt, ablation) row; :func:`arithmech.methods.explorer.mean_ablation` puts it on a model for any
  forward pass.

>>> ablate = MeanAblation(mask=torch.tensor([[False, True]]), mean=mean_z[layer][None], positions="end")
>>> z = ablate(z)                # head 1's slice at END is now its X_c mean, every other value as it was
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol

import torch

from arithmech.core.models import BATCH_SIZE
from arithmech.data.pairs import Sample

POSITIONS = ("end", "all")  # where a component is ablated: END only, or every position
MAX_ROWS = 512  # knockout_topk: prompts x ablations per forward (each a full-vocabulary logit row)
MAX_TOKENS = 4096  # knockout_topk: rows x sequence length per forward (the repeated prefix cache)


def check_positions(positions: str) -> str:
    """``positions`` if it is one of :data:`POSITIONS`, else a one-line :class:`ValueError`."""
    if positions not in POSITIONS:
        raise ValueError(f"positions={positions!r}: use one of {POSITIONS}")
    return positions


@dataclass(frozen=True)
class Forwards:
    """How a knockout runs its forwards (:func:`arithmech.methods.ablation.knockout.ablated_logits`) and where it
    ablates. Checked when made: a wrong value is one ``ValueError``. The same numbers come out whatever the sizes
    (tested); ``positions`` changes them.

    Attributes:
        batch_size: prompts per length group run together.
        positions: ``"end"`` (ablate at END, replayed on the clean prefix's key/value cache) or ``"all"``
            (ablate at every position); :data:`POSITIONS`, :mod:`arithmech.methods.ablation.knockout`.
        max_rows: prompts × ablations run in one forward (the full-vocabulary logits are ``(rows, vocab)``).
        max_tokens: and at most this many rows × sequence length per forward: the repeated key/value cache of
            the prefix (``"end"``: ``rows × (seq - 1)`` tokens, each ``L × 2 × n_kv_heads × head_dim`` values) or
            the activations of ``"all"`` scale with it.

    >>> Forwards(batch_size=64, positions="all")        # max_rows=MAX_ROWS, max_tokens=MAX_TOKENS
    """

    batch_size: int = BATCH_SIZE
    positions: str = "end"
    max_rows: int = MAX_ROWS
    max_tokens: int = MAX_TOKENS

    def __post_init__(self) -> None:
        check_positions(self.positions)
        for name in ("batch_size", "max_rows", "max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"knockout forwards {name}={getattr(self, name)}: at least 1")


class MeanSource(Protocol):
    """A store of mean activations that a knockout reads (see the module docstring).

    A prompt's mean is found in two steps: :meth:`key` names what the store needs of a sample (its
    template, say, or template, family and operands), then :meth:`lookup` gives the means for that key
    at the prompt's token length. ``key = None`` stands for a prompt with no sample behind it (free text).
    """

    @property
    def is_pooled(self) -> bool:
        """True when every prompt gets the same means whatever its key (keys may then be ``None``)."""
        ...

    def key(self, s: Sample) -> Hashable:
        """What :meth:`lookup` needs of sample ``s``."""
        ...

    def lookup(self, key: Hashable | None, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(L, seq, H*dh)`` head-output means and ``(L, seq, d)`` MLP-output means, float32, for a
        prompt of ``seq`` tokens with ``key``."""
        ...

    def source(self, key: Hashable | None, seq: int) -> str:
        """Which mean :meth:`lookup` gives that prompt, in words (the tables' ``mean_source``)."""
        ...

    def for_unseen(self) -> MeanSource:
        """The store to use on prompts outside its groups (free text, a held-out family)."""
        ...

    def describe(self) -> str:
        """One line for ``run.json``: which means these are."""
        ...


@dataclass(frozen=True)
class MeanAblation:
    """Replace the masked components of a site's value by their means (see the module docstring).

    mask: ``(rows or 1, C)`` bool; mean: ``(rows / repeat, seq', C*w)`` (any dtype and device: cast to the
    value's); positions: ``"end"`` (the value's last position only) or ``"all"``; repeat: consecutive rows
    sharing one mean row.
    """

    mask: torch.Tensor
    mean: torch.Tensor
    positions: str = "all"
    repeat: int = 1

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(rows, seq', C*w)`` → the same shape, the masked components replaced (``x`` itself when
        the mask is empty)."""
        if not self.mask.any():
            return x
        C = self.mask.shape[-1]
        xc = x.unflatten(-1, (C, -1))  # (rows, seq', C, w)
        mean = self.mean.to(x.device, x.dtype).unflatten(-1, (C, -1)).repeat_interleave(self.repeat, 0)
        where = self.mask.to(x.device)[:, None, :, None]  # (rows, 1, C, 1)
        if self.positions == "end":
            last = torch.arange(x.shape[1], device=x.device) == x.shape[1] - 1
            where = where & last[None, :, None, None]
        return torch.where(where, mean, xc).flatten(-2)
