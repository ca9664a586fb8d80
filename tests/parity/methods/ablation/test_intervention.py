"""Mean ablation is one intervention (arithmech.methods.ablation.intervention.MeanAblation): the knockout's batched
replacement and the explorer's hooks give, bit for bit, what the two implementations they replaced gave
(frozen copies below), and both mean stores answer the one MeanSource protocol."""
from __future__ import annotations

import torch

from arithmech.core.models import arch_for
from arithmech.core.trace import TraceDict
from arithmech.data import pairs
from arithmech.methods import explorer
from arithmech.methods.ablation.intervention import MeanAblation, MeanSource
from arithmech.methods.ablation.knockout import Means
from arithmech.methods.ablation.pool import PoolMeans


# ---------------------------------------------------------------- frozen copies of the replaced code
def old_knockout_edit(x, mask, mean, G):
    """knockout_topk's head edit before the refactor: x (rows, seq', H*dh), mask (rows, H), mean (b, seq', H*dh)."""
    H = mask.shape[-1]
    if not mask.any():
        return x
    xh = x.unflatten(-1, (H, -1))
    m = mean.to(x.device, x.dtype).unflatten(-1, (H, -1)).repeat_interleave(G, 0)
    return torch.where(mask.to(x.device)[:, None, :, None], m, xh).flatten(-2)


def old_knockout_mlp_edit(y, mask, mean, G):
    """knockout_topk's MLP edit before the refactor: y (rows, seq', d), mask (rows,), mean (b, seq', d)."""
    if not mask.any():
        return y
    m = mean.to(y.device, y.dtype).repeat_interleave(G, 0)
    return torch.where(mask.to(y.device)[:, None, None], m, y)


def old_explorer_ablation(model, heads, means, positions="end"):
    """explorer.mean_ablation before the refactor (a context-manager factory)."""
    arch, n_heads = arch_for(model), model.config.num_attention_heads
    by_layer: dict = {}
    for l, h in heads:
        by_layer.setdefault(arch.path("o_proj", l), (l, []))[1].append(h)

    def edit(z, name):
        l, hs = by_layer[name]
        mean = means.lookup(None, z.shape[1])[0][l].unflatten(-1, (n_heads, -1))
        zh = z.unflatten(-1, (n_heads, -1)).clone()
        at = slice(-1, None) if positions == "end" else slice(None)
        zh[:, at, hs] = mean[None, at, hs].to(z)
        return zh.flatten(-2)

    return lambda: TraceDict(model, list(by_layer), retain_output=False, edit_input=edit)


# ------------------------------------------------------------------------------------------ tests
def test_mean_ablation_equals_the_knockouts_former_edits_bit_for_bit():
    """Protects knockout_topk's numbers: MeanAblation with one mask row per (prompt, ablation) row and one
    mean row per prompt (``repeat = G``) replaces exactly what the former head and MLP edits replaced, bit
    for bit, at every position and at END only (a one-position value, as the key/value-cache replay runs),
    and hands back the value itself when nothing is masked."""
    g = torch.Generator().manual_seed(0)
    b, G, seq, H, dh, d = 3, 4, 5, 4, 6, 10
    for s in (seq, 1):                                      # all positions; END replayed on the cache
        x = torch.randn(b * G, s, H * dh, generator=g)
        mask = torch.rand(b * G, H, generator=g) < 0.4
        mean = torch.randn(b, s, H * dh, generator=g)
        want = old_knockout_edit(x, mask, mean, G)
        assert torch.equal(MeanAblation(mask, mean, "all", repeat=G)(x), want)
        if s == 1:
            assert torch.equal(MeanAblation(mask, mean, "end", repeat=G)(x), want)
        y, mm = torch.randn(b * G, s, d, generator=g), torch.rand(b * G, generator=g) < 0.5
        mean_m = torch.randn(b, s, d, generator=g)
        want_m = old_knockout_mlp_edit(y, mm, mean_m, G)
        assert torch.equal(MeanAblation(mm[:, None], mean_m, "all", repeat=G)(y), want_m)
    none = torch.zeros(b * G, H, dtype=torch.bool)
    assert MeanAblation(none, mean, "all", repeat=G)(x) is x


def test_explorer_mean_ablation_equals_its_former_hooks_bit_for_bit(embedded_model):
    """Protects the explorer's knocked-out views: explorer.mean_ablation (now MeanAblation) gives the very
    logits of the former slice-assigning hooks, at END and at every position, for heads spread over layers
    (two of one layer), on a batch of embedded-model prompts with pooled X_c means."""
    model, tok, _ = embedded_model
    samples, _ = pairs.make_pairs(tok, "fig8", n=12, seed=0, draw=pairs.Draw("first", 0, 1))
    means = explorer.knockout_means(model, tok, samples)
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    heads = [(0, 1), (L - 1, 0), (L - 1, H - 1)]
    prompts = [s.clean for s in samples]
    T = len(tok(prompts[0])["input_ids"])
    ids = torch.tensor([tok(p)["input_ids"] for p in prompts if len(tok(p)["input_ids"]) == T])
    intact = model(ids, use_cache=False).logits[:, -1]
    for positions in ("end", "all"):
        with explorer.mean_ablation(model, heads, means, positions)():
            got = model(ids, use_cache=False).logits[:, -1]
        with old_explorer_ablation(model, heads, means, positions)():
            want = model(ids, use_cache=False).logits[:, -1]
        assert torch.equal(got, want), positions
        assert not torch.equal(got, intact)                 # the heads were knocked out at all


def test_both_mean_stores_answer_the_mean_source_protocol():
    """Protects the one protocol of the knockout's mean stores: knockout.Means and pool.PoolMeans
    have every MeanSource member, Means hands prompts outside its groups its position-pooled means,
    PoolMeans itself (its lookup falls back to family means), and each describes itself in one line."""
    members = {n for n in vars(MeanSource) if not n.startswith("_")}
    assert members == {"is_pooled", "key", "lookup", "source", "for_unseen", "describe"}
    for store in (Means, PoolMeans):
        assert members <= set(dir(store)), store
    z, m = torch.randn(2, 3, 8), torch.randn(2, 3, 5)                # (L, seq, H*dh), (L, seq, d)
    means = Means({("t", 3): z}, {("t", 3): m}, {("t", 3): 4})
    unseen = means.for_unseen()
    assert unseen.is_pooled and not means.is_pooled and unseen.for_unseen() is unseen
    assert torch.equal(unseen.lookup(None, 3)[0][:, 0], z[:, 0])       # position 0 pooled over one group
    assert means.describe() == "X_c of the identification samples (per template)"
    pool = PoolMeans(folds=2, min_group=1)
    assert pool.for_unseen() is pool and not pool.is_pooled and "reference pool" in pool.describe()
