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
* ``planted`` — the planted model's new skill (:mod:`arithmech.embedded.planted`): the 12 **held-out phrasings**
  of the four operations it never saw, on App. A operands, and retention of its **Fig. 8** arithmetic. Counted in
  problem clusters (operation, unordered pair; a mirror on its pair's side): 53 / 53 / 52 of the 158 App. A problems
  for train / validation / test, each asked once a measure, so intervals over items are intervals over clusters;
  retention asks only problems the fine-tune's stream never draws; chance is each side's per-operation majority
  share, since every phrasing names its operation (:mod:`arithmech.data.planted_items`, which says why not the
  accumulation problems). Exact match of the whole
  answer. Unlike the other suites, validation and test share the phrasings (the skill) and differ by problem.
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
from collections.abc import Callable
from dataclasses import dataclass

from arithmech.data import planted_items
from arithmech.data.sentences import VALIDATION_TOPICS, arithmetic_sentence, generic_text, train_sentences
from arithmech.data.splits import (
    carry_items,
    fact_items,
    negative_items,
    negative_pairs,
    single_digit_items,
    two_digit_items,
    two_digit_pairs,
)
from arithmech.evals import benchmarks, cloze, measures
from arithmech.evals.measures import accuracy_measure, completion_nll
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
    sizes: Callable | None = None
    base_only: Callable | None = None
    shots: Callable | None = None


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


def toy_evaluate(model, tok, side: str, sizes: dict, data_seed: int = 0, data_dir=None) -> dict:
    """(``data_dir``: unused, the toy reads no benchmark file.) Exact match of the whole answer
    (:func:`arithmech.evals.scoring.greedy_exact`) on the four toy measures of ``side``, plus (validation) ``math_nll``:
    the mean completion loss of the math items."""
    sets = {
        "negative": negative_items(side, data_seed),
        "two_digit": two_digit_items(side, data_seed),
        "single_digit": single_digit_items(side, sizes.get("single_digit_per_template", 4), data_seed),
        "generic": fact_items(side, data_seed),
    }
    out = {k: accuracy_measure([int(x) for x in greedy_exact(model, tok, v, batch_size=256)]) for k, v in sets.items()}
    for k in ("generic", "single_digit"):  # kept skills, answered by generation: a guess scores 0
        out[k]["chance"] = 0.0
    if side == "val":
        out["math_nll"] = completion_nll(model, tok, sets["negative"] + sets["two_digit"])
    return out


def planted_train(n: int, seed: int = 0, data_seed: int = 0) -> list[tuple[str, str]]:
    """``n`` SFT pairs, alternately the new skill (a held-out phrasing) and the Fig. 8 replay, on the ``train``
    problem clusters only (:func:`arithmech.data.planted_items.train_rows`); seeded."""
    return [(p, a) for p, a, _ in planted_items.train_rows(n, seed, data_seed)]


def planted_evaluate(model, tok, side: str, sizes: dict, data_seed: int = 0, data_dir=None) -> dict:
    """(``data_dir``: unused.) Exact match of the whole answer on ``phrasings`` (the new skill: every problem cluster
    of the side once, in a held-out phrasing) and ``fig8`` (the kept skill: the same clusters once each in a Fig. 8
    form, none of them ever in the fine-tune's stream), each with ``chance`` the side's per-operation majority share and
    ``n_clusters``; plus (validation) ``math_nll`` of the new-skill items (:mod:`arithmech.data.planted_items`)."""
    sets = {
        "phrasings": planted_items.skill_items(side, data_seed),
        "fig8": planted_items.retention_items(side, data_seed),
    }
    out = {}
    for k, v in sets.items():
        out[k] = accuracy_measure([int(x) for x in greedy_exact(model, tok, v, batch_size=256)])
        out[k].update(chance=planted_items.side_chance(side, v, data_seed), n_clusters=len(v))
    if side == "val":
        out["math_nll"] = completion_nll(model, tok, sets["phrasings"])
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


CLOZE_SETS = ("hellaswag", "piqa", "arc_easy", "mmlu", "csqa")
GENERATION = ("addsub", "singleeq", "svamp", "gsm8k")


def cpu_sizes() -> dict:
    """The ``cpu`` suite's item counts, set by what two CPU cores can score per run.

    * ``carry_val`` 200 / ``carry_test`` 400: distinct problems, half addition, half subtraction.
    * cloze sets: 200 items each (HellaSwag, PIQA and MMLU cost 0.2–0.4 s an item on 2 cores, ARC-Easy
      and CSQA < 0.1 s); the rules read them **pooled** (the sets whose base interval lies above chance:
      800 items for SmolLM2), which resolves a paired difference of ±3 points where two arms disagree on
      up to 19 % of the items (:func:`arithmech.core.stats.paired_halfwidth`); one set alone, 200 items,
      resolves ±3 points only up to 4.7 % disagreement.
    * ``mmlu_base`` 1,000: MMLU cloze on the base model only, to check the evaluation against the model
      card (29.3 % for SmolLM2-135M); ``generation`` 100 per word-problem set, base model only.
    * ``lm_tokens`` 4,096 tokens of generic text (16 chunks of 256).

    Table 1's runs score fewer by default (``--cloze-items`` 100 a set, ``--lm-tokens`` 2,048,
    :class:`arithmech.steps.config_training.Table1`): SmolLM2's four deciding sets pool 400 items, which resolve
    ±3 points up to 9.4 % disagreement; its records' ``sizes`` say what each run scored.
    """
    return {
        "carry_val": 200,
        "carry_test": 400,
        **{k: 200 for k in CLOZE_SETS},
        "mmlu_base": 1000,
        "generation": 100,
        "generation_shots": 2,
        "lm_tokens": 4096,
    }


def cpu_train(n: int, seed: int = 0, data_seed: int = 0) -> list[tuple[str, str]]:
    """``n`` SFT pairs ``(prompt, " {C}")``: carry problems of the training side in the training forms
    (:func:`arithmech.data.splits.carry_items`), drawn with ``seed``."""
    return [(p, " " + a) for p, a in carry_items("train", n, data_seed, seed)]


def cpu_evaluate(model, tok, side: str, sizes: dict, data_seed: int = 0, data_dir=None) -> dict:
    """Validation: ``carry`` (exact match), ``math_nll`` and ``lm_loss`` on :data:`VALIDATION_TOPICS`.
    Test: ``carry``, each cloze set of :data:`CLOZE_SETS` (``acc_norm``, with its ``chance``) and
    ``lm_loss`` on the generic text."""
    carry = carry_items(side, sizes[f"carry_{side}"], data_seed)
    out = {"carry": accuracy_measure([int(x) for x in greedy_exact(model, tok, carry, batch_size=64)])}
    if side == "val":
        out["math_nll"] = completion_nll(model, tok, carry)
        losses = measures.lm_losses(model, tok, generic_text(VALIDATION_TOPICS))
        out["lm_loss"] = measures.loss_measure(losses)
        return out
    for name in CLOZE_SETS:
        out[name] = cloze.measure(model, tok, name, sizes[name], data_seed, data_dir)
    out["lm_loss"] = measures.lm_loss_measure(model, tok, sizes["lm_tokens"])
    return out


def cpu_base_only(model, tok, sizes: dict, data_seed: int = 0, data_dir=None) -> dict:
    """What the base model alone is measured on: MMLU cloze on ``mmlu_base`` items (against the model
    card) and the word-problem sets (few-shot, direct answer, exact match of the whole number), which
    sit at their floor on a 135M model and so are left out of the arms (the ``paper`` suite keeps them)."""
    out = {"mmlu_base": cloze.measure(model, tok, "mmlu", sizes["mmlu_base"], data_seed, data_dir)}
    splits_ = benchmarks.math_splits(data_dir, data_seed)
    for name in GENERATION:
        rng = random.Random(data_seed)
        test = rng.sample(splits_[name]["test"], min(sizes["generation"], len(splits_[name]["test"])))
        out[name] = accuracy_measure(
            measures.math_direct(model, tok, test, rng.sample(splits_[name]["train"], sizes["generation_shots"]))
        )
    return out


def cpu_shots(model, tok, side: str, sizes: dict, data_seed: int = 0, shots: int = 4) -> dict:
    """``carry`` of ``side`` with ``shots`` solved carry problems of the training side before each item (one
    fixed set, half addition, half subtraction, written ``"<prompt> <answer>"`` one per line): the base model's
    score once it is shown the answer format (Table 1's ``base-shots`` control)."""
    head = "".join(f"{p} {a}\n" for p, a in carry_items("train", shots, data_seed, seed=10_000))
    items = [(head + p, a) for p, a in carry_items(side, sizes[f"carry_{side}"], data_seed)]
    return {"carry": accuracy_measure([int(x) for x in greedy_exact(model, tok, items, batch_size=64)])}


SUITES = {
    "toy": Suite(
        "toy",
        toy_train,
        toy_evaluate,
        math=("negative", "two_digit"),
        general=("generic", "single_digit"),
        primary_math="negative",
        primary_general="generic",
    ),
    "planted": Suite(
        "planted",
        planted_train,
        planted_evaluate,
        math=("phrasings",),
        general=("fig8",),
        primary_math="phrasings",
        primary_general="fig8",
    ),
    "paper": Suite(
        "paper",
        paper_train,
        paper_evaluate,
        math=("two_digit", "heldout_phrasings", "addsub", "singleeq", "svamp", "gsm8k"),
        general=("mmlu_cloze", "csqa_cloze", "lm_loss"),
        primary_math="two_digit",
        primary_general="lm_loss",
        lower_is_better=("lm_loss",),
    ),
    "cpu": Suite(
        "cpu",
        cpu_train,
        cpu_evaluate,
        math=("carry",),
        general=CLOZE_SETS + ("lm_loss",),
        primary_math="carry",
        primary_general="cloze",
        lower_is_better=("lm_loss",),
        sizes=cpu_sizes,
        base_only=cpu_base_only,
        shots=cpu_shots,
    ),
}


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise ValueError(f"--suite {name!r}: use one of {', '.join(SUITES)} (toy: the embedded model's skills)")
    return SUITES[name]
