"""Benchmark scoring (arithmech.evals.benchmarks, .toy) equals a literal one-prompt, no-cache loop
(the decoder itself: tests/parity/test_scoring_parity.py)."""
from __future__ import annotations

import pytest
import torch
from factories import make_tiny_llama


@pytest.fixture(scope="module")
def small_word_llama(embedded_tokenizer):
    """A random 2-layer GQA Llama over the embedded model's word-level tokenizer: ``(model, tokenizer)``."""
    tok = embedded_tokenizer
    return make_tiny_llama("eager", n_layers=2, vocab=len(tok), seed=3), tok


def test_toy_benchmarks_score_the_literal_greedy_loop(small_word_llama):
    """Protects: the toy two-digit and negative benchmarks count an item right exactly when the literal
    one-prompt, no-cache argmax loop writes its answer and then no digit, item by item in the items' order (the
    fine-tune record's paired intervals pair items by position), and the accuracy is their mean."""
    from arithmech.data.sentences import two_digit_items
    from arithmech.evals.toy import negative_items, negative_split, toy_benchmarks, toy_items
    model, tok = small_word_llama

    def literal(prompt, n):
        ids, new = tok(prompt)["input_ids"], []
        with torch.no_grad():
            for _ in range(n):
                t = int(model(torch.tensor([ids + new])).logits[0, -1].argmax())
                if t == tok.eos_token_id:
                    break
                new.append(t)
        return "".join(tok.decode(new, skip_special_tokens=True).split())

    got = toy_items(model, tok, n_two_digit=24, which=("two_digit", "negative"))
    rates = toy_benchmarks(model, tok, n_two_digit=24, which=("two_digit", "negative"))
    for key, items in [("two_digit", two_digit_items(24)), ("negative", negative_items(negative_split(0)[1]))]:
        outs = [literal(p, len(a) + 1) for p, a in items]
        ok = [o.startswith(a) and not o[len(a):][:1].isdigit() for o, (_, a) in zip(outs, items)]
        assert got[key] == [int(o) for o in ok] and rates[key] == round(sum(ok) / len(ok), 4), key
