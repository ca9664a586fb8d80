"""In-context examples: K solved problems of mixed operations before every X_r and X_c (issue #22).

A 135M model is a weak calculator on the paper's bare prompts (SmolLM2 answers 16 % of "a + b ="
right), so the identify step throws most pairs away. A few solved examples before the query raise
that yield without giving the operation away, when they are built so that

* **their operations are mixed** — the K examples cycle through the four operations (each block of
  four shuffled), so the examples say "this is arithmetic" but not *which* operation: the query's
  operator stays the only source of the operation, and the counterfactual (operator replaced by a
  neutral word or symbol) still removes it;
* **their operand pairs are disjoint from the query's** — no example has the query's (A, B) in either
  order of drawing, so the answer cannot be copied (:func:`arithmech.data.pairs.draw_pairs` redraws a
  query that hits one);
* **they are written in the query's template family** — a Fig. 8 template ``add-k`` gets its examples
  from the same phrasing row of every operation (``add-k``, ``sub-k``, ``mul-k``, ``div-k``: the same
  sentence with the operation's word or symbol). Templates without such a row (Fig. 10's time spans
  and accumulations, App. D's exponentiation, a user's file) exist for one operation only, so mixing
  in their own phrasing is impossible: they take the equation row (``add-1`` ... ``div-1``, "3 + 5 = 8");
* **X_r and X_c share them token for token** — the examples are one fixed text per template and seed
  (:func:`examples`), written before the query with a newline after each; X_r and X_c differ only in
  the query's operator (or operands, for the operand counterfactual).

One fixed prefix per (template, seed) also means every prompt of a template starts with the same
tokens, which :mod:`arithmech.core.prefix` runs once and reuses as a KV cache. ``shots=0`` draws
nothing here: the pairs are exactly the zero-shot ones.

>>> text, used = examples(TEMPLATES["add-1"], 4, seed=0)
>>> print(text)      # e.g. "7 * 2 = 14\\n9 - 4 = 5\\n8 / 2 = 4\\n3 + 6 = 9\\n"
"""
from __future__ import annotations

import random

from arithmech.data import templates as templates_module
from arithmech.data.answers import PAIRS_DIVISION
from arithmech.data.render import draw_values, render

OPERATIONS = tuple(templates_module.OPS)       # the four operations the examples cycle through
SEPARATOR = "\n"                               # after each example; the query follows the last one


def phrasing(t: templates_module.Template) -> dict[str, templates_module.Template]:
    """The template each operation's example is written in: ``t``'s Fig. 8 row for every operation
    (``mul-3`` → ``add-3``, ``sub-3``, ``mul-3``, ``div-3``), else the equation row (``add-1`` ...)."""
    head, _, row = t.id.partition("-")
    prefixes = {op[:3]: op for op in OPERATIONS}
    if head not in prefixes or not row.isdigit() or f"add-{row}" not in templates_module.TEMPLATES:
        row = "1"
    return {op: templates_module.TEMPLATES[f"{op[:3]}-{row}"] for op in OPERATIONS}


def example_operations(k: int, rng: random.Random) -> list[str]:
    """``k`` operations: blocks of the four, each block shuffled (``k = 2``: two different ones)."""
    out: list[str] = []
    while len(out) < k:
        block = list(OPERATIONS)
        rng.shuffle(block)
        out += block
    return out[:k]


def examples(t: templates_module.Template, k: int, seed: int) -> tuple[str, frozenset[tuple[int, int]]]:
    """The ``k`` solved examples written before every prompt of template ``t`` under ``seed``.

    Returns ``(text, operand_pairs)``: the examples, each ``X_r`` of its operation's template
    (:func:`phrasing`) with its pool words and operator drawn as for a query, followed by the joiner
    and the answer and a newline; and the examples' ``(A, B)`` pairs, which queries must avoid. The
    examples' own pairs are distinct. The random stream is this function's own (seeded by ``seed``,
    ``t.id`` and ``k``), so drawing the queries consumes exactly what it consumes at ``k = 0``.
    ``k = 0`` gives ``("", frozenset())``.
    """
    if k < 0:
        raise ValueError(f"shots={k}: the number of solved examples is 0 or more")
    if k == 0:
        return "", frozenset()
    rng = random.Random(f"shots:{seed}:{t.id}:{k}")
    rows, used = [], set()
    by_op = phrasing(t)
    for op in example_operations(k, rng):
        tpl = by_op[op]
        for _ in range(200):
            v = draw_values(tpl, rng, division=PAIRS_DIVISION)
            if (v["A"], v["B"]) not in used:
                break
        else:                                              # 81 pairs per operation: never reached for k <= 8
            raise ValueError(f"template {tpl.id!r}: no fresh operand pair for example {len(rows) + 1} of {k}")
        used.add((v["A"], v["B"]))
        rows.append(render(tpl.clean, v)[0] + tpl.joiner + str(v["C"]) + SEPARATOR)
    return "".join(rows), frozenset(used)

