"""Parity tests of ``arithmech/methods/attribution.py``."""
from __future__ import annotations

import dataclasses

from factories import end_caches as _caches
from factories import scaled_biased_llama as _scaled_model

from arithmech.methods import attribution
from arithmech.methods.patching import path_patch_fast


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
    diff, _ = attribution.exact(model, c, x, ans, senders)
    assert (diff - ref).abs().max() <= 1e-5
    lin, _ = attribution.exact(model, c, x, ans, senders, ("norm", "gate"))
    eap = attribution.attribute(model, c, x, ans, (0.0,), ("norm", "gate")).reshape(5, -1)
    assert (lin - eap).abs().max() <= 1e-4 * max(1.0, float(lin.abs().max()))
    assert lin.abs().max() > 1e-3
    free = attribution.attribute(model, c, x, ans).reshape(5, -1)              # unfrozen: EAP is only first order
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
    diff, _ = attribution.exact(model, c, one, ans, [(1, 1)])
    ig = attribution.attribute(model, c, one, ans, attribution.ig_alphas(64))[:, 1, 1]
    eap = attribution.attribute(model, c, one, ans)[:, 1, 1]
    assert diff.abs().max() > 1e-3
    assert (ig - diff[:, 0]).abs().max() <= 0.01 * diff.abs().max()
    assert (ig - diff[:, 0]).abs().max() < (eap - diff[:, 0]).abs().max()
