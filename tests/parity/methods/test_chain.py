"""The END chain (arithmech.methods.chain) equals the model itself run with hooks: every head at END frozen
at the given output, the MLPs live, the final norm and the answer row of the unembedding (its bias too).
Path patching, upstream patching and attribution all stand on it (their own parity tests check them)."""
from __future__ import annotations

import torch
from factories import make_biased_gqa_llama, prompt_pairs

from arithmech.core.models import arch_for, input_device, module
from arithmech.core.trace import TraceDict
from arithmech.methods import chain
from arithmech.methods.attribution import run_chain
from arithmech.methods.patching import end_cache

TOL = 1e-5                     # fp32: a different order of the same sums (a full forward against END rows)


def with_unembed_bias(model, seed: int = 0):
    """``model`` with a bias on its unembedding (``lm_head``), so the chain's bias branch is exercised."""
    g = torch.Generator().manual_seed(seed)
    old = model.lm_head
    new = torch.nn.Linear(old.in_features, old.out_features, bias=True)
    with torch.no_grad():
        new.weight.copy_(old.weight)
        new.bias.copy_(torch.randn(old.out_features, generator=g))
    model.lm_head = new.requires_grad_(False)
    return model


@torch.no_grad()
def hooked_logits(model, tok, prompts, answer, z_end=None, attn_add=None, mlp_add=None) -> torch.Tensor:
    """The literal run: the model on ``prompts`` (one equal-length batch) with, at END, the o_proj input of
    layer ``k`` set to ``z_end[k]`` ``(b, H*dh)`` (frozen heads), ``attn_add[k]`` added to layer ``k``'s
    attention output and ``mlp_add[k]`` to its MLP output. Returns the answer logits ``(b,)``."""
    arch, L = arch_for(model), model.config.num_hidden_layers
    z_end, attn_add, mlp_add = z_end or {}, attn_add or {}, mlp_add or {}
    o_names = {arch.path("o_proj", k): k for k in range(L)}
    m_names = {arch.path("mlp", k): k for k in range(L)}

    def set_z(x, name):
        k = o_names[name]
        if k not in z_end:
            return x
        x = x.clone()
        x[:, -1] = z_end[k]
        return x

    def add_o(y, name):
        k = o_names[name]
        if k not in attn_add:
            return y
        y = y.clone()
        y[:, -1] += attn_add[k]
        return y

    def add_m(y, name):
        k = m_names[name]
        if k not in mlp_add:
            return y
        y = y.clone()
        y[:, -1] += mlp_add[k]
        return y

    ids = torch.tensor([tok(p)["input_ids"] for p in prompts]).to(input_device(model))
    with TraceDict(model, list(o_names), retain_output=False, edit_input=set_z, edit_output=add_o), \
            TraceDict(model, list(m_names), retain_output=False, edit_output=add_m):
        lg = model(ids, use_cache=False).logits[:, -1].float()
    return lg.gather(1, answer[:, None])[:, 0]


def same_length(tok, n: int, seed: int):
    """``n`` X_r prompts of one token length, with their answer ids."""
    _, clean, _, ans = prompt_pairs(tok, 4 * n, seed=seed)
    lengths = [len(tok(p)["input_ids"]) for p in clean]
    keep = [i for i, t in enumerate(lengths) if t == lengths[0]][:n]
    return [clean[i] for i in keep], ans[keep]


def test_carry_equals_the_hooked_model_with_frozen_heads(embedded_tokenizer):
    """Protects the END chain of path and upstream patching: residual rows entering before MLP ``i`` with
    a change ``delta``, carried with the later heads frozen at their clean outputs, the MLPs live, the final
    norm and the answer row with the unembedding's bias, give the model's own answer logit when the model
    runs with the same change added at END and the same heads frozen by hooks (two rows per sample, every
    entry layer, a GQA model with every bias on)."""
    tok = embedded_tokenizer
    model = with_unembed_bias(make_biased_gqa_llama(len(tok), seed=4))
    prompts, ans = same_length(tok, 3, seed=4)
    clean = end_cache(model, tok, prompts, ans)
    L, d = model.config.num_hidden_layers, model.config.hidden_size
    g = torch.Generator().manual_seed(0)
    for i in range(L):
        delta = torch.randn(len(prompts), 2, d, generator=g)
        delta[:, 0] = 0                                                   # row 0: the unpatched run
        frozen = {k: clean.attn_out[:, k, None] for k in range(i + 1, L)}
        got = chain.carry(model, clean.resid_mid[:, i, None] + delta, ans, first=i, attn=frozen).float()
        assert got.shape == (len(prompts), 2)
        for r in range(2):
            want = hooked_logits(model, tok, prompts, ans, z_end={k: clean.z[:, k] for k in range(i + 1, L)},
                                 attn_add={i: delta[:, r]})
            torch.testing.assert_close(got[:, r], want, atol=TOL, rtol=TOL)
        torch.testing.assert_close(got[:, 0], clean.answer_logit, atol=TOL, rtol=TOL)   # baseline = model


def test_run_chain_equals_the_hooked_model_with_given_head_outputs(embedded_model):
    """Protects the END chain of attribution patching (``carry`` from layer 0 with ``attn`` and
    ``mlp_add``): every layer's o_proj input at END set to a patched ``z`` (one head's slice from ``X_c``)
    and a write added after one MLP give the same answer logit as the model run with those edits by hooks,
    on the embedded model."""
    model, tok, _ = embedded_model
    prompts, ans = same_length(tok, 4, seed=5)
    clean = end_cache(model, tok, prompts, ans)
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    dh = clean.z.shape[-1] // H
    bad = clean.z.roll(1, 0)                                              # another prompt's heads: a real change
    z = {k: clean.z[:, k].clone() for k in range(L)}
    z[L - 1][:, dh:2 * dh] = bad[:, L - 1, dh:2 * dh]                      # head 1 of the last layer patched
    add = {0: clean.mlp_out.roll(1, 0)[:, 0] - clean.mlp_out[:, 0]}      # MLP 0's output from another prompt
    got = run_chain(model, clean.resid_pre[:, 0, None], [z[k][:, None] for k in range(L)],
                    [add[0][:, None]] + [None] * (L - 1), ans)[:, 0].float()
    want = hooked_logits(model, tok, prompts, ans, z_end=z, mlp_add=add)
    torch.testing.assert_close(got, want, atol=TOL, rtol=TOL)
    assert (got - clean.answer_logit).abs().max() > 1e-3                  # the edits changed something


def test_answer_logits_is_the_unembeddings_answer_column(embedded_tokenizer):
    """Protects the answer-row shortcut: ``answer_logits`` equals the full unembedding (bias included)
    read at each sample's answer token, for every row."""
    tok = embedded_tokenizer
    model = with_unembed_bias(make_biased_gqa_llama(len(tok), seed=6), seed=1)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 3, model.config.hidden_size, generator=g)
    ans = torch.randint(0, len(tok), (5,), generator=g)
    full = module(model, arch_for(model), "unembed")(x)                   # (5, 3, vocab)
    want = full.gather(2, ans[:, None, None].expand(-1, 3, 1))[..., 0]
    torch.testing.assert_close(chain.answer_logits(model, x, ans), want, atol=TOL, rtol=TOL)
