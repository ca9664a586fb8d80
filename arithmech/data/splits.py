"""Held-out item sets of the arithmetic skills: training, validation and test sides that share no operand
pair and no phrasing (used by :mod:`arithmech.evals.suites` and :mod:`arithmech.evals.measures`).

* **phrasing**: validation items use Fig. 8 forms :data:`VAL_FORMS`, test items the other Fig. 8 forms
  (and Fig. 10 for single-digit arithmetic);
* **operand pairs**: single-digit pairs go to one side by a seeded hash (:func:`half`); negative
  differences (``1 <= A < B <= 9``) and two-digit pairs are split into train / validation / test lists.

Every set is fixed by ``data_seed`` alone (never by a training seed), so all runs are scored on the same items.
"""
from __future__ import annotations

import random

from arithmech.data import pairs, templates as templates_module
from arithmech.data.answers import CORPUS_DIVISION
from arithmech.data.sentences import GENERIC_FACTS, VAL_FORMS, two_digit_split  # noqa: F401 (VAL_FORMS: splits' API)


def form(t: templates_module.Template) -> int | None:
    """The Fig. 8 form number of ``t`` (1..9), ``None`` for Fig. 10."""
    return int(t.id.rsplit("-", 1)[1]) if t in templates_module.FIG8 else None


def split_forms() -> tuple[list[templates_module.Template], list[templates_module.Template]]:
    """``(validation, test)`` templates: Fig. 8 forms :data:`VAL_FORMS` / the other Fig. 8 forms and Fig. 10."""
    return ([t for t in templates_module.FIG8 if form(t) in VAL_FORMS],
            [t for t in templates_module.FIG8 if form(t) not in VAL_FORMS] + list(templates_module.FIG10))


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
    """Two-digit ``(A, B, op)``: the test side of :func:`arithmech.data.sentences.two_digit_split` (300),
    ``n_val`` of its training side for validation, the rest for training; an operand pair ``(A, B)``
    belongs to one side only, whatever the operation (a test pair of addition is no validation pair of
    subtraction)."""
    train, test = two_digit_split(data_seed)
    seen = {(a, b) for a, b, _ in test}
    val = [x for x in train if x[:2] not in seen][:n_val]
    seen |= {(a, b) for a, b, _ in val}
    return {"test": test, "val": val, "train": [x for x in train if x[:2] not in seen]}


def _sentence(t: templates_module.Template, a: int, b: int) -> tuple[str, str]:
    v = {"A": a, "B": b, "OP": t.op_word}
    return pairs.render(t.clean, v)[0], str(a + b if t.op == "addition" else a - b)


def negative_items(side: str, data_seed: int = 0) -> list[tuple[str, str]]:
    """``(prompt, answer)``: every pair of ``side`` in every subtraction form of that side (train: all nine)."""
    val_t, test_t = split_forms()
    tpls = {"val": val_t, "test": test_t, "train": templates_module.FIG8}[side]
    return [_sentence(t, a, b) for a, b in negative_pairs(data_seed)[side] for t in tpls if t.op == "subtraction"]


def two_digit_items(side: str, data_seed: int = 0) -> list[tuple[str, str]]:
    """``(prompt, answer)``: each two-digit pair of ``side`` in a seeded form of its operation from that
    side's forms (train: all nine)."""
    val_t, test_t = split_forms()
    tpls = {"val": val_t, "test": [t for t in test_t if t in templates_module.FIG8], "train": templates_module.FIG8}[side]
    rng = random.Random(data_seed + 13)
    return [_sentence(rng.choice([t for t in tpls if t.op == op]), a, b) for a, b, op in two_digit_pairs(data_seed)[side]]


def single_digit_items(side: str, per_template: int, data_seed: int = 0,
                       templates: list[templates_module.Template] | None = None) -> list[tuple[str, str]]:
    """``(prompt, answer)``: ``per_template`` draws of each template of ``side`` (or of ``templates``)
    whose operand pair lies on that side (:func:`half`); the answer is the whole ``{C}``."""
    val_t, test_t = split_forms()
    rng, out = random.Random(data_seed + (17 if side == "val" else 19)), []
    for t in templates or (val_t if side == "val" else test_t):
        got = 0
        for _ in range(200 * per_template):
            v = pairs.draw_values(t, rng, division=CORPUS_DIVISION)
            if half((v["A"], v["B"]), data_seed) == side:
                out.append((pairs.render(t.clean, v)[0], str(v["C"])))
                got += 1
                if got == per_template:
                    break
    return out


def fact_items(side: str, data_seed: int = 0) -> list[tuple[str, str]]:
    """The embedded model's generic facts: a seeded third for ``val``, the rest for ``test``."""
    facts = list(GENERIC_FACTS)
    random.Random(data_seed + 23).shuffle(facts)
    return facts[:len(facts) // 3] if side == "val" else facts[len(facts) // 3:]
