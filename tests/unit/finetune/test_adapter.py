"""Precise SFT's head slices (arithmech.finetune.adapter): GQA policy, autograd reach, parameter and memory
estimates.

Weights and gradients checked against full-tensor references are in ``parity/finetune/test_adapter.py``."""

from __future__ import annotations

from factories import make_tiny_llama

from arithmech.core.models import Geometry
from arithmech.core.trace import TraceDict
from arithmech.finetune import adapter


def test_gqa_kv_policy():
    """Protects: the documented GQA policy: 'any' trains kv head g if a selected query head reads it,
    'all' only if all of its query heads are selected, 'none' never (k/v_proj stay unwrapped)."""
    geo = Geometry.from_config(make_tiny_llama().config)           # 4 query heads, 2 kv heads: {0,1}->0, {2,3}->1
    heads = ((1, 0), (1, 1), (1, 2))
    assert adapter.HeadSpec(heads=heads, kv_policy="any").kv_heads(geo, 1) == [0, 1]
    assert adapter.HeadSpec(heads=heads, kv_policy="all").kv_heads(geo, 1) == [0]
    assert adapter.HeadSpec(heads=heads, kv_policy="none").kv_heads(geo, 1) == []
    model = make_tiny_llama()
    names = set(adapter.attach(model, adapter.HeadSpec(heads=heads, kv_policy="all")))
    assert model.get_parameter("model.layers.1.self_attn.k_proj.weight").shape == (12, 40)   # kv head 0 only
    model = make_tiny_llama()
    names = set(adapter.attach(model, adapter.HeadSpec(heads=heads, kv_policy="none")))
    assert not any("k_proj" in n or "v_proj" in n for n in names)


def test_backward_stops_at_lowest_trained_layer(token_ids):
    """Protects: nothing below the lowest trained layer requires grad, so autograd never goes there."""
    model = make_tiny_llama()
    adapter.attach(model, adapter.HeadSpec(heads=((1, 2),)))
    names = [f"model.layers.{i}" for i in range(3)]
    with TraceDict(model, names) as td:
        model(token_ids, labels=token_ids).loss.backward()
    assert [td[n].output.requires_grad for n in names] == [False, True, True]
    assert model.model.embed_tokens.weight.grad is None
    assert all(p.grad is None for n, p in model.named_parameters() if not p.requires_grad)


def test_tuned_parameters_match_paper_tables():
    """Protects: the tuned-parameter counts reproduce Tables 1, 2 and 5 from LLaMA2's geometry alone."""
    g7 = Geometry(n_layers=32, n_heads=32, n_kv_heads=32, head_dim=128, d_model=4096, vocab_size=32000)
    g13 = Geometry(n_layers=40, n_heads=40, n_kv_heads=40, head_dim=128, d_model=5120, vocab_size=32000)
    table2 = {8: 0.017, 16: 0.033, 32: 0.067, 48: 0.101, 64: 0.134}
    for k, b in table2.items():                              # the paper rounds 0.0336 down to 0.033
        assert abs(adapter.tuned_parameters(g7, k) / 1e9 - b) < 0.001
    table5 = {1: 0.202, 2: 0.338, 3: 0.473, 6: 0.879, 32: 4.396}
    for m, b in table5.items():
        assert round(adapter.tuned_parameters(g7, 32, m, d_ff=11008) / 1e9, 3) == b
    assert round(adapter.tuned_parameters(g13, 32) / 1e9, 2) == 0.08
    assert round(adapter.approx_parameters(g7, 11008) / 1e9, 1) == 6.7
    assert round(adapter.approx_parameters(g13, 13824) / 1e9, 1) == 13.0


def test_precise_sft_memory_estimate_7b():
    """Protects: the one-GPU memory estimate for precise SFT of a 7B model adds up its documented parts."""
    g7 = Geometry(n_layers=32, n_heads=32, n_kv_heads=32, head_dim=128, d_model=4096, vocab_size=32000)
    est = adapter.precise_sft_memory(g7, n_heads=32, d_ff=11008, batch=4, seq=512, lowest_layer=12)
    n = adapter.tuned_parameters(g7, 32)
    assert est.weights == adapter.approx_parameters(g7, 11008) * 2
    assert est.trainable + est.grads_and_optimizer == 16 * n
    assert est.activations == 34 * 512 * 4 * 4096 * (32 - 12)
    assert est.logits == 2 * 4 * 4 * 512 * 32000
    assert 15 < est.total / 2**30 < 30                       # fits one 80 GB GPU with room to spare
    full_state = 16 * adapter.approx_parameters(g7, 11008) / 2**30
    assert full_state > 4 * est.total / 2**30               # full SFT's weights+grads+AdamW alone
