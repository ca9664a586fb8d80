"""The analyze step's MLP views (arithmech.methods.mlp) against an independent forward.

The reference is ``factories.manual_forward``: a Llama forward written with plain torch ops (RoPE, GQA,
causal softmax, RMSNorm, SwiGLU) gives the MLP vectors the hooks must find."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from factories import manual_forward

from arithmech.methods import mlp


@pytest.mark.parametrize("final_norm", [True, False])
def test_mlp_projection_equals_direct_computation(word_llama_fig8, final_norm):
    """Protects Fig. 6a/b: MLP_in is the residual before post_attention_layernorm, MLP_out − MLP_in the
    MLP output, the final norm (gain) applied or not, cosines against the right W_U rows, 'other' = mean
    over the other digits — all equal to the hand-written forward."""
    model, tok, samples = word_llama_fig8
    df = mlp.mlp_projection(model, tok, samples, final_norm=final_norm, batch_size=4)
    W = model.lm_head.weight.detach()
    g = model.model.norm.weight.detach() if final_norm else torch.ones_like(W[0])
    digits = {d: tok.convert_tokens_to_ids(str(d)) for d in range(10)}
    cos = lambda v, t: float(torch.nn.functional.cosine_similarity(g * v, W[t], dim=0))
    want = {q: np.zeros(5) for q in mlp.MLP_QUANTITIES}
    for s in samples:
        ids = tok(s.clean)["input_ids"]
        _, mids, mlps, _ = manual_forward(model, ids)
        c = digits[int(s.target[0])]
        for l in range(5):
            want["in_A"][l] += cos(mids[l, -1], digits[s.a]) / len(samples)
            want["in_B"][l] += cos(mids[l, -1], digits[s.b]) / len(samples)
            want["diff_C"][l] += cos(mlps[l, -1], c) / len(samples)
            want["diff_other"][l] += np.mean([cos(mlps[l, -1], t) for t in digits.values() if t != c]) / len(samples)
    w = df.pivot(index="layer", columns="quantity", values="value")
    for q in ("in_A", "in_B", "diff_C", "diff_other"):
        np.testing.assert_allclose(w[q].to_numpy(), want[q], rtol=1e-4, atol=1e-5, err_msg=q)


def test_layer_top_numbers_ranks_digits_by_cosine(word_llama_fig8):
    """Protects Fig. 6c: per layer, the top digits of MLP_out − MLP_in, sorted, equal a direct ranking."""
    model, tok, _ = word_llama_fig8
    top = mlp.layer_top_numbers(model, tok, "4 + 3 =", k=3)
    _, _, mlps, _ = manual_forward(model, tok("4 + 3 =")["input_ids"])
    g, W = model.model.norm.weight.detach(), model.lm_head.weight.detach()
    for l in range(5):
        c = {d: float(torch.nn.functional.cosine_similarity(g * mlps[l, -1], W[tok.convert_tokens_to_ids(str(d))], dim=0))
             for d in range(10)}
        best = sorted(c, key=c.get, reverse=True)[:3]
        assert top[top.layer == l].token.tolist() == [str(d) for d in best]
