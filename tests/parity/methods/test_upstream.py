"""Beyond direct effects: upstream path patching's fast method (arithmech.methods.upstream) equals the literal
hooked one, and patching a clean run into itself changes nothing."""

from __future__ import annotations

import torch

from arithmech.methods import upstream as U

from factories import end_caches as _caches, scaled_biased_llama as _scaled_model


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
