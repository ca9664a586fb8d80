"""What a Table 1 run trains on, selects its learning rate on, and reports: one :class:`Suite` per setting.

Every suite keeps three item sets apart, fixed by ``data_seed`` (not by the training seed, so every arm
and seed is scored on the *same* items and their differences can be paired):

* **train** — what SFT sees; **validation** — learning-rate selection only; **test** — the reported numbers.
* Validation and test are **disjoint by operand pair and by phrasing**: their arithmetic items use
  different Fig. 8 forms (:data:`VAL_FORMS` vs the rest; Fig. 10 only in test) and different operand
  pairs (a seeded half of every pair set each); training never sees a validation or test pair of the
  new skills (``tests/unit/test_table1.py`` checks all three).

Suites (choose with ``suite=``; the model is never consulted):

* ``toy`` — the embedded model's new skills: **negative differences** ("3 minus 7 equals to" → ``-4``;
  its pre-training kept ``A >= B``), **two-digit** problems (it saw operands 1–9), retention of
  **single-digit** arithmetic and of its **generic facts** (its "MMLU"). Exact match of the whole answer.
* ``paper`` — a real model (SmolLM2): the test side is
  :func:`arithmech.experiments.measures.evaluate_table1` (exact-match math, GSM8K, MMLU/CSQA in letter
  and cloze form, generic-text loss); validation is the arithmetic items of the validation forms plus
  the loss on :data:`arithmech.experiments.measures.VALIDATION_TOPICS`.

A suite's ``math`` measures are the skill SFT should teach (``primary_math`` the one the rules use),
``general`` the skills it should keep (``primary_general`` for the rules; ``lower_is_better`` marks losses).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from arithmech.data import pairs as D
from arithmech.data import templates as T

VAL_FORMS = (2, 5, 8)            # Fig. 8 forms (1-based) of the validation items; test uses the other six


def form(t: T.Template) -> int | None:
    """The Fig. 8 form number of ``t`` (1..9), ``None`` for Fig. 10."""
    return int(t.id.rsplit("-", 1)[1]) if t in T.FIG8 else None


def split_forms() -> tuple[list[T.Template], list[T.Template]]:
    """``(validation, test)`` templates: Fig. 8 forms :data:`VAL_FORMS` / the other Fig. 8 forms and Fig. 10."""
    return ([t for t in T.FIG8 if form(t) in VAL_FORMS],
            [t for t in T.FIG8 if form(t) not in VAL_FORMS] + list(T.FIG10))


def half(pair: tuple[int, int], data_seed: int = 0) -> str:
    """``"val"`` or ``"test"``: the seeded side of a single-digit operand pair ``(A, B)`` (a hash, so
    every template agrees)."""
    return "val" if random.Random(f"{data_seed}:{pair}").random() < 0.5 else "test"


def negative_pairs(data_seed: int = 0) -> dict[str, list[tuple[int, int]]]:
    """The 36 pairs ``1 <= A < B <= 9`` split into ``train`` (15), ``val`` (6) and ``test`` (15)."""
    p = [(a, b) for a in range(1, 10) for b in range(1, 10) if a < b]
    random.Random(data_seed + 11).shuffle(p)
    return {"test": p[:15], "val": p[15:21], "train": p[21:]}


def two_digit_pairs(data_seed: int = 0, n_val: int = 150) -> dict[str, list[tuple[int, int, str]]]:
    """Two-digit ``(A, B, op)``: the test side of :func:`arithmech.embedded.train.two_digit_split` (300),
    ``n_val`` of its training side for validation, the rest for training; an operand pair ``(A, B)``
    belongs to one side only, whatever the operation (a test pair of addition is no validation pair of
    subtraction)."""
    from arithmech.embedded.train import two_digit_split
    train, test = two_digit_split(data_seed)
    seen = {(a, b) for a, b, _ in test}
    val = [x for x in train if x[:2] not in seen][:n_val]
    seen |= {(a, b) for a, b, _ in val}
    return {"test": test, "val": val, "train": [x for x in train if x[:2] not in seen]}


def _sentence(t: T.Template, a: int, b: int) -> tuple[str, str]:
    v = {"A": a, "B": b, "OP": t.op_word}
    return D.render(t.clean, v)[0], str(a + b if t.op == "addition" else a - b)


def negative_items(side: str, data_seed: int = 0) -> list[tuple[str, str]]:
    """``(prompt, answer)``: every pair of ``side`` in every subtraction form of that side (train: all nine)."""
    val_t, test_t = split_forms()
    tpls = {"val": val_t, "test": test_t, "train": T.FIG8}[side]
    return [_sentence(t, a, b) for a, b in negative_pairs(data_seed)[side] for t in tpls if t.op == "subtraction"]


def two_digit_items(side: str, data_seed: int = 0) -> list[tuple[str, str]]:
    """``(prompt, answer)``: each two-digit pair of ``side`` in a seeded form of its operation from that
    side's forms (train: all nine)."""
    val_t, test_t = split_forms()
    tpls = {"val": val_t, "test": [t for t in test_t if t in T.FIG8], "train": T.FIG8}[side]
    rng = random.Random(data_seed + 13)
    return [_sentence(rng.choice([t for t in tpls if t.op == op]), a, b) for a, b, op in two_digit_pairs(data_seed)[side]]


def single_digit_items(side: str, per_template: int, data_seed: int = 0,
                       templates: list[T.Template] | None = None) -> list[tuple[str, str]]:
    """``(prompt, answer)``: ``per_template`` draws of each template of ``side`` (or of ``templates``)
    whose operand pair lies on that side (:func:`half`); the answer is the whole ``{C}``."""
    val_t, test_t = split_forms()
    rng, out = random.Random(data_seed + (17 if side == "val" else 19)), []
    for t in templates or (val_t if side == "val" else test_t):
        got = 0
        for _ in range(200 * per_template):
            v = D.draw_values(t, rng)
            if half((v["A"], v["B"]), data_seed) == side:
                out.append((D.render(t.clean, v)[0], str(v["C"])))
                got += 1
                if got == per_template:
                    break
    return out


def fact_items(side: str, data_seed: int = 0) -> list[tuple[str, str]]:
    """The embedded model's generic facts: a seeded third for ``val``, the rest for ``test``."""
    from arithmech.embedded.train import GENERIC_FACTS
    facts = list(GENERIC_FACTS)
    random.Random(data_seed + 23).shuffle(facts)
    return facts[:len(facts) // 3] if side == "val" else facts[len(facts) // 3:]


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


def _accuracy(items: list) -> dict:
    from arithmech.core.stats import wilson_interval
    lo, hi = wilson_interval(sum(items), len(items))
    return {"metric": "accuracy", "value": sum(items) / len(items), "n": len(items), "ci": [lo, hi], "items": items}


def toy_train(n: int, seed: int = 0, data_seed: int = 0) -> list[tuple[str, str]]:
    """``n`` SFT pairs: a third each of negative differences (train pairs, nine forms), two-digit problems
    (train pairs) and fresh single-digit Fig. 8/10 sentences (the skill the model has); seeded."""
    from arithmech.embedded.train import arithmetic_sentence
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
    from arithmech.evals.scoring import greedy_exact
    sets = {"negative": negative_items(side, data_seed), "two_digit": two_digit_items(side, data_seed),
            "single_digit": single_digit_items(side, sizes.get("single_digit_per_template", 4), data_seed),
            "generic": fact_items(side, data_seed)}
    out = {k: _accuracy([int(x) for x in greedy_exact(model, tok, v, batch_size=256)]) for k, v in sets.items()}
    if side == "val":
        out["math_nll"] = completion_nll(model, tok, sets["negative"] + sets["two_digit"])
    return out


def completion_nll(model, tok, items: list[tuple[str, str]]) -> dict:
    """Mean negative log-likelihood (nats per answer token) of ``" " + answer`` after each prompt."""
    from arithmech.evals.scoring import continuation_logprobs
    lp, n = continuation_logprobs(model, tok, [p for p, _ in items], [" " + a for _, a in items], batch_size=64)
    per = [-x / k for x, k in zip(lp, n)]
    return {"metric": "nats/answer token", "value": sum(per) / len(per), "n": len(per), "ci": None, "items": per}


def paper_train(n: int, seed: int = 0, data_seed: int = 0) -> list[tuple[str, str]]:
    """:func:`arithmech.experiments.measures.train_sentences` minus any row whose operand pair is a
    validation pair (two-digit or negative)."""
    import re
    from arithmech.experiments.measures import train_sentences
    banned = {(a, b) for a, b, _ in two_digit_pairs(data_seed)["val"]} | set(negative_pairs(data_seed)["val"])
    rows = [r for r in train_sentences(2 * n, seed) if tuple(map(int, re.findall(r"\d+", r[0])[:2])) not in banned]
    return rows[:n]


def paper_evaluate(model, tok, side: str, sizes: dict, data_seed: int = 0, data_dir=None) -> dict:
    """Test: :func:`arithmech.experiments.measures.evaluate_table1`; validation: two-digit and
    single-digit items of the validation forms and pairs (exact match), ``math_nll`` and ``lm_loss`` on
    the validation topics."""
    from arithmech.experiments import measures as M
    from arithmech.evals.scoring import greedy_exact
    if side == "test":
        return M.evaluate_table1(model, tok, sizes, data_seed, data_dir)
    two, single = two_digit_items("val", data_seed), single_digit_items("val", 4, data_seed)
    out = {"two_digit": _accuracy([int(x) for x in greedy_exact(model, tok, two)]),
           "heldout_phrasings": _accuracy([int(x) for x in greedy_exact(model, tok, single)]),
           "math_nll": completion_nll(model, tok, two + single)}
    losses = M.lm_losses(model, tok, M.generic_text(M.VALIDATION_TOPICS))
    out["lm_loss"] = {"metric": "nats/token", "value": sum(losses) / len(losses), "n": len(losses), "ci": None,
                      "items": losses}
    return out


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
