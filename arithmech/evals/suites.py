"""What a Table 1 run trains on, selects its learning rate on, and reports: one :class:`Suite` per setting.

Every suite keeps three item sets apart, fixed by ``data_seed`` (not by the training seed, so every arm
and seed is scored on the *same* items and their differences can be paired):

* **train** — what SFT sees; **validation** — learning-rate selection only; **test** — the reported numbers.
* Validation and test are **disjoint by operand pair and by phrasing**: their arithmetic items use
  different Fig. 8 forms (:data:`VAL_FORMS` vs the rest; Fig. 10 only in test) and different operand
  pairs (a seeded half of every pair set each); training never sees a validation or test pair of the
  new skills (``tests/unit/evals/test_suites.py`` checks all three).

Suites (choose with ``suite=``; the model is never consulted):

* ``toy`` — the embedded model's new skills: **negative differences** ("3 minus 7 equals to" → ``-4``;
  its pre-training kept ``A >= B``), **two-digit** problems (it saw operands 1–9), retention of
  **single-digit** arithmetic and of its **generic facts** (its "MMLU"). Exact match of the whole answer.
* ``paper`` — a real model (SmolLM2): the test side is
  :func:`arithmech.evals.measures.evaluate_table1` (exact-match math, GSM8K, MMLU/CSQA in letter
  and cloze form, generic-text loss); validation is the arithmetic items of the validation forms plus
  the loss on :data:`arithmech.data.sentences.VALIDATION_TOPICS`.

A suite's ``math`` measures are the skill SFT should teach (``primary_math`` the one the rules use),
``general`` the skills it should keep (``primary_general`` for the rules; ``lower_is_better`` marks losses).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable

from arithmech.core.stats import wilson_interval
from arithmech.data.sentences import arithmetic_sentence, train_sentences
from arithmech.data.splits import (VAL_FORMS, fact_items, form, half, negative_items, negative_pairs,  # noqa: F401
                                   single_digit_items, split_forms, two_digit_items, two_digit_pairs)
from arithmech.evals import measures
from arithmech.evals.measures import completion_nll
from arithmech.evals.scoring import greedy_exact


@dataclass(frozen=True)
class Suite:
    """One Table 1 setting: ``train(n, seed) -> [(prompt, completion)]``; ``evaluate(model, tok, side,
    sizes) -> {measure: measure dict}`` with ``side`` ``"val"`` or ``"test"``."""

    name: str
    train: Callable
    evaluate: Callable
    math: tuple[str, ...]
    general: tuple[str, ...]
    primary_math: str
    primary_general: str
    lower_is_better: tuple[str, ...] = ()


def accuracy_measure(items: list) -> dict:
    """An accuracy measure: value, n, Wilson 95% interval and the 0/1 items."""
    lo, hi = wilson_interval(sum(items), len(items))
    return {"metric": "accuracy", "value": sum(items) / len(items), "n": len(items), "ci": [lo, hi], "items": items}


def toy_train(n: int, seed: int = 0, data_seed: int = 0) -> list[tuple[str, str]]:
    """``n`` SFT pairs: a third each of negative differences (train pairs, nine forms), two-digit problems
    (train pairs) and fresh single-digit Fig. 8/10 sentences (the skill the model has); seeded."""
    rng = random.Random(seed)
    neg, two = negative_items("train", data_seed), two_digit_items("train", data_seed)
    out = []
    for i in range(n):
        if i % 3 == 0:
            p, a = rng.choice(neg)
            out.append((p, " " + a))
        elif i % 3 == 1:
            p, a = rng.choice(two)
            out.append((p, " " + a))
        else:
            p, a, tpl = arithmetic_sentence(rng)
            out.append((p, tpl.joiner + a))
    return out


def toy_evaluate(model, tok, side: str, sizes: dict, data_seed: int = 0) -> dict:
    """Exact match of the whole answer (:func:`arithmech.evals.scoring.greedy_exact`) on the four toy
    measures of ``side``, plus (validation) ``math_nll``: the mean completion loss of the math items."""
    sets = {"negative": negative_items(side, data_seed), "two_digit": two_digit_items(side, data_seed),
            "single_digit": single_digit_items(side, sizes.get("single_digit_per_template", 4), data_seed),
            "generic": fact_items(side, data_seed)}
    out = {k: accuracy_measure([int(x) for x in greedy_exact(model, tok, v, batch_size=256)]) for k, v in sets.items()}
    if side == "val":
        out["math_nll"] = completion_nll(model, tok, sets["negative"] + sets["two_digit"])
    return out


def paper_train(n: int, seed: int = 0, data_seed: int = 0) -> list[tuple[str, str]]:
    """:func:`arithmech.data.sentences.train_sentences` minus any row whose operand pair is a
    validation pair (two-digit or negative)."""
    banned = {(a, b) for a, b, _ in two_digit_pairs(data_seed)["val"]} | set(negative_pairs(data_seed)["val"])
    rows = [r for r in train_sentences(2 * n, seed) if tuple(map(int, re.findall(r"\d+", r[0])[:2])) not in banned]
    return rows[:n]


def paper_evaluate(model, tok, side: str, sizes: dict, data_seed: int = 0, data_dir=None) -> dict:
    """Test: :func:`arithmech.evals.measures.evaluate_table1`; validation:
    :func:`arithmech.evals.measures.validation_measures`."""
    if side == "test":
        return measures.evaluate_table1(model, tok, sizes, data_seed, data_dir)
    return measures.validation_measures(model, tok, data_seed)


SUITES = {
    "toy": Suite("toy", toy_train, toy_evaluate, math=("negative", "two_digit"), general=("generic", "single_digit"),
                 primary_math="negative", primary_general="generic"),
    "paper": Suite("paper", paper_train, paper_evaluate, math=("two_digit", "heldout_phrasings", "addsub", "singleeq",
                   "svamp", "gsm8k"), general=("mmlu_cloze", "csqa_cloze", "lm_loss"), primary_math="two_digit",
                   primary_general="lm_loss", lower_is_better=("lm_loss",)),
}


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise ValueError(f"--suite {name!r}: use one of {', '.join(SUITES)} (toy: the embedded model's skills)")
    return SUITES[name]
