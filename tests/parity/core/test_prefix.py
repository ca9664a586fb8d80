"""A shared few-shot prefix run once (arithmech.core.prefix) gives the results of running every prompt whole."""
from __future__ import annotations

import warnings

import torch
from factories import one_preamble

from arithmech.core import prefix
from arithmech.data import pairs
from arithmech.data.batches import answer_ids, group_by_length
from arithmech.evals.scoring import filter_correct, predict
from arithmech.methods.ablation.intervention import Forwards
from arithmech.methods.ablation.knockout import Ablation, activations, group_key, knockout_topk, mean_activations
from arithmech.methods.effects import effects_frame
from arithmech.methods.patch_inputs import Inputs
from arithmech.methods.patching import end_cache, path_patch, path_patch_reference


def _few_shot(model, tok, n=48, task="all"):
    """Few-shot pairs that share one set of examples (:func:`factories.one_preamble`)."""
    ss, _ = pairs.make_pairs(tok, task, n=n, seed=0, draw=pairs.Draw("last-digit", 4, 16))
    return one_preamble(ss)


def test_shared_length_stops_before_end():
    """Protects: the cached part never includes END (the position patching and knockout act at)."""
    ids = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 4]])
    assert prefix.shared_length(ids) == 3
    assert prefix.shared_length(torch.tensor([[1, 2, 3], [1, 5, 3]])) == 1


def test_patching_effects_equal_with_and_without_the_cached_prefix(embedded_model):
    """Protects: the cached prefix — path-patching effects with the prefix run once equal a run without
    the cache (≤ 1e-5), and the fast path with the cache agrees with the literal reference (Algorithm 1,
    every prompt run whole) on a few prompts."""
    model, tok, _ = embedded_model
    ss, _ = filter_correct(model, tok, _few_shot(model, tok, 96))    # X_r, as identify patches
    assert len(ss) >= 8
    assert prefix.SharedPrefix(model, [ids for _, ids in group_by_length(tok, [s.clean for s in ss])]).kv
    clean, corrupt, ans = [s.clean for s in ss], [s.corrupt for s in ss], answer_ids(tok, ss)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cached = effects_frame(path_patch(model, tok, clean, corrupt, ans), "t", False, 200, 0)
        with prefix.enabled(False):
            whole = effects_frame(path_patch(model, tok, clean, corrupt, ans), "t", False, 200, 0)
    for col in ("effect", "effect_lo", "effect_hi", "logit_diff"):
        assert (cached[col] - whole[col]).abs().max() <= 1e-5, col
    assert cached.effect.abs().max() > 1e-3                          # something was patched at all
    few = slice(0, 4)
    fast = path_patch(model, tok, clean[few], corrupt[few], ans[few])
    with prefix.enabled(False):
        c, x = end_cache(model, tok, clean[few], ans[few]), end_cache(model, tok, corrupt[few])
    ref = path_patch_reference(model, tok, Inputs(clean[few], c, x, ans[few]))
    assert ((fast.logit_p - ref.logit_p).abs() / ref.logit_p.abs().clamp(min=1)).max() <= 2e-5   # fp32, 2 paths
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert (fast.relative_change() - ref.relative_change()).abs().max() <= 1e-5


def test_predictions_and_knockout_equal_with_and_without_the_cache(embedded_model):
    """Protects: the X_r filter and the END knockout (mean ablation replayed on the clean prefix) give the
    same tokens and probabilities with the shared prefix run once."""
    model, tok, _ = embedded_model
    ss = _few_shot(model, tok, 32)
    prompts = [s.clean for s in ss]
    a = predict(model, tok, prompts, top_k=3)
    with prefix.enabled(False):
        b = predict(model, tok, prompts, top_k=3)
    assert torch.equal(a, b)
    means = mean_activations(model, tok, [s.corrupt for s in ss], [group_key(s) for s in ss])
    abl = [Ablation.of(heads=[(0, 0), (1, 1)]), Ablation.of(), Ablation.of(mlps=[0])]
    keys = [means.key(s) for s in ss]
    ia, pa = knockout_topk(model, tok, prompts, keys, means, abl, k=3, forwards=Forwards(positions="end"))
    with prefix.enabled(False):
        ib, pb = knockout_topk(model, tok, prompts, keys, means, abl, k=3, forwards=Forwards(positions="end"))
    assert torch.equal(ia[..., 0], ib[..., 0]) and (pa - pb).abs().max() <= 1e-5


def test_means_activations_equal_with_and_without_the_cache(embedded_model):
    """Protects: the means' activations at every position (the prefix's broadcast from one row) equal those
    of whole forwards."""
    model, tok, _ = embedded_model
    prompts = [s.corrupt for s in _few_shot(model, tok, 16, "addition")]
    got = {i: (z, m) for i, z, m in activations(model, tok, prompts)}
    with prefix.enabled(False):
        for i, z, m in activations(model, tok, prompts):
            for a, b in ((got[i][0], z), (got[i][1], m)):             # fp32 relative precision
                assert (a - b).abs().max() <= 1e-5 * b.abs().max().clamp(min=1)


def test_cached_prefix_is_exact_under_gqa(word_llama_fig8):
    """Protects: the shared-prefix cache is exact with grouped key/value heads (SmolLM2 has 3 for 9 query
    heads; the embedded model has one per head): patched logits with and without it agree to fp32."""
    model, tok, _ = word_llama_fig8
    assert model.config.num_key_value_heads < model.config.num_attention_heads
    ss, _ = pairs.make_pairs(tok, "all", n=24, seed=1, draw=pairs.Draw("last-digit", 4, 16))
    ss = one_preamble(ss)
    clean, corrupt, ans = [s.clean for s in ss], [s.corrupt for s in ss], answer_ids(tok, ss)
    assert prefix.SharedPrefix(model, [ids for _, ids in group_by_length(tok, clean)]).kv   # it is used
    a = path_patch(model, tok, clean, corrupt, ans)
    with prefix.enabled(False):
        b = path_patch(model, tok, clean, corrupt, ans)
    assert (a.logit_p - b.logit_p).abs().max() <= 1e-5 * b.logit_p.abs().max().clamp(min=1)

