"""A batch's shared prefix, run once and reused as a KV cache.

With solved examples before every prompt (:mod:`arithmech.data.shots`), the prompts of one template
start with the same tokens, and :func:`arithmech.data.batches.group_by_length` puts them in the same
batches. A causal model's activations at those positions do not depend on what follows, so they are
the same for every row, for X_r and X_c alike. :class:`SharedPrefix` runs that prefix once (one row),
keeps its keys and values, and runs each batch's remaining tokens on top of them::

    ids (b, P + S) ──► prefix ids[0, :P] ──► model, 1 row ──► KV (1, P)      (once per distinct prefix)
                   └─► rest ids[:, P:] + KV expanded to b rows ──► model ──► logits, hooks see (b, S, ·)

The logits at every position of the rest, and so at END, equal those of the full forward up to float
rounding (a test keeps them within 1e-5). Hooks that read or edit END (``[:, -1]``) see the same row; hooks
that need *every* position see only the last ``S``: :meth:`SharedPrefix.forward` is for END-only work
(path patching's caches, predictions, the knockout at END); the means, which need every position, run
the prefix's one row with their capturing hooks and broadcast it (:func:`captured`).

Prefix KV caches are computed **before** any editing hook is set (``SharedPrefix(model, batches)``), so
an intervention at END can never reach the prefix. ``enabled(False)`` turns the reuse off (every batch
runs whole), for the tests and the benchmark that compare the two.

>>> batches = list(group_by_length(tok, prompts))
>>> sp = SharedPrefix(model, [ids for _, ids in batches])
>>> with TraceDict(model, names, edit_input=...):
...     for idx, ids in batches:
...         logits = sp.forward(ids.to(dev), logits_to_keep=1).logits[:, -1]
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

import torch
from transformers import DynamicCache

MIN_PREFIX = 16  # shared tokens below this run whole: a zero-shot batch shares only a few
_STATE = {"on": True}


@contextlib.contextmanager
def enabled(on: bool):
    """Turn prefix reuse on or off inside the block (default: on)."""
    before = _STATE["on"]
    _STATE["on"] = bool(on)
    try:
        yield
    finally:
        _STATE["on"] = before


def shared_length(ids: torch.Tensor) -> int:
    """Tokens every row of ``ids`` ``(b, seq)`` starts with, at most ``seq - 1`` (END is never cached)."""
    same = (ids == ids[:1]).all(0)
    differ = (~same).nonzero()
    n = int(differ[0]) if len(differ) else ids.shape[1]
    return min(n, ids.shape[1] - 1)


class SharedPrefix:
    """KV caches of the prefixes that ``batches`` share, computed once each, before any hook is set.

    ``batches``: token tensors ``(b, seq)`` as they will be run (on the model's device). A batch whose
    rows share fewer than ``min_prefix`` tokens, or any batch while ``enabled(False)``, runs whole.
    """

    def __init__(self, model, batches: Iterable[torch.Tensor], min_prefix: int = MIN_PREFIX):
        self.model, self.min_prefix = model, min_prefix
        self.kv: dict[tuple, tuple] = {}
        if not _STATE["on"]:
            return
        with torch.no_grad():
            for ids in batches:
                key = self.key(ids)
                if key is not None and key not in self.kv:
                    out = model(torch.tensor([key], device=ids.device), use_cache=True, logits_to_keep=1)
                    self.kv[key] = layers_of(out.cache)

    def key(self, ids: torch.Tensor) -> tuple | None:
        """The shared prefix's tokens (a dict key), or None when the batch runs whole."""
        if not _STATE["on"]:
            return None
        n = shared_length(ids)
        return tuple(ids[0, :n].tolist()) if n >= self.min_prefix else None

    def forward(self, ids: torch.Tensor, **kw):
        """The model's output on ``ids`` ``(b, seq)``; where the batch's prefix is cached, the logits (and
        ``cache``) are those of the last ``seq - P`` positions only, END last as in a whole run."""
        key = self.key(ids)
        if key is None or key not in self.kv:
            return self.model(ids, **kw)
        kw = {k: v for k, v in kw.items() if k != "use_cache"}
        return self.model(
            ids[:, len(key) :], cache=expanded(self.model, self.kv[key], ids.shape[0]), use_cache=True, **kw
        )


def captured(model, ids: torch.Tensor, take):
    """What capturing hooks saw in one forward of ``ids`` ``(b, seq)``, at every position, with the batch's
    shared prefix run on one row and broadcast to the ``b`` rows. ``take()`` returns the hooks' captures
    after a forward (lists of ``(rows, positions, ·)`` tensors) and clears them; hooks must not edit."""
    n = shared_length(ids) if active() else 0
    if n < MIN_PREFIX:
        model(ids, logits_to_keep=1, use_cache=False)
        return take()
    b = ids.shape[0]
    kv = layers_of(model(ids[:1, :n], logits_to_keep=1, use_cache=True).cache)
    head = take()
    model(ids[:, n:], cache=expanded(model, kv, b), use_cache=True, logits_to_keep=1)
    return [[torch.cat([p.expand(b, -1, -1), t], 1) for p, t in zip(hp, tp)] for hp, tp in zip(head, take())]


def expanded(model, kv, b: int) -> DynamicCache:
    """A fresh cache holding one prefix's keys and values ``kv`` (per layer, ``(1, kv_heads, P, dh)``)
    for ``b`` rows (copied: the forward that uses it appends to it)."""
    return DynamicCache(((k.repeat(b, 1, 1, 1), v.repeat(b, 1, 1, 1)) for k, v in kv), config=model.config)


def layers_of(cache) -> tuple:
    """``(keys, values)`` per layer of a model output's cache."""
    return tuple((c.keys, c.values) for c in cache.layers)


def active() -> bool:
    """Whether prefix reuse is on (:func:`enabled`)."""
    return _STATE["on"]
