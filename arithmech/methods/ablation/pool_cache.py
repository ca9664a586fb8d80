"""The reference pool's means, computed once and reused: a content-addressed cache.

The knockout's means (:mod:`arithmech.methods.ablation.pool`) depend on the model's weights, the pool's
prompts (templates, families, ``pool_size``, pool seed, answer-token variant, few-shot examples: all of
them are in the prompts' text and operands), the folds, ``min_group``, the batch size (a batch's numbers
depend on the prompts batched with it at float rounding), the dtype and the library versions — and on
nothing of the task's X_r. So the pool of one run serves every later run that asks the same:

    key = sha256(weights digest, tokenizer digest, every pool prompt and its key, folds, min_group,
                 batch size, versions, :data:`VERSION`)        ──►  <cache>/pool/<key>.pt

A hit loads the very tensors a miss computed (``torch.save`` / ``torch.load`` round-trip float32 bytes
exactly), so a run's ``knockout.csv`` is byte-identical with or without the cache
(``tests/parity/methods/test_pool_cache.py``). The cache folder is ``$ARITHMECH_CACHE`` (default
``~/.cache/arithmech``); a file that does not load is recomputed and replaced; ``ARITHMECH_POOL_CACHE=0``
turns the cache off. A run records the key (:attr:`PoolMeans.digest`), never whether it hit, so the results
files do not depend on what an earlier run left in the cache.

Size: a group's sums are ``(folds, L, seq, H*dh + d)`` float32 (``benchmarks/bench_identify.py`` records the
SmolLM2 pool's bytes as ``pool_cache_bytes``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os

import torch

from arithmech.core.atomic import atomic_write
from arithmech.core.models import BATCH_SIZE
from arithmech.core.names import CACHE_DIR
from arithmech.core.provenance import versions
from arithmech.methods.ablation.pool import PoolMeans, build_pool, pool_key

VERSION = 1  # bump when the pool's arithmetic changes (activations, sums, pruning): old files go unused


def weights_digest(model) -> str:
    """sha256 over every parameter and buffer (name, dtype, shape, bytes), in ``state_dict`` order:
    two models with the same digest compute the same activations."""
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def tokenizer_digest(tok) -> str:
    """sha256 of the tokenizer's vocabulary and special tokens."""
    vocab = sorted(tok.get_vocab().items())
    return hashlib.sha256(json.dumps([vocab, tok.all_special_tokens, tok.padding_side]).encode()).hexdigest()


def pool_digest(model, tok, pools: dict, folds: int, min_group: int, batch_size: int) -> str:
    """The cache key of the pool of ``pools`` (family → pairs,
    :func:`~arithmech.methods.ablation.pool.pool_prompts`)."""
    prompts = [[fam, [[s.corrupt, list(pool_key(s))] for s in pool]] for fam, pool in sorted(pools.items())]
    blob = json.dumps(
        {
            "weights": weights_digest(model),
            "tokenizer": tokenizer_digest(tok),
            "prompts": prompts,
            "folds": folds,
            "min_group": min_group,
            "batch_size": batch_size,
            "dtype": str(next(model.parameters()).dtype),
            "versions": versions(),
            "version": VERSION,
        },
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _state(pm: PoolMeans) -> dict:
    return {
        "folds": pm.folds,
        "min_group": pm.min_group,
        "sizes": dict(pm.sizes),
        "group": [[list(k), v] for k, v in pm.group.items()],
        "family": [[k, v] for k, v in pm.family.items()],
    }


def _from_state(st: dict) -> PoolMeans:
    pm = PoolMeans(int(st["folds"]), int(st["min_group"]))
    pm.group = {tuple(k): list(v) for k, v in st["group"]}
    pm.family = {k: list(v) for k, v in st["family"]}
    pm.sizes = dict(st["sizes"])
    return pm


def enabled() -> bool:
    """``ARITHMECH_POOL_CACHE`` is not ``0``."""
    return os.environ.get("ARITHMECH_POOL_CACHE", "1") != "0"


def cached_pool(
    model, tok, pools: dict, folds: int = 4, min_group: int = 32, batch_size: int = BATCH_SIZE
) -> PoolMeans:
    """:func:`~arithmech.methods.ablation.pool.build_pool` (same arguments and result: ``pools`` from
    :func:`~arithmech.methods.ablation.pool.pool_prompts`), read from the cache when the same pool was built
    before, else built and stored. The result's ``digest`` is the key."""
    key = pool_digest(model, tok, pools, folds, min_group, batch_size)
    path = CACHE_DIR / "pool" / f"{key}.pt"
    if enabled() and path.exists():
        try:
            pm = _from_state(torch.load(path, weights_only=True))
            pm.digest = key
            return pm
        except Exception:  # a damaged file: rebuilt and replaced below
            pass
    pm = build_pool(model, tok, pools, folds, min_group, batch_size)
    pm.digest = key
    if enabled():
        buf = io.BytesIO()
        torch.save(_state(pm), buf)
        atomic_write(path, buf.getvalue())
    return pm
