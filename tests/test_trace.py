"""The hook layer (arithmech.core.trace): baukit semantics on a plain HF Llama, under eager and sdpa."""
from __future__ import annotations

import pytest
import torch

from arithmech.core.models import Geometry, arch_for
from arithmech.core.trace import (StopForward, Trace, TraceDict, head_contributions, kv_heads_of, merge_heads,
                             split_heads)


def test_noop_hook_is_bit_identical(tiny, ids):
    """Protects: tracing (retain + identity edit) on every attention, o_proj and MLP must not change logits."""
    base = tiny(ids).logits
    arch = arch_for(tiny)
    names = [arch.path(n, i) for i in range(tiny.config.num_hidden_layers) for n in ("attn", "o_proj", "mlp")]
    with TraceDict(tiny, names, retain_input=True, edit_input=lambda x, n: x, edit_output=lambda y, n: y):
        traced = tiny(ids).logits
    assert torch.equal(base, traced)


def test_self_attn_input_is_seen_though_called_with_keywords(tiny, ids):
    """Protects: transformers 5 calls self_attn with keywords only; retain_input must still get hidden_states."""
    arch = arch_for(tiny)
    with TraceDict(tiny, [arch.path("attn_norm", 1), arch.path("attn", 1)], retain_input=True) as t:
        tiny(ids)
    normed = t[arch.path("attn_norm", 1)].output
    assert torch.equal(t[arch.path("attn", 1)].input, normed)


def test_head_contributions_sum_to_o_proj_output(tiny, ids):
    """Protects: per-head split of the o_proj input, each head times its own W_O block, sums to o_proj(z)."""
    geo = Geometry.from_config(tiny.config)
    name = arch_for(tiny).path("o_proj", 2)
    with Trace(tiny, name, retain_input=True) as t:
        tiny(ids)
    w_o = tiny.get_submodule(name).weight
    per_head = head_contributions(t.input, w_o, geo.n_heads)
    assert per_head.shape == (*ids.shape, geo.n_heads, geo.d_model)
    torch.testing.assert_close(per_head.sum(-2), t.output, rtol=1e-5, atol=1e-6)
    assert torch.equal(merge_heads(split_heads(t.input, geo.n_heads)), t.input)


def test_editing_one_head_at_one_position_leaves_earlier_positions(tiny, ids):
    """Protects: causality of a per-head edit; logits before the edited position stay bit-identical."""
    geo = Geometry.from_config(tiny.config)
    pos, head = 5, 3
    base = tiny(ids).logits

    def edit(z, name):
        zh = split_heads(z.clone(), geo.n_heads)
        zh[:, pos, head] += 10.0
        return merge_heads(zh)

    with Trace(tiny, arch_for(tiny).path("o_proj", 0), edit_input=edit):
        edited = tiny(ids).logits
    assert torch.equal(edited[:, :pos], base[:, :pos])
    assert not torch.allclose(edited[:, pos:], base[:, pos:])


def test_stop_raises_inside_and_is_swallowed(tiny, ids):
    """Protects: stop=True ends the forward after the module and the with-block swallows StopForward."""
    name = arch_for(tiny).path("mlp", 0)
    with Trace(tiny, name, stop=True) as t:
        tiny(ids)
        pytest.fail("forward should have stopped")
    assert t.output is not None and t.output.shape == (*ids.shape, tiny.config.hidden_size)


def test_hooks_removed_on_exception(tiny, ids):
    """Protects: hooks never outlive their with-block, even when the block raises."""
    name = arch_for(tiny).path("o_proj", 1)
    mod = tiny.get_submodule(name)
    with pytest.raises(RuntimeError):
        with Trace(tiny, name, edit_input=lambda x, n: x * 0):
            raise RuntimeError("boom")
    assert not mod._forward_hooks and not mod._forward_pre_hooks
    base = tiny(ids).logits
    assert torch.equal(base, tiny(ids).logits)


def test_clone_and_detach_options(tiny, ids):
    """Protects: clone=True retains a copy (own storage), clone=False the very tensor the model uses;
    detach=True drops the autograd graph."""
    name = arch_for(tiny).path("mlp", 0)
    seen = {}

    def record(y, n):
        seen["ptr"] = y.data_ptr()
        return y

    with torch.enable_grad():
        tiny.requires_grad_(True)
        try:
            with Trace(tiny, name, edit_output=record) as plain:
                tiny(ids)
            assert plain.output.data_ptr() == seen["ptr"] and plain.output.requires_grad
            with Trace(tiny, name, clone=True, detach=True, edit_output=record) as kept:
                tiny(ids)
        finally:
            tiny.requires_grad_(False)
    assert kept.output.data_ptr() != seen["ptr"]
    assert not kept.output.requires_grad
    torch.testing.assert_close(kept.output, plain.output.detach())


def test_edit_output_changes_logits(tiny, ids):
    """Protects: edit_output really replaces the module output (zeroing an MLP changes the logits)."""
    base = tiny(ids).logits
    with Trace(tiny, arch_for(tiny).path("mlp", 1), edit_output=lambda y, n: torch.zeros_like(y)):
        edited = tiny(ids).logits
    assert not torch.allclose(base, edited)


def test_kv_heads_map():
    """Protects: GQA mapping query head h -> kv head h // (heads / kv_heads)."""
    assert kv_heads_of(9, 3).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert kv_heads_of(4, 4).tolist() == [0, 1, 2, 3]
