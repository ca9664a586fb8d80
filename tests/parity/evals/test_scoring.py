"""The scoring building blocks (arithmech.evals.scoring) against literal one-prompt-at-a-time references."""
from __future__ import annotations

import pytest
import torch
from factories import make_tiny_llama as tiny_llama

from arithmech.evals import scoring

PROMPTS = ["12 plus 35 is", "Q: What is the opposite of hot? A:", "7 minus 2 equals", "The capital of Peru is",
           "4 + 3 =", "Q: What is the name of @? A:", "The war lasted 5 years from the year 1723 to the year 172",
           "3 times 3 equals to", "8 / 4 ="]


def reference_greedy(model, tok, prompt: str, max_new: int, stop: str | None, eos: set[int]) -> list[int]:
    """The literal loop: rerun the whole sequence, append the argmax, no cache, no batch, no padding."""
    ids, new = tok(prompt)["input_ids"], []
    with torch.no_grad():
        for _ in range(max_new):
            t = int(model(torch.tensor([ids + new])).logits[0, -1].argmax())
            if t in eos:
                break
            new.append(t)
            if stop is not None and stop in tok.decode(new, skip_special_tokens=True):
                break
    return new


def _check_parity(model, tok, max_new: int):
    eos = scoring.eos_ids(model, tok)
    ref = [reference_greedy(model, tok, p, max_new, None, eos) for p in PROMPTS]
    got = scoring.greedy_tokens(model, tok, PROMPTS, max_new, batch_size=4)
    assert got == ref
    assert len({len(tok(p)["input_ids"]) for p in PROMPTS}) > 3        # the batches really are padded
    # a stop string taken from one row's own output: that row stops there, the others as before
    row = max(range(len(ref)), key=lambda i: len(ref[i]))
    stop = tok.decode(ref[row][1:2]).strip()
    ref_s = [reference_greedy(model, tok, p, max_new, stop, eos) for p in PROMPTS]
    got_s = scoring.greedy_tokens(model, tok, PROMPTS, max_new, stop=stop, batch_size=3)
    assert got_s == ref_s and len(got_s[row]) <= 2
    text = scoring.greedy_decode(model, tok, PROMPTS, max_new, stop=stop, batch_size=3)
    assert text == [tok.decode(r, skip_special_tokens=True).split(stop)[0] for r in ref_s]
    assert all(stop not in t for t in text)
    return ref


def test_greedy_equals_literal_loop_on_random_llama(embedded_tokenizer):
    """Protects: batched, left-padded, KV-cached greedy decoding writes exactly the tokens of the literal
    no-cache loop, with and without a stop string (a random GQA Llama, eager and sdpa attention)."""
    tok = embedded_tokenizer
    model = tiny_llama("eager", n_layers=2, vocab=len(tok), seed=3)
    ref = _check_parity(model, tok, max_new=6)
    assert any(len(r) == 6 for r in ref)                   # the cap stopped some rows
    sdpa = tiny_llama("sdpa", n_layers=2, vocab=len(tok), seed=3)
    assert scoring.greedy_tokens(sdpa, tok, PROMPTS, 6, batch_size=4) == ref


def test_greedy_equals_literal_loop_on_embedded(embedded_model):
    """Protects: the same parity on the trained embedded model, where rows end at EOS at different steps."""
    model, tok, _ = embedded_model
    ref = _check_parity(model, tok, max_new=5)
    assert any(len(r) < 5 for r in ref) and any(ref)       # some rows stopped at EOS, some wrote text
    assert scoring.greedy_decode(model, tok, ["Q: What is the opposite of hot? A:"], 4) == ["cold"]


def test_choice_logits_equal_unpadded_forward(embedded_tokenizer):
    """Protects: letter logits of left-padded batches equal each prompt's own unpadded forward."""
    tok = embedded_tokenizer
    model = tiny_llama("eager", n_layers=2, vocab=len(tok), seed=4)
    prompts = ["Q: What is the opposite of hot? Answer:", "1 plus 2 Answer:", "Answer:",
               "The capital of Peru is Lima. Answer:"]
    a = tok.convert_tokens_to_ids("A")
    got = scoring.choice_logits(model, tok, prompts, "A", batch_size=3)
    assert got.shape == (4, 1)
    with torch.no_grad():
        for i, p in enumerate(prompts):
            ref = model(torch.tensor([tok(p)["input_ids"]])).logits[0, -1, a]
            torch.testing.assert_close(got[i, 0], ref, atol=1e-5, rtol=0)
    ids = [tok.convert_tokens_to_ids(w) for w in ("hot", "cold", "Lima")]
    full = scoring.next_token_logits(model, tok, prompts, ids, batch_size=2)
    with torch.no_grad():
        ref = torch.stack([model(torch.tensor([tok(p)["input_ids"]])).logits[0, -1, ids] for p in prompts])
    torch.testing.assert_close(full, ref, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="cannot tell the answer letters"):
        scoring.letter_ids(tok, "ABCD")                          # the toy vocabulary has no B, C, D


def test_cloze_scores_equal_unpadded_forward(embedded_tokenizer):
    """Protects cloze scoring: the summed log-probability of each continuation from left-padded
    batches equals a literal unpadded forward of prompt + continuation, token by token; the choice is the
    argmax of that sum divided by the option's length in characters (not in tokens)."""
    tok = embedded_tokenizer
    model = tiny_llama("eager", n_layers=2, vocab=len(tok), seed=5)
    prompts = ["Q: What is the opposite of hot? A:", "The capital of Peru is", "12 plus 35 is"]
    conts = [" cold", " Lima", " 4 7"]
    lp, n = scoring.continuation_logprobs(model, tok, prompts, conts, batch_size=2)
    with torch.no_grad():
        for i, (p, c) in enumerate(zip(prompts, conts)):
            pi, ci = tok(p)["input_ids"], tok(p + c)["input_ids"][len(tok(p)["input_ids"]):]
            logp = model(torch.tensor([pi + ci])).logits[0].log_softmax(-1)
            ref = sum(float(logp[len(pi) - 1 + j, t]) for j, t in enumerate(ci))
            assert n[i] == len(ci) and abs(lp[i] - ref) < 1e-4
    options = [["cold", "hot", "small"], ["Lima", "Paris"], ["4 7", "5 9", "1 1 1 1 1 1"]]
    got = scoring.cloze_choice(model, tok, prompts, options, batch_size=4)
    flat_p = [p for p, o in zip(prompts, options) for _ in o]
    flat_o = [" " + x for o in options for x in o]
    lp2, _ = scoring.continuation_logprobs(model, tok, flat_p, flat_o)
    j, want = 0, []
    for o in options:
        want.append(max(range(len(o)), key=lambda k: lp2[j + k] / len(" " + o[k])))
        j += len(o)
    assert got == want


def test_left_padded_positions():
    """Protects: pads on the left, mask on real tokens, positions counting only real tokens."""
    ids, mask, pos = scoring.left_padded([[5, 6, 7], [8]], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]] and pos.tolist() == [[0, 1, 2], [0, 0, 0]]
    assert list(scoring.length_batches([3, 1, 2, 1], 2)) == [[1, 3], [2, 0]]


def test_answer_rules():
    """Protects: the documented extraction rules and the short-answer exact match."""
    assert scoring.extract_answer("She pays $1,080 in total. The answer is 1,080.") == 1080
    assert scoring.extract_answer("The answer is" + " 42 apples, 7 pears") == 42       # first number after the cue
    assert scoring.extract_answer("3 apples and 4 pears make 7.") == 7
    assert scoring.extract_answer("no idea") is None and not scoring.is_correct(None, 0.0)
    assert scoring.completes("4 7", "47") and scoring.completes(" 47.", "47") and scoring.completes("- 4", "-4")
    assert not scoring.completes(" 475", "47") and not scoring.completes("4", "47") and not scoring.completes("", "47")
