"""The analyze step (arithmech.steps.analyze, arithmech.methods.explorer) against an independent forward.

References are independent: a Llama forward written here with plain torch ops (RoPE, GQA,
causal softmax, RMSNorm, SwiGLU) gives the attention rows and MLP vectors the hooks must find.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from arithmech.methods import attention as At
from arithmech.methods import mlp as M
from arithmech.methods import explorer as E
from arithmech.methods.knockout import Ablation, knockout_topk


def _rms(x, w, eps):
    return w * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def _rope(x, pos, theta):
    """x: (s, n, dh), rotate-half RoPE as in Llama."""
    dh = x.shape[-1]
    ang = pos[:, None].float() * (1.0 / theta ** (torch.arange(0, dh, 2).float() / dh))[None]   # (s, dh/2)
    cos, sin = torch.cat([ang.cos()] * 2, -1)[:, None], torch.cat([ang.sin()] * 2, -1)[:, None]
    x1, x2 = x[..., : dh // 2], x[..., dh // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


@torch.no_grad()
def manual_forward(model, ids: list[int]):
    """One prompt by hand: per layer the attention probs ``(H, s, s)``, resid before the MLP and
    MLP output ``(s, d)``; plus the logits ``(s, V)``."""
    cfg = model.config
    H, KV, dh, eps = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.rms_norm_eps
    theta = cfg.rope_parameters["rope_theta"]
    W = lambda n: model.get_submodule(n).weight
    s = len(ids)
    pos = torch.arange(s)
    x = W("model.embed_tokens")[torch.tensor(ids)]
    probs, mids, mlps = [], [], []
    for l in range(cfg.num_hidden_layers):
        p = f"model.layers.{l}."
        hn = _rms(x, W(p + "input_layernorm"), eps)
        q = _rope((hn @ W(p + "self_attn.q_proj").T).view(s, H, dh), pos, theta)
        k = _rope((hn @ W(p + "self_attn.k_proj").T).view(s, KV, dh), pos, theta)
        v = (hn @ W(p + "self_attn.v_proj").T).view(s, KV, dh)
        kv = torch.arange(H) // (H // KV)                         # GQA: query head h reads kv head h // group
        scores = torch.einsum("ihd,jhd->hij", q, k[:, kv]) / dh ** 0.5
        scores = scores.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool), 1), float("-inf"))
        pr = scores.softmax(-1)
        z = torch.einsum("hij,jhd->ihd", pr, v[:, kv]).reshape(s, H * dh)
        x = x + z @ W(p + "self_attn.o_proj").T
        mids.append(x)
        hn = _rms(x, W(p + "post_attention_layernorm"), eps)
        m = (torch.nn.functional.silu(hn @ W(p + "mlp.gate_proj").T) * (hn @ W(p + "mlp.up_proj").T)) @ W(p + "mlp.down_proj").T
        mlps.append(m)
        x = x + m
        probs.append(pr)
    logits = _rms(x, W("model.norm"), eps) @ W("lm_head").T
    return probs, torch.stack(mids), torch.stack(mlps), logits


def test_manual_forward_matches_model(word_llama_fig8):
    """Protects the reference itself: the hand-written forward reproduces the model's logits."""
    model, tok, samples = word_llama_fig8
    ids = tok(samples[0].clean)["input_ids"]
    torch.testing.assert_close(manual_forward(model, ids)[3], model(torch.tensor([ids])).logits[0],
                               rtol=1e-4, atol=1e-5)


def test_end_rows_sum_to_one_and_match_manual(word_llama_fig8):
    """Protects: END rows come from the right module and head order (GQA) and are softmax rows."""
    model, tok, samples = word_llama_fig8
    ids = tok(samples[1].clean)["input_ids"]
    rows = At.end_rows(model, torch.tensor([ids]), range(5))
    probs = manual_forward(model, ids)[0]
    for l in range(5):
        assert rows[l].shape == (1, 4, len(ids))
        torch.testing.assert_close(rows[l].sum(-1), torch.ones(1, 4))
        torch.testing.assert_close(rows[l][0], probs[l][:, -1], rtol=1e-4, atol=1e-6)


def test_attention_by_role_and_labels(word_llama_fig8):
    """Protects: per-sample role masses averaged over samples equal a direct recomputation, the five
    roles sum to 1 per head, the operand/operator/other label follows the largest group, and the heads
    shown in Fig. 7 / 16 are the key heads of that kind, else the model's top heads of that kind."""
    model, tok, samples = word_llama_fig8
    roles = At.attention_by_role(model, tok, samples, layers=[1, 3], batch_size=3)
    allr = roles[roles.task == "all"]
    part = allr[allr.role.isin(At.ROLES)]                  # the five roles; operand and first overlap them
    np.testing.assert_allclose(part.groupby(["layer", "head"]).mean_score.sum(), 1.0, atol=1e-5)
    assert set(roles.task) == {"all"} | {s.op for s in samples}
    assert (allr.kv_head == allr["head"] // 2).all()
    want = torch.zeros(5)
    for s in samples:
        ids = tok(s.clean)["input_ids"]
        row = manual_forward(model, ids)[0][3][2, -1]
        lab = At.role_labels(s.positions, len(ids))
        want += torch.tensor([sum(float(row[p]) for p, r in enumerate(lab) if r == role) for role in At.ROLES])
    got = allr[(allr.layer == 3) & (allr["head"] == 2)].set_index("role").mean_score[list(At.ROLES)]
    np.testing.assert_allclose(got.to_numpy(), (want / len(samples)).numpy(), rtol=1e-4, atol=1e-6)
    fake = pd.DataFrame([(0, h, r, v, 0, "all", 1) for h, vals in enumerate([(.3, .3, .1, .2, .1), (.1, .1, .5, .2, .1),
                                                                              (.1, .0, .1, .7, .1)])
                         for r, v in zip(At.ROLES, vals)], columns=list(roles.columns[:7]))
    lab = At.label_heads(fake, [(0, 2), (0, 0), (0, 1)])
    assert lab.name.tolist() == ["0.2", "0.0", "0.1"] and lab.label.tolist() == ["other", "operand", "operator"]
    np.testing.assert_allclose(lab.operand, [0.1, 0.6, 0.2])
    assert At.heads_of_kind(fake, [(0, 1)], "operator") == [(0, 1)]                  # a key head of that kind
    assert At.heads_of_kind(fake, [(0, 2)], "operand", k=2) == [(0, 0), (0, 1)]      # none: the model's top-k


@pytest.mark.parametrize("final_norm", [True, False])
def test_mlp_projection_equals_direct_computation(word_llama_fig8, final_norm):
    """Protects Fig. 6a/b: MLP_in is the residual before post_attention_layernorm, MLP_out − MLP_in the
    MLP output, the final norm (gain) applied or not, cosines against the right W_U rows, 'other' = mean
    over the other digits — all equal to the hand-written forward."""
    model, tok, samples = word_llama_fig8
    df = M.mlp_projection(model, tok, samples, final_norm=final_norm, batch_size=4)
    W = model.lm_head.weight.detach()
    g = model.model.norm.weight.detach() if final_norm else torch.ones_like(W[0])
    digits = {d: tok.convert_tokens_to_ids(str(d)) for d in range(10)}
    cos = lambda v, t: float(torch.nn.functional.cosine_similarity(g * v, W[t], dim=0))
    want = {q: np.zeros(5) for q in M.MLP_QUANTITIES}
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
    top = M.layer_top_numbers(model, tok, "4 + 3 =", k=3)
    _, _, mlps, _ = manual_forward(model, tok("4 + 3 =")["input_ids"])
    g, W = model.model.norm.weight.detach(), model.lm_head.weight.detach()
    for l in range(5):
        c = {d: float(torch.nn.functional.cosine_similarity(g * mlps[l, -1], W[tok.convert_tokens_to_ids(str(d))], dim=0))
             for d in range(10)}
        best = sorted(c, key=c.get, reverse=True)[:3]
        assert top[top.layer == l].token.tolist() == [str(d) for d in best]


def test_explorer_callbacks_and_knockout(word_llama_fig8):
    """Protects the explorer's logic without a browser: tables for prompt and counterfactual, intact and
    knocked out; a layer-0 knockout changes the output, writes exactly the heads' pooled X_c means into their
    slices of the o_proj input (other heads untouched) and gives the same top-5 as identify's knockout_topk;
    attention rows sum to 1."""
    model, tok, samples = word_llama_fig8
    means = E.knockout_means(model, tok, samples)
    ko = E.mean_ablation(model, [(0, 0), (0, 3)], means)
    r = E.explore(model, tok, "4 + 3 =", "4 @ 3 =", head=(2, 1), knockout=ko)
    top = r["top"]
    assert len(top) == 4 * 5 and set(top.input) == {"prompt", "counterfactual"}
    assert set(top.condition) == {"intact", "knockout"}
    p = top[(top.input == "prompt")]
    assert not np.allclose(p[p.condition == "intact"].prob, p[p.condition == "knockout"].prob)
    att = r["attention"]
    np.testing.assert_allclose(att.groupby(["input", "condition"]).score.sum(), 1.0, atol=1e-5)
    assert att[att.input == "prompt"].token.tolist()[:5] == ["<s>", "4", "+", "3", "="]
    assert set(r["numbers"].layer) == set(range(5))
    ids = torch.tensor([tok("4 + 3 =")["input_ids"]])
    name = "model.layers.0.self_attn.o_proj"
    with torch.no_grad(), At.TraceDict(model, [name], retain_input=True) as clean:
        model(ids)
    z0 = clean[name].input.unflatten(-1, (4, -1))
    mu = means.z["*"][0].unflatten(-1, (4, -1))                              # (2 positions: BOS, rest; H, dh)
    seq = ids.shape[1]
    for positions in ("end", "all"):
        ko = E.mean_ablation(model, [(0, 0), (0, 3)], means, positions=positions)
        with torch.no_grad(), ko(), At.TraceDict(model, [name], retain_input=True) as t:  # edit runs first
            model(ids)
        z = t[name].input.unflatten(-1, (4, -1))
        for h in range(4):
            want = z0[0, :, h].clone()
            if h in (0, 3):
                want[-1] = mu[1, h]
                if positions == "all":
                    want = torch.cat([mu[:1, h], mu[1:, h].expand(seq - 1, -1)])
            torch.testing.assert_close(z[0, :, h], want)
        # the same knockout through the identify step's code gives the same top-5
        kt = E.top_next(model, tok, "4 + 3 =", 5, ko)
        ids_ko, p_ko = knockout_topk(model, tok, ["4 + 3 ="], None, means, [Ablation.of([(0, 0), (0, 3)])], k=5,
                                     positions=positions)
        assert kt.token.tolist() == tok.convert_ids_to_tokens(ids_ko[0, 0].tolist())
        np.testing.assert_allclose(kt.prob, p_ko[0, 0].numpy(), rtol=1e-5)
