"""Batched benchmark scoring (arithmech.evals.benchmarks) equals scoring one unpadded prompt at a time."""
from __future__ import annotations

import pytest
import torch

from arithmech.evals import benchmarks as E

from factories import make_tiny_llama


@pytest.fixture(scope="module")
def small_word_llama(embedded_tokenizer):
    """A random 2-layer GQA Llama over the embedded model's word-level tokenizer: ``(model, tokenizer)``."""
    tok = embedded_tokenizer
    return make_tiny_llama("eager", n_layers=2, vocab=len(tok), seed=3), tok


def test_batched_generation_equals_one_by_one(small_word_llama):
    """Protects: left-padded batched greedy generation (attention mask) gives each prompt the text it gets
    alone, and the tokenizer's padding side is restored."""
    model, tok = small_word_llama
    prompts = ["12 plus 35 is", "Q: What is the opposite of hot? A:", "7 minus 2 equals", "The capital of Peru is"]
    batched = E.generate(model, tok, prompts, max_new_tokens=5, batch_size=4, stop="zzz")
    single = [E.generate(model, tok, [p], max_new_tokens=5, batch_size=1, stop="zzz")[0] for p in prompts]
    assert batched == single and any(batched)
    assert tok.padding_side == "right"


def test_choice_logits_right_padding_equals_single(small_word_llama):
    """Protects: letter logits read at each prompt's own last token equal an unpadded forward."""
    model, tok = small_word_llama
    prompts = ["Q: What is the opposite of hot? Answer:", "1 plus 2 Answer:"]
    got = E.choice_logits(model, tok, prompts, "A", batch_size=2)
    for i, p in enumerate(prompts):
        ids = tok(p, return_tensors="pt")["input_ids"]
        ref = model(ids).logits[0, -1, tok.convert_tokens_to_ids("A")]
        torch.testing.assert_close(got[i, 0], ref, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="cannot tell the answer letters"):
        E.letter_ids(tok, "ABCD")                          # the toy vocabulary has no B, C, D


def test_batched_toy_two_digit_equals_embedded_reference(small_word_llama):
    """Protects: the batched two-digit benchmark scores each held-out item exactly as
    arithmech.embedded.train.greedy does one prompt at a time."""
    from arithmech.embedded.train import greedy
    model, tok = small_word_llama
    items = E.two_digit_items(seed=0, n=24)
    outs = E.greedy_batch(model, tok, [p for p, _ in items], max_new=4)
    ref = [greedy(model, tok, p, len(a) + 1) for p, a in items]
    assert [o == a for o, (_, a) in zip(outs, items)] == [r == a for r, (_, a) in zip(ref, items)]
    assert [o[:len(r)] for o, r in zip(outs, ref)] == ref
