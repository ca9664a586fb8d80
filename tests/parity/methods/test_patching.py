"""Path patching is exact: the fast END-residual implementation equals Algorithm 1 done literally (one
hooked forward per sender), and patching that cannot change anything changes nothing, bit for bit."""
from __future__ import annotations

import warnings

import torch
from factories import make_biased_gqa_llama, prompt_pairs

from arithmech.evals.scoring import filter_correct
from arithmech.methods.patch_inputs import Inputs
from arithmech.methods.patching import end_cache, path_patch, path_patch_fast, path_patch_reference


def both(model, tok, clean, corrupt, ans):
    """Path patching of the same pairs, fast and literal (Algorithm 1): ``(fast, reference)`` Patched."""
    c, x = end_cache(model, tok, clean, ans), end_cache(model, tok, corrupt)
    return path_patch_fast(model, c, x, ans, prob=True), path_patch_reference(model, tok, Inputs(clean, c, x, ans), prob=True)


def assert_counter_agrees(fast, ref, tol: float):
    """The counterfactual's answer and its logits (the share's inputs) agree between the two methods."""
    assert torch.equal(fast.counter, ref.counter)
    for f in ("counter_p", "counter_o", "ld_r", "ld_c"):
        assert (getattr(fast, f) - getattr(ref, f)).abs().max() <= tol, f
    assert (fast.ld_effect() - ref.ld_effect()).abs().max() <= tol


def test_fast_equals_reference_on_embedded_model(embedded_model):
    """Protects: the fast END-residual path patching gives the same patched logits, logsumexp (to fp32
    relative precision) and relative effects (to 1e-5) as one hooked forward per component
    (Algorithm 1) on the embedded model."""
    model, tok, _ = embedded_model
    samples, clean, corrupt, ans = prompt_pairs(tok, 6)
    kept, _ = filter_correct(model, tok, samples)
    assert len(kept) >= 4, "the embedded model should answer most Fig. 8/10 prompts"
    fast, ref = both(model, tok, clean, corrupt, ans)
    scale = ref.logit_p.abs().clamp(min=1)                          # trained logits are ~14: fp32 relative error
    assert ((fast.logit_p - ref.logit_p).abs() / scale).max() <= 1e-5
    assert ((fast.lse_p - ref.lse_p).abs() / ref.lse_p.abs().clamp(min=1)).max() <= 1e-5
    assert ((fast.logit_o - ref.logit_o).abs() / scale[..., 0]).max() <= 1e-5   # baseline chain == model logit
    rows = torch.tensor([s in kept for s in samples])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eff_f, eff_r = fast.select(rows).relative_change(), ref.select(rows).relative_change()
    assert (eff_f - eff_r).abs().max() <= 1e-5
    assert eff_f.abs().max() > 1e-3                                   # something was patched at all
    assert_counter_agrees(fast, ref, 1e-4)                            # the share's inputs: X_c's answer, LD
    assert (fast.share() - ref.share()).abs().max() <= 1e-5 and fast.share().abs().max() > 1e-2
    assert not torch.equal(fast.counter, ans)                         # X_c's answer is another token here


def test_fast_equals_reference_on_gqa_model_with_biases(embedded_tokenizer):
    """Protects: exactness under GQA, head_dim != d_model / n_heads and an o_proj (and MLP) bias."""
    tok = embedded_tokenizer
    model = make_biased_gqa_llama(len(tok))
    _, clean, corrupt, ans = prompt_pairs(tok, 5, seed=1)
    fast, ref = both(model, tok, clean, corrupt, ans)
    assert fast.logit_p.shape == (5, 3, 5)
    assert (fast.logit_p - ref.logit_p).abs().max() <= 1e-5
    assert (fast.lse_p - ref.lse_p).abs().max() <= 1e-5
    assert (fast.logit_p - fast.logit_o[..., None]).abs().max() > 1e-4
    assert_counter_agrees(fast, ref, 1e-5)


def test_clean_to_clean_patching_is_exactly_zero(embedded_tokenizer):
    """Protects: patching X_r with itself changes nothing, bit for bit, in both implementations: the
    relative change, P({C}) and the change of the logit difference (the share's numerator); the whole
    effect (X_r against itself) is exactly 0 too, so the share is undefined (NaN), never a number."""
    tok = embedded_tokenizer
    model = make_biased_gqa_llama(len(tok), seed=2)
    _, clean, _, ans = prompt_pairs(tok, 4, seed=2)
    for method in ("fast", "reference"):
        p = path_patch(model, tok, clean, clean, ans, method=method, prob=True)
        assert torch.equal(p.logit_diff(), torch.zeros_like(p.logit_diff())), method
        assert torch.equal(p.prob(), p.prob_o()[..., None].expand_as(p.prob())), method
        assert torch.equal(p.ld_effect(), torch.zeros_like(p.ld_effect())), method
        assert torch.equal(p.ld_total(), torch.zeros(4, dtype=torch.float64)), method
        assert p.share().isnan().all(), method


def test_component_without_output_weights_has_zero_effect(embedded_tokenizer):
    """Protects: the sender's change reaches the logits only through its own W_O block (a head whose
    W_O block is zero) or its own output (an MLP whose down_proj is zero): effect exactly 0, and share
    exactly 0 of a whole effect that is not."""
    tok = embedded_tokenizer
    model = make_biased_gqa_llama(len(tok), seed=3)
    with torch.no_grad():
        model.model.layers[1].self_attn.o_proj.weight[:, 2 * 12:3 * 12] = 0
        model.model.layers[0].mlp.down_proj.weight.zero_()
        model.model.layers[0].mlp.down_proj.bias.zero_()
    _, clean, corrupt, ans = prompt_pairs(tok, 4, seed=3)
    for method in ("fast", "reference"):
        p = path_patch(model, tok, clean, corrupt, ans, method=method)
        d = p.logit_diff()
        assert torch.equal(d[:, 1, 2], torch.zeros(4)) and torch.equal(d[:, 0, 4], torch.zeros(4)), method
        assert d[:, 1, [0, 1, 3]].abs().max() > 0, method
        share = p.share()
        assert share[1, 2].item() == 0.0 and share[0, 4].item() == 0.0 and p.ld_total().mean() != 0, method
        assert share[1, [0, 1, 3]].abs().max() > 0, method


def test_full_vocabulary_logits_are_bounded_per_call(embedded_tokenizer):
    """Protects the memory bound of the fast path's P({C}): the unembedding never sees more than
    ``max_logits`` rows × vocabulary at once (whole samples: one sample's ``L * (H + 2)`` rows when
    fewer fit), and the chunked logsumexp equals the one-shot one."""
    tok = embedded_tokenizer
    model = make_biased_gqa_llama(len(tok), seed=5)
    _, clean, corrupt, ans = prompt_pairs(tok, 5, seed=5)
    c, x = end_cache(model, tok, clean, ans), end_cache(model, tok, corrupt, ans)   # x.top1: X_c's answer, no extra W_U call
    cols = 3 * (4 + 2)                                                 # rows per sample: L * (H + 2)
    one_shot = path_patch_fast(model, c, x, ans, prob=True, max_logits=1 << 30)
    for budget, most in ((2 * cols * len(embedded_tokenizer), 2), (cols * len(embedded_tokenizer) // 3, 1)):
        seen = []
        hook = model.lm_head.register_forward_hook(lambda m, a, y: seen.append(y.shape[:-1].numel()))  # noqa: B023 (used at once)
        try:
            chunked = path_patch_fast(model, c, x, ans, prob=True, max_logits=budget)
        finally:
            hook.remove()
        assert max(seen) == most * cols and sum(seen) == 5 * cols, (budget, seen)
        torch.testing.assert_close(chunked.lse_p, one_shot.lse_p, rtol=1e-6, atol=1e-6)
        assert torch.equal(chunked.logit_p, one_shot.logit_p)
