"""Toy benchmarks of the embedded model: its "GSM8K" and its "MMLU" (used by :mod:`arithmech.evals.benchmarks`).

* ``two_digit``: held-out two-digit addition/subtraction (:func:`arithmech.embedded.train.two_digit_split`),
  exact greedy answer, scored exactly like :func:`arithmech.embedded.train.two_digit_accuracy` but batched;
* ``negative``: held-out differences ``A - B < 0`` of single digits in the nine Fig. 8 subtraction
  forms ("3 minus 7 equals to" → ``-4``); the model was trained on ``A >= B`` only;
* ``single_digit``: answer-token accuracy on fresh seeded draws of the Fig. 8/10 templates (the skill
  the model has; fine-tuning should not break it);
* ``generic``: :data:`arithmech.embedded.train.GENERIC_FACTS` (the toy MMLU).
"""
from __future__ import annotations

import random
from typing import Sequence

import torch

TOY = ("two_digit", "negative", "single_digit", "generic")


@torch.no_grad()
def greedy_batch(model, tok, prompts: Sequence[str], max_new: int, batch_size: int = 128) -> list[str]:
    """:func:`arithmech.embedded.train.greedy` for many prompts: equal-length groups, no padding, stop at EOS;
    the text is returned without spaces (``"4 7"`` from a word-level tokenizer and ``" 47"`` both → ``"47"``)."""
    from arithmech.data.pairs import group_by_length
    dev = model.get_input_embeddings().weight.device
    out = [""] * len(prompts)
    for idx, ids in group_by_length(tok, prompts, batch_size):
        ids = ids.to(dev)
        new = []
        for _ in range(max_new):
            nxt = model(ids).logits[:, -1].argmax(-1, keepdim=True)
            new.append(nxt)
            ids = torch.cat([ids, nxt], 1)
        for i, row in zip(idx, torch.cat(new, 1).tolist()):
            row = row[:row.index(tok.eos_token_id)] if tok.eos_token_id in row else row
            out[i] = "".join(tok.decode(row).split())
    return out


def two_digit_items(seed: int = 0, n: int = 300) -> list[tuple[str, str]]:
    """The held-out two-digit ``(prompt, answer)`` items of :func:`arithmech.embedded.train.two_digit_accuracy`."""
    from arithmech.embedded.train import two_digit_sentence, two_digit_split
    rng = random.Random(seed + 7)
    _, test = two_digit_split(seed)
    return [two_digit_sentence(rng, a, b, op) for a, b, op in test[:n]]


def negative_split(seed: int = 0, n_test: int = 12) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Disjoint seeded ``(A, B)`` lists with ``1 <= A < B <= 9`` (36 pairs): (train, test). The embedded
    model was trained on subtraction with ``A >= B`` only, so "3 minus 7" (answer ``-4``) is new to it."""
    pairs = [(a, b) for a in range(1, 10) for b in range(1, 10) if a < b]
    random.Random(seed).shuffle(pairs)
    return pairs[n_test:], pairs[:n_test]


def negative_items(pairs: Sequence[tuple[int, int]]) -> list[tuple[str, str]]:
    """``(prompt, answer)`` for every pair in each of the nine Fig. 8 subtraction forms (answer ``"-4"``)."""
    from arithmech.data import templates as T
    from arithmech.data.pairs import _render
    tpls = [t for t in T.FIG8 if t.op == "subtraction"]
    return [(_render(t.clean, {"A": a, "B": b, "OP": t.op_word})[0], str(a - b)) for a, b in pairs for t in tpls]


def toy_benchmarks(model, tok, seed: int = 0, n_two_digit: int = 300, n_per_template: int = 6,
                   which: Sequence[str] = TOY) -> dict[str, float]:
    """Embedded model: ``two_digit`` (held-out two-digit problems, exact greedy answer),
    ``negative`` (held-out differences ``A - B < 0`` of single digits, exact greedy answer), ``single_digit`` (answer-token accuracy on fresh draws of the Fig. 8/10 templates) and
    ``generic`` (the facts table: the toy MMLU)."""
    from arithmech.data import templates as T
    from arithmech.data.pairs import filter_correct, make_pairs
    from arithmech.embedded.train import generic_accuracy
    res = {}
    if "two_digit" in which:
        items = two_digit_items(seed, n_two_digit)
        outs = greedy_batch(model, tok, [p for p, _ in items], max(len(a) for _, a in items) + 1)
        res["two_digit"] = round(sum(o == a for o, (_, a) in zip(outs, items)) / len(items), 4)
    if "negative" in which:
        items = negative_items(negative_split(seed)[1])
        outs = greedy_batch(model, tok, [p for p, _ in items], 3)
        res["negative"] = round(sum(o == a for o, (_, a) in zip(outs, items)) / len(items), 4)
    if "single_digit" in which:
        tpls = T.FIG8 + T.FIG10
        samples, _ = make_pairs(tok, tpls, n=n_per_template * len(tpls), seed=seed + 101)
        kept, _ = filter_correct(model, tok, samples)
        res["single_digit"] = round(len(kept) / len(samples), 4)
    if "generic" in which:
        res["generic"] = generic_accuracy(model, tok)
    return res
