"""The knockout's reference means (arithmech.methods.ablation.pool) are what they claim: pool means equal a
plain loop and never hold the prompt's own operand pair, random orders never hold a key component, and the
pool is planned and aligned as stated."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from arithmech.core.trace import TraceDict
from arithmech.data import pairs, templates
from arithmech.methods.ablation.curves import knockout_curve, random_orders
from arithmech.methods.ablation.knockout import activations
from arithmech.methods.ablation.pool import ALL, PoolMeans, build_pool, fold, pool_key, pool_prompts, pool_seed
from arithmech.methods.ablation.settings import Curve


def capture(model, tok, prompt: str) -> tuple[torch.Tensor, torch.Tensor]:
    """One prompt, one plain forward: ``z (L, seq, H*dh)`` (o_proj inputs) and ``m (L, seq, d)``."""
    L = model.config.num_hidden_layers
    got = {}
    with torch.no_grad(), \
            TraceDict(model, [f"model.layers.{l}.self_attn.o_proj" for l in range(L)], retain_input=True) as tz, \
            TraceDict(model, [f"model.layers.{l}.mlp" for l in range(L)]) as tm:
        model(torch.tensor([tok(prompt)["input_ids"]]))
        got["z"] = torch.stack([tz[f"model.layers.{l}.self_attn.o_proj"].input[0] for l in range(L)])
        got["m"] = torch.stack([tm[f"model.layers.{l}.mlp"].output[0] for l in range(L)])
    return got["z"].float(), got["m"].float()


TPLS = [templates.TEMPLATES[t.id] for t in templates.FIG8 if t.op == "addition"][:2]


@pytest.fixture(scope="module")
def pool_and_prompts(embedded_model):
    """A reference pool of two addition templates (40 X_c per family) and the literal per-prompt activations."""
    model, tok, _ = embedded_model
    pool = build_pool(model, tok, pool_prompts(tok, TPLS, 40, 3, draw=pairs.Draw("first", 0, 1)), folds=4, min_group=4)
    raw = []
    for fam in sorted({t.family for t in TPLS}):
        drawn, _ = pairs.make_pairs(tok, [t for t in TPLS if t.family == fam], n=40, seed=pool_seed(3, fam), draw=pairs.Draw("first", 0, 1))
        raw += [(s, *capture(model, tok, s.corrupt)) for s in drawn]
    return pool, raw


def test_pool_means_equal_a_plain_loop_and_leave_the_pair_out(embedded_model, pool_and_prompts):
    """Protects the reference pool's arithmetic: each evaluated prompt's mean (template × length ×
    position, its operand pair's fold left out; family right-aligned below min_group) equals a plain
    loop over single-prompt forwards, and no pool prompt with the prompt's own (a, b) is in it."""
    model, tok, _ = embedded_model
    pool, raw = pool_and_prompts
    evaluated, _ = pairs.make_pairs(tok, TPLS, n=12, seed=99, draw=pairs.Draw("first", 0, 1))
    sources = Counter()
    for s in evaluated:
        seq = len(tok(s.clean)["input_ids"])
        key = pool_key(s)
        f = fold(s.a, s.b, pool.folds)
        same = [(z, m) for p, z, m in raw if p.template == s.template and z.shape[1] == seq
                and fold(p.a, p.b, pool.folds) != f]
        assert all((p.a, p.b) != (s.a, s.b) for p, z, m in raw if p.template == s.template and z.shape[1] == seq
                   and fold(p.a, p.b, pool.folds) != f)
        z, m = pool.lookup(key, seq)
        src = pool.source(key, seq)
        sources[src] += 1
        if src == "template":
            assert len(same) >= pool.min_group
            ref_z, ref_m = torch.stack([z for z, _ in same]).mean(0), torch.stack([m for _, m in same]).mean(0)
        else:                                     # the family, right-aligned (END with END)
            fam = [(z[:, -seq:], m[:, -seq:]) for p, z, m in raw if p.family == s.family
                   and fold(p.a, p.b, pool.folds) != f and z.shape[1] >= seq]
            ref_z, ref_m = torch.stack([z for z, _ in fam]).mean(0), torch.stack([m for _, m in fam]).mean(0)
        torch.testing.assert_close(z, ref_z, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(m, ref_m, atol=1e-5, rtol=1e-5)
    assert sources["template"] > 0


def test_a_pool_prompt_with_the_samples_pair_never_moves_its_mean():
    """Protects leave-one-pair-out on synthetic activations: adding pool prompts with the evaluated
    prompt's own (a, b) — however large — leaves its mean unchanged (template and family means), while a
    prompt of another fold does move it; the fallback to the family is taken below min_group."""
    g = torch.Generator().manual_seed(0)
    pm = PoolMeans(folds=4, min_group=3)
    for a in range(1, 10):
        for b in range(1, 10):
            pm.add(("t", "fam", a, b), torch.randn(2, 5, 6, generator=g), torch.randn(2, 5, 4, generator=g))
    key = ("t", "fam", 3, 4)
    before = pm.lookup(key, 5)
    assert pm.source(key, 5) == "template"
    pm.add(("t", "fam", 3, 4), torch.full((2, 5, 6), 1e6), torch.full((2, 5, 4), 1e6))
    after = pm.lookup(key, 5)
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])
    other = next((a, b) for a in range(1, 10) for b in range(1, 10) if fold(a, b, 4) != fold(3, 4, 4))
    pm.add(("t", "fam", *other), torch.full((2, 5, 6), 1e6), torch.full((2, 5, 4), 1e6))
    assert pm.lookup(key, 5)[0].abs().max() > 1e3
    pm.min_group = 10 ** 6                               # too few: the family mean at the same positions
    assert pm.source(key, 5) == "family" and pm.source(None, 5) == "all-families"
    fam_z, _ = pm.lookup(key, 5)
    assert pm.family["fam"][0].shape[2] == 5 and "fam" in pm.family and ALL in pm.family
    assert fam_z.abs().max() > 1e3                        # the other fold's large prompt is in it, 3,4's is not
    assert fam_z.abs().max() < 1e6 / 60


def test_random_orders_never_hold_a_key_component(embedded_model):
    """Protects the random baseline: every one of ≥ 20 seeded orders is a permutation of the non-key
    heads only, and the knockout rows it produces are ``n_random`` orders at each requested k."""
    universe = [(l, h) for l in range(6) for h in range(8)]
    key = [(0, 1), (4, 3), (5, 0)]
    orders = random_orders(universe, key, 20, seed=7)
    assert len(orders) == 20
    for o in orders:
        assert not set(o) & set(key) and sorted(o) == sorted(set(universe) - set(key))
    assert len({tuple(o) for o in orders}) == 20
    assert all(not {(1, 1), (2, 2)} & set(o) for o in random_orders(universe, [[1, 1], [2, 2]], 5, 0))
    assert all(not {0, 3} & set(o) for o in random_orders(list(range(6)), [0, 3], 20, 1))
    model, tok, _ = embedded_model
    samples, _ = pairs.make_pairs(tok, "addition", n=6, seed=1, draw=pairs.Draw("first", 0, 1))
    pool = build_pool(model, tok, pool_prompts(tok, pairs.select_templates("addition")[:1], 8, 0, draw=pairs.Draw("first", 0, 1)),
                      min_group=1)
    d = knockout_curve(model, tok, samples, pool, Curve("head", key, universe, key, [0, 3], [3], False), n_random=20,
                       seed=7)
    r = d[d.order == "random-rank"]
    assert len(r) == 20 and set(r.k) == {3} and set(r.seed) == set(range(20))
    assert (d.ci_low <= d.accuracy).all() and (d.accuracy <= d.ci_high).all() and (d.correct == d.accuracy * d.n).all()


def test_a_prompt_longer_than_the_pool_gets_the_right_aligned_mean_and_the_overall_mean_beyond():
    """Protects the documented fallback for free text longer than every pool prompt (Fig. 4's cases):
    the last positions get the right-aligned mean of every family, the positions the pool never reaches
    the mean over all of its positions (never an error, never a silent zero)."""
    pm = PoolMeans(folds=2, min_group=1)
    pm.add(("t", "f", 1, 2), torch.ones(1, 3, 2), torch.ones(1, 3, 1))
    pm.add(("u", "g", 2, 1), 3 * torch.ones(1, 2, 2), 3 * torch.ones(1, 2, 1))
    z, m = pm.lookup(None, 5)
    assert z.shape == (1, 5, 2) and m.shape == (1, 5, 1) and pm.source(None, 5) == "all-families"
    assert z[0, :, 0].tolist() == pytest.approx([1.8, 1.8, 1.0, 2.0, 2.0])   # beyond: (1·3 + 3·2) / 5; then 1, (1+3)/2, (1+3)/2


def test_planned_pool_allocates_only_the_groups_prune_keeps(embedded_model):
    """Protects the pool's memory fix: knowing the groups before adding (``PoolMeans.plan``) allocates
    exactly the groups ``prune`` keeps, with bit-identical sums, so the lookups are unchanged. The
    reference reads the activations through the same batched reader as ``build_pool`` (a batch of one
    differs from a batched forward in the last float bits, which says nothing about the plan)."""
    model, tok, _ = embedded_model
    pools = pool_prompts(tok, TPLS, 40, 3, draw=pairs.Draw("first", 0, 1))
    planned = build_pool(model, tok, pools, folds=4, min_group=34)   # keeps one of two
    pm = PoolMeans(4, 34)                                # the same pool, every group allocated, then pruned
    for fam in sorted({t.family for t in TPLS}):
        drawn, _ = pairs.make_pairs(tok, [t for t in TPLS if t.family == fam], n=40, seed=pool_seed(3, fam), draw=pairs.Draw("first", 0, 1))
        for i, z, m in activations(model, tok, [s.corrupt for s in drawn], 64):
            pm.add(pool_key(drawn[i]), z, m)
    allocated = len(pm.group)
    pm.prune()
    assert sorted(planned.group) == sorted(pm.group) and allocated > len(pm.group) > 0
    for k, (z, m, n) in planned.group.items():
        assert torch.equal(z, pm.group[k][0]) and torch.equal(m, pm.group[k][1]) and torch.equal(n, pm.group[k][2])
