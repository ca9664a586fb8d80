"""Rendering a template: one seeded draw of every field, and the text with each field's character spans.

:func:`draw_values` draws the operands (App. A's rules, :func:`arithmech.data.answers.draw_operands`),
the pool words and the neutral replacements of one sample in a fixed order; :func:`render` fills a
template text with them. :mod:`arithmech.data.pairs` builds X_r / X_c from these, and
:mod:`arithmech.data.shots` its solved examples.
"""

from __future__ import annotations

import random
import re

from arithmech.data import templates as templates_module
from arithmech.data.answers import draw_operands

FIELD = re.compile(r"\{([A-Z_0-9]+)\}")
"""A template field, ``{A}``, ``{OP}``, ``{NAME2}`` (group 1: the field's name)."""


def render(text: str, values: dict) -> tuple[str, dict]:
    """Fill every ``{FIELD}`` of a template text with ``str(values[FIELD])``.

    Returns ``(string, spans)``; ``spans[FIELD]`` lists the ``(start, end)`` character spans where that
    field's value stands in the string (``render("{A} + {B} =", {"A": 3, "B": 5})`` →
    ``("3 + 5 =", {"A": [(0, 1)], "B": [(4, 5)]})``), from which the token positions of A, B and the
    operator are found.
    """
    out: list[str] = []
    spans: dict[str, list[tuple[int, int]]] = {}
    pos = 0
    for m in FIELD.finditer(text):
        out.append(text[pos : m.start()])
        start = sum(map(len, out))
        v = str(values[m.group(1)])
        out.append(v)
        spans.setdefault(m.group(1), []).append((start, start + len(v)))
        pos = m.end()
    out.append(text[pos:])
    return "".join(out), spans


def draw_values(t: templates_module.Template, rng: random.Random, *, division: str) -> dict:
    """One seeded draw of every field template ``t`` can use: operands ``A``, ``B`` and answer ``C`` by the
    template's rule (App. A: 1..9, no carry into the year, exact quotients, ...), the year prefix ``YYY``,
    the pool words (``NAME``, ``OBJECT``, ...) and their distinct counterfactual stand-ins (``NAME2``,
    ``NAME_C``, ``OBJECT_C``), the operator word ``OP`` and the neutral replacements ``N``, ``N2``, ``N3``
    (words) and ``S`` (a symbol), none equal to ``OP``. The draws happen in a fixed order, so the same
    ``rng`` state gives the same values. ``division``: how a division template's operands are drawn
    (:data:`arithmech.data.answers.DIVISION_DRAWS`; pairs: ``PAIRS_DIVISION``, training text: ``CORPUS_DIVISION``)."""
    a, b, c = draw_operands(t, rng, division=division)
    v: dict[str, int | str] = {"A": a, "B": b, "C": c, "YYY": rng.randint(100, 199)}
    for k, pool in templates_module.POOLS.items():
        v[k] = rng.choice(pool)
    v["NAME2"] = rng.choice([n for n in templates_module.NAMES if n != v["NAME"]])
    v["NAME_C"] = rng.choice([n for n in templates_module.NAMES if n not in (v["NAME"], v["NAME2"])])
    others = [o for o in templates_module.OBJECTS if o != v["OBJECT"]]
    v["OBJECT_C"], v["OBJECT_C2"] = rng.sample(others, 2)
    op = t.op_word
    v["OP"] = v[op[1:-1]] if op.startswith("{") else op
    # neutral replacements never equal the operator they replace ("^" is both a symbol and exponentiation)
    words = [w for w in templates_module.NEUTRAL_WORDS if w != v["OP"]]
    v["N"], v["N2"], v["N3"] = (rng.choice(words) for _ in range(3))
    v["S"] = rng.choice([x for x in templates_module.SYMBOL_DRAWS if x != v["OP"]])
    return v
