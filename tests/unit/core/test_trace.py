"""The hook layer (arithmech.core.trace): baukit semantics on a plain HF Llama, under eager and sdpa.

Exactness against a reference (no-op hooks, per-head sums) is in ``parity/test_trace_parity.py``.
"""
from __future__ import annotations

import pytest
import torch

from arithmech.core.models import Geometry, arch_for
from arithmech.core.trace import Trace, TraceDict, merge_heads, split_heads


def test_self_attn_input_is_seen_though_called_with_keywords(tiny_llama, token_ids):
    """Protects: transformers 5 calls self_attn with keywords only; retain_input must still get hidden_states."""
    arch = arch_for(tiny_llama)
    with TraceDict(tiny_llama, [arch.path("attn_norm", 1), arch.path("attn", 1)], retain_input=True) as t:
        tiny_llama(token_ids)
    normed = t[arch.path("attn_norm", 1)].output
    assert torch.equal(t[arch.path("attn", 1)].input, normed)


def test_editing_one_head_at_one_position_leaves_earlier_positions(tiny_llama, token_ids):
    """Protects: causality of a per-head edit; logits before the edited position stay bit-identical."""
    geo = Geometry.from_config(tiny_llama.config)
    pos, head = 5, 3
    base = tiny_llama(token_ids).logits

    def edit(z, name):
        zh = split_heads(z.clone(), geo.n_heads)
        zh[:, pos, head] += 10.0
        return merge_heads(zh)

    with Trace(tiny_llama, arch_for(tiny_llama).path("o_proj", 0), edit_input=edit):
        edited = tiny_llama(token_ids).logits
    assert torch.equal(edited[:, :pos], base[:, :pos])
    assert not torch.allclose(edited[:, pos:], base[:, pos:])


def test_stop_raises_inside_and_is_swallowed(tiny_llama, token_ids):
    """Protects: stop=True ends the forward after the module and the with-block swallows StopForward."""
    name = arch_for(tiny_llama).path("mlp", 0)
    with Trace(tiny_llama, name, stop=True) as t:
        tiny_llama(token_ids)
        pytest.fail("forward should have stopped")
    assert t.output is not None and t.output.shape == (*token_ids.shape, tiny_llama.config.hidden_size)


def test_hooks_removed_on_exception(tiny_llama, token_ids):
    """Protects: hooks never outlive their with-block, even when the block raises."""
    name = arch_for(tiny_llama).path("o_proj", 1)
    mod = tiny_llama.get_submodule(name)
    with pytest.raises(RuntimeError):
        with Trace(tiny_llama, name, edit_input=lambda x, n: x * 0):
            raise RuntimeError("boom")
    assert not mod._forward_hooks and not mod._forward_pre_hooks
    base = tiny_llama(token_ids).logits
    assert torch.equal(base, tiny_llama(token_ids).logits)


def test_clone_and_detach_options(tiny_llama, token_ids):
    """Protects: clone=True retains a copy (own storage), clone=False the very tensor the model uses;
    detach=True drops the autograd graph."""
    name = arch_for(tiny_llama).path("mlp", 0)
    seen = {}

    def record(y, n):
        seen["ptr"] = y.data_ptr()
        return y

    with torch.enable_grad():
        tiny_llama.requires_grad_(True)
        try:
            with Trace(tiny_llama, name, edit_output=record) as plain:
                tiny_llama(token_ids)
            assert plain.output.data_ptr() == seen["ptr"] and plain.output.requires_grad
            with Trace(tiny_llama, name, clone=True, detach=True, edit_output=record) as kept:
                tiny_llama(token_ids)
        finally:
            tiny_llama.requires_grad_(False)
    assert kept.output.data_ptr() != seen["ptr"]
    assert not kept.output.requires_grad
    torch.testing.assert_close(kept.output, plain.output.detach())


def test_edit_output_changes_logits(tiny_llama, token_ids):
    """Protects: edit_output really replaces the module output (zeroing an MLP changes the logits)."""
    base = tiny_llama(token_ids).logits
    with Trace(tiny_llama, arch_for(tiny_llama).path("mlp", 1), edit_output=lambda y, n: torch.zeros_like(y)):
        edited = tiny_llama(token_ids).logits
    assert not torch.allclose(base, edited)


def test_kv_heads_map():
    """Protects: GQA mapping query head h -> kv head h // (heads / kv_heads), the one map
    (``Geometry.kv_head``) every module uses."""
    geo = lambda n, kv: Geometry(n_layers=1, n_heads=n, n_kv_heads=kv, head_dim=4, d_model=8, vocab_size=10)
    assert [geo(9, 3).kv_head(h) for h in range(9)] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [geo(4, 4).kv_head(h) for h in range(4)] == [0, 1, 2, 3]
