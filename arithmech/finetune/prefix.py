"""Cached frozen prefix for precise SFT: run the layers below the lowest trained layer once per row.

Precise SFT (:mod:`arithmech.finetune.adapter`) trains head slices and MLPs from layer ``k`` (the
lowest trained layer) up. Everything below ``k`` - the embedding and decoder layers ``0..k-1`` - is
frozen, so its output for a training row never changes between epochs. :class:`PrefixCache` computes
the residual stream entering layer ``k`` once per row (keyed by the row's index in the training set)
and keeps it on the CPU; every later forward starts at layer ``k``::

    h_k = cache[row]                                    # (n_tokens, d_model), the row's real tokens
    model(inputs_embeds=pad(h_k), attention_mask, labels)  with layers 0..k-1 replaced by identities

Feeding the cached ``h_k`` as ``inputs_embeds`` lets the model's own forward build the position ids,
the rotary embeddings (``model.model.rotary_emb``) and the causal/padding mask exactly as in the plain
run: they depend only on the sequence length and ``attention_mask``, not on the embedding values. The
bottom layers are replaced by :class:`Skip` modules (identity on the hidden states) for the duration of
one forward (:func:`skipped_layers`), then put back.

**Exactness.** Rows are right-padded (:class:`arithmech.finetune.data.Collator`); under the causal mask and
the padding mask a real token never reads a pad position, so the cached real-token states are the
values the plain run computes (up to float reassociation of a different padded length in a different
batch, ~1e-7 relative in fp32). Pad positions get zeros; they only feed pad positions, whose labels are
``-100``. The losses and the slices' gradients are therefore those of the plain run (a parity test
checks 3 epochs to 1e-6). Not exact with dropout in the frozen layers (a random mask per forward):
:func:`exact_for` says so and the trainer then runs without the cache.

**Cost.** Epoch 1 runs the bottom ``k`` layers in ``no_grad`` (as the plain run does: nothing there
requires grad); later epochs skip them. Memory: ``n_rows x tokens x d_model`` values on the CPU in the
hidden states' dtype (SmolLM2-135M, 512 rows x 30 tokens x 576 x 4 B = 35 MB). Weight gradients of frozen
tensors are never computed in either run (they have ``requires_grad=False``; autograd computes only the
input gradients it needs down to layer ``k``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import cast

import torch
from torch import nn

from arithmech.core.models import arch_for


class Skip(nn.Module):
    """A decoder layer's stand-in: returns the hidden states it is given (keeps ``attention_type``)."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        if hasattr(layer, "attention_type"):
            self.attention_type = layer.attention_type

    def forward(self, hidden_states, *args, **kwargs):
        return hidden_states


class _Stop(Exception):
    pass


def lowest_trained_layer(spec) -> int:
    """The lowest layer holding a trained head slice or MLP of ``spec`` (a :class:`HeadSpec`)."""
    return min([l for l, _ in spec.heads] + list(spec.mlps))


def exact_for(model: nn.Module) -> bool:
    """True when the frozen layers are deterministic: no dropout probability > 0 in the config or modules."""
    cfg = model.config
    if any(isinstance(v, float) and v > 0 for k, v in vars(cfg).items() if "dropout" in k):
        return False
    return not any(isinstance(m, nn.Dropout) and m.p > 0 for m in model.modules())


@contextmanager
def skipped_layers(model: nn.Module, k: int):
    """Within the block, decoder layers ``0..k-1`` of ``model`` are :class:`Skip` identities."""
    layers = cast(nn.ModuleList, model.get_submodule(arch_for(model).path("layers")))  # the decoder's layer list
    saved = [layers[i] for i in range(k)]
    try:
        for i in range(k):
            layers[i] = Skip(saved[i])
        yield
    finally:
        for i in range(k):
            layers[i] = saved[i]


class PrefixCache:
    """Hidden states entering layer ``k`` for each training row, computed once, stored on the CPU.

    >>> cache = PrefixCache(model, k=2)
    >>> h = cache.inputs_embeds(model, batch["input_ids"], batch["attention_mask"], row_ids)  # (b, seq, d)
    >>> with skipped_layers(model, 2):
    ...     loss = model(inputs_embeds=h, attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
    """

    def __init__(self, model: nn.Module, k: int, dtype: torch.dtype | None = None):
        if k < 1:
            raise ValueError(f"PrefixCache needs a lowest trained layer >= 1, got {k}")
        self.k, self.dtype = k, dtype
        self.rows: dict[int, torch.Tensor] = {}
        self.computed = 0  # rows whose prefix was run (each once)
        self._layer = cast(nn.ModuleList, model.get_submodule(arch_for(model).path("layers")))[k - 1]

    def __len__(self) -> int:
        return len(self.rows)

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.rows.values())

    @torch.no_grad()
    def _compute(self, model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Run the embedding and layers ``0..k-1``; return their output ``(b, seq, d)``."""
        got = {}

        def hook(_m, _args, out):
            got["h"] = out[0] if isinstance(out, tuple) else out
            raise _Stop

        handle = self._layer.register_forward_hook(hook)
        try:
            model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        except _Stop:
            pass
        finally:
            handle.remove()
        return got["h"]

    def inputs_embeds(
        self, model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor, row_ids: torch.Tensor
    ) -> torch.Tensor:
        """The padded batch of cached states ``(b, seq, d)`` (zeros at pad positions), computing missing rows."""
        ids = [int(r) for r in row_ids]
        lengths = attention_mask.sum(1).tolist()
        if any(not bool(attention_mask[i, :n].all()) for i, n in enumerate(lengths)):
            raise ValueError("PrefixCache needs right-padded rows (attention_mask 1...1 0...0)")
        if any(r not in self.rows for r in ids):
            h = self._compute(model, input_ids, attention_mask)
            for i, r in enumerate(ids):
                if r not in self.rows:
                    self.rows[r] = h[i, : lengths[i]].detach().to("cpu", self.dtype or h.dtype).clone()
                    self.computed += 1
        first = self.rows[ids[0]]
        out = torch.zeros(len(ids), input_ids.shape[1], first.shape[-1], dtype=first.dtype)
        for i, r in enumerate(ids):
            out[i, : lengths[i]] = self.rows[r]
        return out.to(input_ids.device)


class RowIdCollator:
    """Wraps a collator: also returns ``row_id (b,)``, each row's index in the training set."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, rows: list[dict]) -> dict[str, torch.Tensor]:
        out = self.inner(rows)
        out["row_id"] = torch.tensor([r["row_id"] for r in rows])
        return out


def with_row_ids(rows) -> list[dict]:
    """The training rows, each with its index as ``row_id``."""
    return [{**r, "row_id": i} for i, r in enumerate(rows)]
