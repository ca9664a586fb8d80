"""Toy benchmarks of the embedded model: its "GSM8K" and its "MMLU" (used by :mod:`arithmech.evals.benchmarks`).

* ``two_digit``: held-out two-digit addition/subtraction (:func:`arithmech.embedded.train.two_digit_items`),
  exact greedy answer (:func:`arithmech.embedded.train.two_digit_accuracy`);
* ``negative``: held-out differences ``A - B < 0`` of single digits in the nine Fig. 8 subtraction
  forms ("3 minus 7 equals to" → ``-4``), exact greedy answer; the model was trained on ``A >= B`` only;
* ``single_digit``: answer-token accuracy on fresh seeded draws of the Fig. 8/10 templates with trained
  operand pairs (the skill the model has; fine-tuning should not break it; the held-out pairs of
  :mod:`arithmech.embedded.heldout` are left out);
* ``generic``: :data:`arithmech.embedded.train.GENERIC_FACTS` (the toy MMLU).
"""
from __future__ import annotations

import random
from typing import Sequence

TOY = ("two_digit", "negative", "single_digit", "generic")


def negative_split(seed: int = 0, n_test: int = 12) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Disjoint seeded ``(A, B)`` lists with ``1 <= A < B <= 9`` (36 pairs): (train, test). The embedded
    model was trained on subtraction with ``A >= B`` only, so "3 minus 7" (answer ``-4``) is new to it."""
    pairs = [(a, b) for a in range(1, 10) for b in range(1, 10) if a < b]
    random.Random(seed).shuffle(pairs)
    return pairs[n_test:], pairs[:n_test]


def negative_items(pairs: Sequence[tuple[int, int]]) -> list[tuple[str, str]]:
    """``(prompt, answer)`` for every pair in each of the nine Fig. 8 subtraction forms (answer ``"-4"``)."""
    from arithmech.data import templates as T
    from arithmech.data.pairs import render
    tpls = [t for t in T.FIG8 if t.op == "subtraction"]
    return [(render(t.clean, {"A": a, "B": b, "OP": t.op_word})[0], str(a - b)) for a, b in pairs for t in tpls]


def toy_benchmarks(model, tok, seed: int = 0, n_two_digit: int = 300, n_per_template: int = 6,
                   which: Sequence[str] = TOY) -> dict[str, float]:
    """Embedded model: ``two_digit`` (held-out two-digit problems, exact greedy answer),
    ``negative`` (held-out differences ``A - B < 0`` of single digits, exact greedy answer), ``single_digit`` (answer-token accuracy on fresh draws of the Fig. 8/10 templates) and
    ``generic`` (the facts table: the toy MMLU)."""
    from arithmech.data import templates as T
    from arithmech.data.pairs import filter_correct, make_pairs
    from arithmech.embedded.train import generic_accuracy, two_digit_accuracy
    from arithmech.evals.scoring import greedy_exact
    res = {}
    if "two_digit" in which:
        res["two_digit"] = two_digit_accuracy(model, tok, seed, n_two_digit)
    if "negative" in which:
        ok = greedy_exact(model, tok, negative_items(negative_split(seed)[1]), batch_size=64)
        res["negative"] = round(sum(ok) / len(ok), 4)
    if "single_digit" in which:
        tpls = T.FIG8 + T.FIG10
        from arithmech.embedded.heldout import is_heldout_pair
        samples, _ = make_pairs(tok, tpls, n=n_per_template * len(tpls), seed=seed + 101)
        samples = [s for s in samples if not is_heldout_pair(s.op, s.a, s.b)]     # the trained skill only
        kept, _ = filter_correct(model, tok, samples)
        res["single_digit"] = round(len(kept) / len(samples), 4)
    if "generic" in which:
        res["generic"] = generic_accuracy(model, tok)
    return res
