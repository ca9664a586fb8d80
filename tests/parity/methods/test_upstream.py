"""Beyond direct effects: upstream path patching's fast method (arithmech.methods.upstream) equals the literal
hooked one (arithmech.methods.upstream_reference) at END and at the operand and operator positions, and
patching a clean run into itself changes nothing."""

from __future__ import annotations

import torch
from factories import prompt_pairs
from factories import scaled_biased_llama as _scaled_model

from arithmech.methods import upstream, upstream_reference
from arithmech.methods.patch_inputs import Inputs
from arithmech.methods.patching import end_cache


def _setup(model, tok, n, seed):
    samples, clean_p, corrupt_p, ans = prompt_pairs(tok, n, seed=seed)
    return (samples, clean_p, corrupt_p, ans, end_cache(model, tok, clean_p, ans), end_cache(model, tok, corrupt_p),
            [s.positions for s in samples])


def test_upstream_fast_equals_reference_on_biased_gqa(embedded_tokenizer):
    """Protects: every upstream path (q at END; k, v at END, A, operator, B) computed from caches equals the
    literal two-step hooked run (the model's own RoPE, GQA, biases, softmax) to 1e-5, for receivers in two
    layers, on effects two orders of magnitude larger; the END columns equal the END-only scan's."""
    tok = embedded_tokenizer
    model = _scaled_model(tok)
    samples, clean_p, corrupt_p, ans, c, x, roles = _setup(model, tok, 6, 1)
    rec, senders = [(2, 1), (1, 3)], [(0, 0), (0, 3), (0, 4), (1, 2), (1, 4)]
    fast = upstream.upstream_fast(model, tok, Inputs(clean_p, c, x, ans, corrupt_prompts=corrupt_p, roles=roles), rec)
    ref = upstream_reference.upstream_reference(model, tok, Inputs(clean_p, c, x, ans, corrupt_prompts=corrupt_p, roles=roles), rec,
                                senders=senders)
    end_only = upstream.upstream_fast(model, tok, Inputs(clean_p, c, x, ans), rec)
    for r in rec:
        cols = [upstream.senders_of(model, r).index(s) for s in senders if s[0] < r[0]]
        f, g = fast[r][:, cols], ref[r][:, cols]
        assert fast[r].shape == (6, r[0] * 5, len(upstream.COLUMNS)) and not g.isnan().any()
        assert (f - g).abs().max() <= 1e-5, r
        assert (end_only[r] - fast[r][..., :3]).abs().max() <= 1e-6 and f.abs().max() > 1e-3
        for ci, (position, path) in enumerate(upstream.COLUMNS):
            if position != "A":                     # A moves only where the operator comes first (next test)
                assert f[..., ci].abs().max() > 1e-4, (r, position, path)   # 10x the tolerance


def test_operand_before_the_operator_is_exactly_zero(embedded_tokenizer):
    """Protects the definition at the role positions: where operand A precedes the operator, X_c's activations
    there equal X_r's (causal attention), so every A path is exactly 0; where the operator comes first ("The
    addition of 8 and 4"), the A paths move."""
    tok = embedded_tokenizer
    model = _scaled_model(tok)
    samples, clean_p, corrupt_p, ans, c, x, roles = _setup(model, tok, 6, 1)
    inputs = Inputs(clean_p, c, x, ans, corrupt_prompts=corrupt_p, roles=roles)
    out = upstream.upstream_fast(model, tok, inputs, [(2, 1)])[(2, 1)]
    a_cols = [i for i, (p, _) in enumerate(upstream.COLUMNS) if p == "A"]
    before = torch.tensor([s.positions["A"][0] < s.positions["operator"][0] for s in samples])
    assert before.any() and (~before).any()
    assert torch.equal(out[before][..., a_cols], torch.zeros_like(out[before][..., a_cols]))
    assert out[~before][..., a_cols].abs().max() > 1e-4


def test_upstream_fast_equals_reference_on_the_embedded_model(embedded_model):
    """Protects: on the shipped embedded model (MHA, no biases, float32 as the beyond step loads it), a few
    prompts and senders of a layer-3 receiver agree with the literal hooked run to 1e-4 at every position."""
    model, tok, _ = embedded_model
    samples, clean_p, corrupt_p, ans, c, x, roles = _setup(model, tok, 4, 3)
    rec, senders = [(3, 2)], [(0, 1), (1, 8), (2, 5)]
    inputs = Inputs(clean_p, c, x, ans, corrupt_prompts=corrupt_p, roles=roles)
    fast = upstream.upstream_fast(model, tok, inputs, rec)[rec[0]]
    ref = upstream_reference.upstream_reference(model, tok, inputs, rec, senders=senders)[rec[0]]
    cols = [upstream.senders_of(model, rec[0]).index(s) for s in senders]
    assert (fast[:, cols] - ref[:, cols]).abs().max() <= 1e-4
    assert fast[:, cols].abs().max() > 1e-2


def test_upstream_clean_to_clean_is_exactly_zero(embedded_tokenizer):
    """Protects: with X_c = X_r no sender changes anything, so every upstream effect, at every position, is
    exactly 0; a role without a token is NaN (no path), not 0."""
    tok = embedded_tokenizer
    model = _scaled_model(tok, seed=2)
    samples, clean_p, _, ans, c, _, roles = _setup(model, tok, 4, 2)
    roles[0] = {**roles[0], "operator": []}
    inputs = Inputs(clean_p, c, c, ans, corrupt_prompts=clean_p, roles=roles)
    out = upstream.upstream_fast(model, tok, inputs, [(2, 0)])[(2, 0)]
    op = [i for i, (p, _) in enumerate(upstream.COLUMNS) if p == "operator"]
    assert out[0][:, op].isnan().all() and not out[1:].isnan().any()
    out[0][:, op] = 0.0
    assert torch.equal(out, torch.zeros_like(out))
