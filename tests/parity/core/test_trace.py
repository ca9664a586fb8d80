"""The hook layer (arithmech.core.trace) is exact: a no-op hook changes no bit, per-head pieces sum back."""
from __future__ import annotations

import torch

from arithmech.core.models import Geometry, arch_for
from arithmech.core.trace import Trace, TraceDict, head_contributions, merge_heads, split_heads


def test_noop_hook_is_bit_identical(tiny_llama, token_ids):
    """Protects: tracing (retain + identity edit) on every attention, o_proj and MLP must not change logits."""
    base = tiny_llama(token_ids).logits
    arch = arch_for(tiny_llama)
    names = [arch.path(n, i) for i in range(tiny_llama.config.num_hidden_layers) for n in ("attn", "o_proj", "mlp")]
    with TraceDict(tiny_llama, names, retain_input=True, edit_input=lambda x, n: x, edit_output=lambda y, n: y):
        traced = tiny_llama(token_ids).logits
    assert torch.equal(base, traced)


def test_head_contributions_sum_to_o_proj_output(tiny_llama, token_ids):
    """Protects: per-head split of the o_proj input, each head times its own W_O block, sums to o_proj(z)."""
    geo = Geometry.from_config(tiny_llama.config)
    name = arch_for(tiny_llama).path("o_proj", 2)
    with Trace(tiny_llama, name, retain_input=True) as t:
        tiny_llama(token_ids)
    w_o = tiny_llama.get_submodule(name).weight
    per_head = head_contributions(t.input, w_o, geo.n_heads)
    assert per_head.shape == (*token_ids.shape, geo.n_heads, geo.d_model)
    torch.testing.assert_close(per_head.sum(-2), t.output, rtol=1e-5, atol=1e-6)
    assert torch.equal(merge_heads(split_heads(t.input, geo.n_heads)), t.input)
