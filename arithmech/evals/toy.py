"""Toy benchmarks of the embedded model: its "GSM8K" and its "MMLU" (used by :mod:`arithmech.evals.benchmarks`).

* ``two_digit``: held-out two-digit addition/subtraction (:func:`arithmech.data.sentences.two_digit_items`),
  exact greedy answer (:func:`arithmech.evals.toy.two_digit_accuracy`);
* ``negative``: held-out differences ``A - B < 0`` of single digits in the nine Fig. 8 subtraction
  forms ("3 minus 7 equals to" → ``-4``), exact greedy answer; the model was trained on ``A >= B`` only;
* ``single_digit``: answer-token accuracy on fresh seeded draws of the Fig. 8/10 templates with trained
  operand pairs (the skill the model has; fine-tuning should not break it; the held-out pairs of
  :mod:`arithmech.embedded.heldout` are left out), scored on the paper's first answer token
  (``answer_token="first"``, as the model card measures the trained model), not identify's rule;
* ``generic``: :data:`arithmech.data.sentences.GENERIC_FACTS` (the toy MMLU).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from arithmech.data import templates
from arithmech.data.draw import Draw
from arithmech.data.heldout import is_heldout_pair
from arithmech.data.pairs import make_pairs
from arithmech.data.sentences import GENERIC_FACTS, negative_items, negative_split, two_digit_items
from arithmech.evals.scoring import filter_correct, greedy_exact, predict

TOY = ("two_digit", "negative", "single_digit", "generic")


def toy_items(
    model, tok, seed: int = 0, n_two_digit: int = 300, n_per_template: int = 6, which: Sequence[str] = TOY
) -> dict[str, list[int]]:
    """Per benchmark of ``which``, each item's score (1 right, 0 wrong) in a fixed order, so two models scored
    with the same ``seed`` are paired item by item (:func:`arithmech.core.stats.paired_bootstrap`).

    ``two_digit``: held-out two-digit problems, exact greedy answer; ``negative``: held-out differences
    ``A - B < 0``, exact greedy answer; ``single_digit``: answer-token accuracy on fresh draws of the Fig. 8/10
    templates (trained operand pairs only); ``generic``: the facts table (the toy MMLU)."""
    res: dict[str, list[int]] = {}
    if "two_digit" in which:
        res["two_digit"] = [int(o) for o in two_digit_correct(model, tok, seed, n_two_digit)]
    if "negative" in which:
        res["negative"] = [
            int(o) for o in greedy_exact(model, tok, negative_items(negative_split(seed)[1]), batch_size=64)
        ]
    if "single_digit" in which:
        tpls = templates.FIG8 + templates.FIG10
        samples, _ = make_pairs(tok, tpls, n=n_per_template * len(tpls), seed=seed + 101, draw=Draw("first", 0, 1))
        samples = [s for s in samples if not is_heldout_pair(s.op, s.a, s.b)]  # the trained skill only
        kept = {id(s) for s in filter_correct(model, tok, samples)[0]}
        res["single_digit"] = [int(id(s) in kept) for s in samples]
    if "generic" in which:
        res["generic"] = [int(o) for o in generic_correct(model, tok)]
    return res


def toy_benchmarks(
    model, tok, seed: int = 0, n_two_digit: int = 300, n_per_template: int = 6, which: Sequence[str] = TOY
) -> dict[str, float]:
    """Accuracy per benchmark of :func:`toy_items` (4 decimals)."""
    items = toy_items(model, tok, seed, n_two_digit, n_per_template, which)
    return {k: round(sum(v) / len(v), 4) for k, v in items.items()}


@torch.no_grad()
def generic_correct(model, tok) -> list[bool]:
    """Per fact of :data:`GENERIC_FACTS`: is the top-1 next token the answer?"""
    pred = predict(model, tok, [p for p, _ in GENERIC_FACTS])[:, 0]
    gold = torch.tensor([tok.convert_tokens_to_ids(a) for _, a in GENERIC_FACTS])
    return (pred == gold).tolist()


def generic_accuracy(model, tok) -> float:
    ok = generic_correct(model, tok)
    return round(sum(ok) / len(ok), 4)


def two_digit_accuracy(model, tok, seed: int = 0, n: int = 300) -> float:
    """Exact match of the greedy full answer on held-out two-digit problems (:func:`two_digit_items`,
    :func:`arithmech.evals.scoring.greedy_exact`)."""
    ok = two_digit_correct(model, tok, seed, n)
    return round(sum(ok) / len(ok), 4)


def two_digit_correct(model, tok, seed: int = 0, n: int = 300) -> list[bool]:
    """Per item of :func:`two_digit_items`: does greedy decoding write the whole answer?"""
    return greedy_exact(model, tok, two_digit_items(n, seed), batch_size=64)
