"""Beyond direct effects: upstream path patching's fast method equals the literal hooked one, and the
attribution methods meet their exact invariants (linear chain, completeness of the path integral)."""
from __future__ import annotations

import dataclasses

import torch

from arithmech.methods import attribution as A
from arithmech.methods import upstream as U
from arithmech.methods.patching import end_cache, path_patch_fast

from factories import make_biased_gqa_llama, prompt_pairs


def _scaled_model(tok, seed=0, gain=6.0):
    """The biased GQA Llama with every non-norm weight × ``gain``, so that patching moves logits by ~1e-3
    rather than ~1e-6 (differences of the two methods are then meaningful against the effects)."""
    model = make_biased_gqa_llama(len(tok), seed=seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.mul_(gain)
    return model


def _caches(model, tok, n=6, seed=1):
    _, clean, corrupt, ans = prompt_pairs(tok, n, seed=seed)
    return clean, end_cache(model, tok, clean, ans), end_cache(model, tok, corrupt), ans


def test_upstream_fast_equals_reference_on_biased_gqa(embedded_tokenizer):
    """Protects: upstream path patching (sender → receiver q/k/v → logits) computed from END caches equals
    the literal two-step hooked run (the model's own RoPE, GQA, biases, softmax) to 1e-4, for receivers
    in two layers, on effects three orders of magnitude larger than that."""
    tok = embedded_tokenizer
    model = _scaled_model(tok)
    clean, c, x, ans = _caches(model, tok)
    rec = [(2, 1), (1, 3), (2, 2)]
    fast = U.upstream_fast(model, tok, clean, c, x, ans, rec)
    ref = U.upstream_reference(model, tok, clean, c, x, ans, rec)
    for r in rec:
        assert fast[r].shape == (6, r[0] * 5, 3)
        assert (fast[r] - ref[r]).abs().max() <= 1e-4, r
        assert fast[r].abs().max() > 1e-3, r                       # something moved along every receiver
        assert fast[r][..., 0].abs().max() > 0 and fast[r][..., 2].abs().max() > 0


def test_upstream_clean_to_clean_is_exactly_zero(embedded_tokenizer):
    """Protects: with X_c = X_r no sender changes anything, so every upstream effect is exactly 0."""
    tok = embedded_tokenizer
    model = _scaled_model(tok, seed=2)
    clean, c, _, ans = _caches(model, tok, 4, seed=2)
    out = U.upstream_fast(model, tok, clean, c, c, ans, [(2, 0)])
    assert torch.equal(out[(2, 0)], torch.zeros_like(out[(2, 0)]))


def test_exact_chain_equals_path_patch_fast_and_linear_chain_makes_eap_exact(embedded_tokenizer):
    """Protects: the END chain of attribution.py reproduces identify's exact effects (path_patch_fast) to
    1e-5, and with every norm and MLP gate frozen (an affine chain) EAP equals the exact effect to 1e-4:
    EAP's error is the nonlinearities' and nothing else."""
    tok = embedded_tokenizer
    model = _scaled_model(tok, seed=3)
    _, c, x, ans = _caches(model, tok, 5, seed=3)
    L, H = 3, 4
    senders = [(l, h) for l in range(L) for h in range(H + 1)]
    ref = path_patch_fast(model, c, x, ans).logit_diff().reshape(5, -1)
    diff, _ = A.exact(model, c, x, ans, senders)
    assert (diff - ref).abs().max() <= 1e-5
    lin, _ = A.exact(model, c, x, ans, senders, ("norm", "gate"))
    eap = A.attribute(model, c, x, ans, (0.0,), ("norm", "gate")).reshape(5, -1)
    assert (lin - eap).abs().max() <= 1e-4 * max(1.0, float(lin.abs().max()))
    assert lin.abs().max() > 1e-3
    free = A.attribute(model, c, x, ans).reshape(5, -1)              # unfrozen: EAP is only first order
    assert (free - diff).abs().max() > 1e-6


def test_eap_ig_is_complete_for_a_single_sender(embedded_tokenizer):
    """Protects: when only one head differs between X_r and X_c, EAP-IG's path is that head's own patch,
    so (completeness of the path integral) it converges to the exact effect as the steps grow: 64 midpoint
    steps are within 1% of it, and closer than EAP (one step at the clean point)."""
    tok = embedded_tokenizer
    model = _scaled_model(tok, seed=4)
    _, c, x, ans = _caches(model, tok, 5, seed=4)
    z = c.z.clone()
    z[:, 1, 12:24] = x.z[:, 1, 12:24]                                 # head 1.1 alone takes its X_c value
    one = dataclasses.replace(c, z=z, mlp_out=c.mlp_out, resid_pre=c.resid_pre)
    diff, _ = A.exact(model, c, one, ans, [(1, 1)])
    ig = A.attribute(model, c, one, ans, A.ig_alphas(64))[:, 1, 1]
    eap = A.attribute(model, c, one, ans)[:, 1, 1]
    assert diff.abs().max() > 1e-3
    assert (ig - diff[:, 0]).abs().max() <= 0.01 * diff.abs().max()
    assert (ig - diff[:, 0]).abs().max() < (eap - diff[:, 0]).abs().max()
