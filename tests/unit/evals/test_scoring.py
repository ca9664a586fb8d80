"""Unit tests of ``arithmech/evals/scoring.py``."""
from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
import torch
from factories import make_tiny_llama

from arithmech.data import pairs
from arithmech.data.answer_tokens import answer_token_table
from arithmech.data.batches import answer_ids
from arithmech.evals.scoring import check_counterfactuals, filter_correct, predict
from arithmech.methods.prepare import prepare


def _constant_model(tok, token: str):
    """A tiny Llama whose top-1 next token is ``token`` after every prompt: all embeddings equal, so the
    END state is one vector, and the output row of ``token`` is that vector (the others zero)."""
    model = make_tiny_llama(n_layers=2, vocab=len(tok), seed=1)
    with torch.no_grad():
        model.model.embed_tokens.weight[:] = model.model.embed_tokens.weight[0]
        h = model.model(torch.tensor([[1, 2, 3]])).last_hidden_state[0, -1]
        model.lm_head.weight.zero_()
        model.lm_head.weight[tok.convert_tokens_to_ids(token)] = h
    return model


def test_counterfactual_check_drops_pairs_answered_the_same(embedded_tokenizer, monkeypatch):
    """Protects the X_c check: a model whose answer ignores the prompt answers X_c as X_r, so every pair is
    dropped and counted; prepare then stops with a message saying why (no X_r is left). It writes "88...",
    so no answer "8" is whole and X_r is empty before the X_c check; counted as whole, the X_c check empties it."""
    tok = embedded_tokenizer
    model = _constant_model(tok, "8")
    samples, _ = pairs.make_pairs(tok, "addition", n=60, seed=0, draw=pairs.Draw("single-token", 0, 1))
    right = [s for s in samples if s.answer == "8"]
    assert right
    kept, passed = check_counterfactuals(model, tok, samples)
    assert kept == [s for s in samples if s.answer != "8"] and passed == [s.answer != "8" for s in samples]
    with pytest.raises(ValueError, match=f"answers none of the 60 .*right \\({len(right)} by the answer token, none also"):
        prepare(model, tok, "addition", 60, 0, draw=pairs.Draw("single-token", 0, 1))
    from arithmech.methods import prepare as methods_prepare
    monkeypatch.setattr(methods_prepare, "greedy_exact", lambda model, tok, items, batch_size: [True] * len(items))
    with pytest.raises(ValueError, match=f"answers {len(right)} of the 60 .*top-1 token is still the answer"):
        prepare(model, tok, "addition", 60, 0, draw=pairs.Draw("single-token", 0, 1))


def test_counterfactual_check_on_the_embedded_model(embedded_model):
    """Protects prepare's counts against a direct recount: a pair whose X_c is X_r itself is always dropped;
    the others pass exactly when the model's top-1 token on X_c differs from the answer token; info and the
    answer-token table agree with the samples kept."""
    model, tok, _ = embedded_model
    samples, _ = pairs.make_pairs(tok, "addition", n=48, seed=2, draw=pairs.Draw("last-digit", 0, 1))
    same = [dataclasses.replace(s, corrupt=s.clean) if i % 3 == 0 else s for i, s in enumerate(samples)]
    correct, _ = filter_correct(model, tok, same)
    kept, passed = check_counterfactuals(model, tok, correct)
    top_c = predict(model, tok, [s.corrupt for s in correct])[:, 0]
    assert passed == (top_c != answer_ids(tok, correct)).tolist()
    assert all(s.corrupt != s.clean for s in kept) and any(s.corrupt == s.clean for s in correct)
    kept2, info = prepare(model, tok, same, 48, 0, draw=pairs.Draw("last-digit", 0, 1))   # ready-made: not drawn
    assert kept2 == kept and info["n_kept"] == len(kept) and info["n_correct"] == len(correct)
    cc = info["counterfactual_check"]
    assert (cc["checked"], cc["passed"], cc["dropped"]) == (len(correct), len(kept), len(correct) - len(kept))
    table = answer_token_table({"addition": info})
    whole = table[table.template == "all"].iloc[0]
    assert (whole.n, whole.xc_checked, whole.xc_passed) == (len(kept), len(correct), len(kept))
    counts = Counter(s.answer for s in kept)
    assert whole.top_share == pytest.approx(max(counts.values()) / len(kept))
    assert 0 <= info["exact_match"] <= 1
