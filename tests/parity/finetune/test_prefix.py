"""Cached-prefix precise SFT (arithmech.finetune.prefix) is the plain precise SFT, only faster: same
per-step losses, same trained slices, untouched weights bit-identical, each row's prefix computed once."""
from __future__ import annotations

import pytest
import torch
from factories import make_tiny_llama, random_sft_rows

from arithmech.finetune import adapter
from arithmech.finetune.data import Collator
from arithmech.finetune.runner import HeadMaskedTrainer, training_args


def _train(make, spec, rows, tmp, cache, pad=0):
    model = make()
    orig = {k: v.clone() for k, v in model.state_dict().items()}
    args = training_args(tmp, lr=1e-2, batch_size=8, micro_batch_size=4, epochs=3, warmup=0.0,
                         weight_decay=0.1, logging_steps=1)
    model.train()
    trainer = HeadMaskedTrainer(model, args, spec=spec, cache_prefix=cache, train_dataset=rows,
                                data_collator=Collator(pad))
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    grads_on_frozen = [n for n, p in model.named_parameters() if not p.requires_grad and p.grad is not None]
    slices = {k: v.detach().clone() for k, v in adapter.trainable_state(model).items()}
    return losses, slices, adapter.merge(model).state_dict(), orig, trainer, grads_on_frozen


def _check(make, spec, rows, tmp_path, pad=0):
    plain = _train(make, spec, rows, tmp_path / "plain", cache=False, pad=pad)
    cached = _train(make, spec, rows, tmp_path / "cached", cache=True, pad=pad)
    trainer = cached[4]
    assert trainer.prefix is not None and plain[4].prefix is None
    assert trainer.prefix.computed == len(rows) == len(trainer.prefix)   # each row's prefix run once, 3 epochs
    assert len(plain[0]) == len(cached[0]) >= 9
    for a, b in zip(plain[0], cached[0]):
        assert abs(a - b) <= 1e-6 * abs(a), (plain[0], cached[0])
    assert plain[0][0] != plain[0][-1]                                   # it trained
    for k in plain[1]:
        assert torch.allclose(plain[1][k], cached[1][k], rtol=0, atol=1e-6), k
    # the same entries moved in both runs (test_finetune_parity: only the slices' entries); the rest keep their bytes
    merged_p, merged_c, orig = plain[2], cached[2], cached[3]
    for k, v in merged_c.items():
        assert torch.equal(v != orig[k], merged_p[k] != orig[k]), k
        assert torch.allclose(v, merged_p[k], rtol=0, atol=1e-6), k
    assert cached[5] == [] and plain[5] == []                            # no weight gradient on a frozen tensor


def test_cached_prefix_equals_plain_tiny_gqa_llama(tmp_path):
    """Protects: on a random 4-layer GQA Llama (4 query heads on 2 kv heads, head_dim != d/H), 3 epochs of
    precise SFT from the cached prefix (lowest trained layer 2, plus an MLP) give the plain run's per-step
    losses (1e-6 relative) and slices (1e-6), change exactly the same entries, compute each row's prefix
    once, and leave no gradient on a frozen tensor."""
    spec = adapter.HeadSpec(heads=((2, 0), (2, 3), (3, 1)), mlps=(3,))
    _check(lambda: make_tiny_llama("sdpa", n_layers=4), spec, random_sft_rows(24), tmp_path)


def test_cached_prefix_equals_plain_embedded(tmp_path):
    """Protects: the same equality on the embedded model with its own tokenizer and training rows, in float64.
    (In float32 the last of 18 steps at lr 1e-2 differs by 2e-6 relative: a row's prefix cached in epoch 1
    was computed in a batch of another padded length than the plain run's epoch-3 batch, ~1e-7 of float
    reassociation that training amplifies; in float64 that noise is ~1e-16, so any real difference shows.)"""
    from arithmech.core.models import load_model
    from arithmech.finetune.data import tokenize_pairs, train_pairs
    net, tok, geo = load_model("embedded", attn_implementation="sdpa")
    rows = tokenize_pairs(tok, train_pairs("embedded", 0, 48))
    state = {k: v.clone() for k, v in net.state_dict().items()}

    def make():
        m, _, _ = load_model("embedded", attn_implementation="sdpa")
        m.load_state_dict(state)
        return m.double()
    k = geo.n_layers // 2
    spec = adapter.HeadSpec(heads=((k, 0), (k, 1), (geo.n_layers - 1, 2)))
    _check(make, spec, rows, tmp_path, pad=tok.pad_token_id)


def test_cache_prefix_refused_when_not_exact():
    """Protects: asking for the cache where it cannot be exact (lowest trained layer 0) is a clear error."""
    model = make_tiny_llama("sdpa")
    args = training_args("/tmp/unused", batch_size=4, micro_batch_size=4, max_steps=1)
    with pytest.raises(ValueError, match="cache_prefix"):
        HeadMaskedTrainer(model, args, spec=adapter.HeadSpec(heads=((0, 1),)), cache_prefix=True,
                          train_dataset=random_sft_rows(24), data_collator=Collator(0))
