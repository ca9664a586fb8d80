"""Knockout (mean ablation, arithmech.methods.ablation.knockout) is exact: the batched END replay on the prefix cache
equals a full hooked forward, nothing ablated equals the model's own accuracy, ablating with a prompt's own
means is a no-op, and the forwards stay within the token budget."""

from __future__ import annotations

import pytest
import torch
from factories import make_biased_gqa_llama, prompt_pairs

from arithmech.evals.scoring import predict
from arithmech.methods.ablation.curves import knockout_curve
from arithmech.methods.ablation.intervention import Forwards
from arithmech.methods.ablation.knockout import Ablation, accuracy, knockout_topk, mean_activations
from arithmech.methods.ablation.settings import Curve


def end_ablation_reference(model, tok, samples, means, ab: Ablation) -> torch.Tensor:
    """Independent reference for ``positions="end"``: one full forward per prompt, hooks that overwrite
    only the last position's ablated head slices / MLP outputs with the X_c means. ``(n, V)`` probs."""
    from arithmech.core.trace import TraceDict
    H, L = model.config.num_attention_heads, model.config.num_hidden_layers
    out = []
    for s in samples:
        ids = torch.tensor([tok(s.clean)["input_ids"]])
        z, m = means.lookup(s.template, ids.shape[1])                   # (L, seq, H*dh), (L, seq, d)

        def edit_z(x, name):
            l = int(name.split(".")[2])
            x = x.clone()
            for (ll, h) in ab.heads:
                if ll == l:
                    dh = x.shape[-1] // H
                    x[:, -1, h * dh:(h + 1) * dh] = z[l, -1, h * dh:(h + 1) * dh]  # noqa: B023 (used at once)
            return x

        def edit_m(y, name):
            l = int(name.split(".")[2])
            if l in ab.mlps:
                y = y.clone()
                y[:, -1] = m[l, -1]  # noqa: B023 (used at once)
            return y

        with torch.no_grad(), \
                TraceDict(model, [f"model.layers.{l}.self_attn.o_proj" for l in range(L)], edit_input=edit_z), \
                TraceDict(model, [f"model.layers.{l}.mlp" for l in range(L)], edit_output=edit_m):
            out.append(model(ids).logits[0, -1].softmax(-1))
    return torch.stack(out)


def test_knockout_with_k0_equals_plain_accuracy(embedded_model):
    """Protects: the batched knockout forward with nothing ablated reproduces the model's own top-1
    accuracy (data.predict, an independent path) on unfiltered prompts."""
    model, tok, _ = embedded_model
    samples, _, _, ans = prompt_pairs(tok, 24, seed=4)
    means = mean_activations(model, tok, [s.corrupt for s in samples], [s.template for s in samples])
    base = int((predict(model, tok, [s.clean for s in samples])[:, 0] == ans).sum()) / len(samples)
    heads = Curve("head", [(5, 0), (4, 1)], [(l, h) for l in range(6) for h in range(8)], (), [0, 1, 2], None, False)
    curve = knockout_curve(model, tok, samples, means, heads, n_random=2, seed=0)
    assert (curve.loc[curve.k == 0, "accuracy"] == base).all()
    assert set(curve.order) == {"effect-rank", "random-rank"} and len(curve) == 9


@pytest.mark.parametrize("which", ["embedded", "gqa"])
def test_end_knockout_on_prefix_cache_equals_full_forward_reference(which, embedded_model, embedded_tokenizer):
    """Protects the fast END knockout: replaying only the END token on the clean prefix's key/value
    cache (many ablations batched, duplicates run once) gives the probabilities of a full forward that
    ablates heads and MLPs at the last position, on the embedded model and on a random GQA Llama with
    biases; on the embedded model ``positions="all"`` differs from it."""
    tok = embedded_tokenizer
    model, tok_ = ((embedded_model[0], embedded_model[1]) if which == "embedded"
                   else (make_biased_gqa_llama(len(tok)), tok))
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    samples = prompt_pairs(tok_, 10, seed=6)[0]
    means = mean_activations(model, tok_, [s.corrupt for s in samples], [s.template for s in samples])
    abls = [Ablation(), Ablation.of(heads=[(L - 1, 0), (0, H - 1)]), Ablation.of(mlps=[0]),
            Ablation.of(heads=[(l, 1) for l in range(L)], mlps=[L - 1]), Ablation()]
    ids, p = knockout_topk(model, tok_, [s.clean for s in samples], [s.template for s in samples], means, abls,
                           k=3, forwards=Forwards(max_rows=16))                                  # several chunks per length group
    for a, ab in enumerate(abls):
        ref = end_ablation_reference(model, tok_, samples, means, ab)
        torch.testing.assert_close(p[a], ref.topk(3, -1).values, atol=1e-5, rtol=1e-4)
        assert torch.equal(ids[a, :, 0], ref.argmax(-1))
    assert torch.equal(p[0], p[-1])
    if which == "gqa":
        return                                     # (a random model's near-uniform probabilities barely move)
    _, p_all = knockout_topk(model, tok_, [s.clean for s in samples], [s.template for s in samples], means,
                             abls[1:2], k=3, forwards=Forwards(positions="all"))
    assert (p_all[0] - p[1]).abs().max() > 1e-4


def test_mean_ablation_with_own_clean_mean_is_a_no_op(embedded_model):
    """Protects: knockout replaces exactly the ablated activations: with means taken from the very
    prompt (one sample), knocking out every head and MLP leaves its predictions unchanged, while the
    X_c means of the same heads change them."""
    model, tok, geo = embedded_model
    s = prompt_pairs(tok, 3, seed=5)[0]
    every = Ablation.of(heads=[(l, h) for l in range(geo.n_layers) for h in range(geo.n_heads)],
                        mlps=range(geo.n_layers))
    own = mean_activations(model, tok, [s[0].clean], [s[0].template])
    ids, p = knockout_topk(model, tok, [s[0].clean], [s[0].template], own, [Ablation(), every], k=5)
    assert torch.equal(ids[0], ids[1])
    torch.testing.assert_close(p[0], p[1], atol=1e-5, rtol=1e-4)
    cf = mean_activations(model, tok, [x.corrupt for x in s], [x.template for x in s])
    acc = accuracy(model, tok, s, cf, [Ablation(), every])
    assert acc[0] > 0 and acc[1] < acc[0]


def test_knockout_forwards_stay_within_the_token_budget(embedded_model):
    """Protects the knockout's memory bound: every END replay runs at most ``max_tokens`` rows × tokens
    (its repeated prefix key/value cache) unless a single ablation of the length group is already
    larger, and the results equal those of one big chunk."""
    model, tok, _ = embedded_model
    samples = prompt_pairs(tok, 12, seed=7)[0]
    means = mean_activations(model, tok, [s.corrupt for s in samples], [s.template for s in samples])
    abls = [Ablation.of(heads=[(l, h)]) for l in range(3) for h in range(4)] + [Ablation.of(mlps=[1])]
    args = (model, tok, [s.clean for s in samples], [s.template for s in samples], means, abls)
    big_ids, big_p = knockout_topk(*args, k=2, forwards=Forwards(max_rows=10_000, max_tokens=1 << 20))
    seen = []                                                         # (rows, prefix length) per END replay
    hook = model.register_forward_pre_hook(lambda m, a, kw: seen.append(
        ((a[0] if a else kw["input_ids"]).shape[0], kw["cache"].get_seq_length()))
        if kw.get("cache") is not None else None, with_kwargs=True)
    try:
        ids, p = knockout_topk(*args, k=2, forwards=Forwards(max_tokens=60))
    finally:
        hook.remove()
    b = {}                                                            # prompts per token length
    for s in samples:
        n = len(tok(s.clean)["input_ids"])
        b[n] = b.get(n, 0) + 1
    assert len(seen) > len(b)                                         # the budget split the groups
    assert all(rows * (prefix + 1) <= 60 or rows == b[prefix + 1] for rows, prefix in seen), seen
    assert any(rows > b[prefix + 1] for rows, prefix in seen)        # and still batched ablations
    assert torch.equal(ids, big_ids)
    torch.testing.assert_close(p, big_p, rtol=1e-5, atol=1e-6)


def test_the_logit_gap_under_knockout_equals_a_hooked_forward(embedded_model):
    """Protects the knockout on the logit difference: logit({C}) − logit(X_c's top-1) at END under each ablation
    equals the same difference read from the independent hooked forward (log-probabilities differ from logits by a
    per-prompt constant, so their difference is the logit difference); nothing ablated gives the intact model's."""
    from arithmech.methods.ablation.knockout import counter_answers, scores

    model, tok, _ = embedded_model
    samples, _, _, ans = prompt_pairs(tok, 12, seed=5)
    means = mean_activations(model, tok, [s.corrupt for s in samples], [s.template for s in samples])
    other = counter_answers(model, tok, samples, means)
    abls = [Ablation(), Ablation.of(heads=[(5, 0), (4, 1)]), Ablation.of(mlps=[3])]
    gaps = scores(model, tok, samples, means, abls, other)[1]
    for a, ab in enumerate(abls):
        lp = end_ablation_reference(model, tok, samples, means, ab).double().log()
        ref = lp.gather(1, ans.view(-1, 1))[:, 0] - lp.gather(1, other.view(-1, 1))[:, 0]
        assert torch.allclose(gaps[a], ref, atol=1e-3), a
    intact = torch.stack([model(torch.tensor([tok(s.corrupt)["input_ids"]])).logits[0, -1].argmax() for s in samples])
    assert torch.equal(other, intact)


def test_one_pass_gives_the_accuracy_and_the_logit_difference_with_a_cluster_interval(embedded_model):
    """Protects the knockout on the logit difference beside accuracy (knockout.csv's ld, ld_lo, ld_hi): one pass of
    ablated forwards gives the same top-1 hits as the accuracy path (knockout_topk) (its gaps: the test above);
    a row's ld is the mean gap, and its interval the cluster-robust t interval over the problem clusters, recomputed
    here by a literal loop (each cluster's summed deviation from the mean, m/(m−1), t with m − 1 degrees of
    freedom from scipy-free bisection checked against the table value for 9 df)."""
    import math

    from arithmech.core.stats import t_quantile
    from arithmech.data.splits import cluster
    from arithmech.methods.ablation.curves import scored_rows
    from arithmech.methods.ablation.knockout import correct, counter_answers, scores

    model, tok, _ = embedded_model
    samples, _, _, _ = prompt_pairs(tok, 16, seed=3)
    means = mean_activations(model, tok, [s.corrupt for s in samples], [s.template for s in samples])
    abls = [Ablation(), Ablation.of(heads=[(5, 0), (4, 1), (3, 2)]), Ablation.of(mlps=[3, 4])]
    other = counter_answers(model, tok, samples, means)
    hits, gaps = scores(model, tok, samples, means, abls, other)
    assert torch.equal(hits, correct(model, tok, samples, means, abls))
    rows = scored_rows(model, tok, samples, means, abls, [{"a": a} for a in range(len(abls))])
    labels = [cluster(s) for s in samples]
    ids = list(dict.fromkeys(labels))
    m, n = len(ids), len(samples)
    assert 2 <= m < n  # prompts of one problem: the interval is over clusters, not prompts
    assert t_quantile(0.975, 9) == pytest.approx(2.262157, abs=1e-5)  # the t table, 9 degrees of freedom
    for a in range(len(abls)):
        g = [gaps[a, i].item() for i in range(n)]
        mean = sum(g) / n
        sums = [sum(g[i] - mean for i in range(n) if labels[i] == c) for c in ids]
        half = t_quantile(0.975, m - 1) * math.sqrt(m / (m - 1) * sum(x * x for x in sums) / n**2)
        assert rows.ld[a] == pytest.approx(mean) and rows.correct[a] == int(hits[a].sum())
        assert (rows.ld_lo[a], rows.ld_hi[a]) == pytest.approx((mean - half, mean + half), abs=1e-9)
    assert scored_rows(model, tok, samples, means, [], []).empty  # nothing to score: no forward
