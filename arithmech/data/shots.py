"""In-context examples: K solved problems of mixed operations before every X_r and X_c.

A 135M model is a weak calculator on the paper's bare prompts (SmolLM2 answers 16 % of "a + b ="
right), so the identify step throws most pairs away. A few solved examples before the query raise
that yield. They are built so that they give away as little as possible:

* **the operation** — the examples' operations are balanced (:func:`example_operations`): each operation
  appears ``K // 4`` or ``K // 4 + 1`` times, the query's own ``K // 4`` times (never more often than
  another; not at all for K < 4), and never in the last example, next to the query. The examples say
  "this is arithmetic" and do not point at the query's operation; what remains is a prior over the
  operations the examples show, which the counterfactual (operator replaced by a neutral word or symbol)
  leaves in place for X_r and X_c alike;
* **the answer** — no example has the query's operand pair in either order, and no example of the query's
  operation has the query's answer (:func:`arithmech.data.pairs.draw_pairs` redraws a query that hits one);
* **the template family** — a Fig. 8 template ``add-k`` gets its examples from the same phrasing row of every
  operation (``add-k``, ``sub-k``, ``mul-k``, ``div-k``). Templates without such a row (Fig. 10's time spans
  and accumulations, App. D's exponentiation, a user's file) exist for one operation only, so they take
  the equation row (``add-1`` ... ``div-1``, "3 + 5 = 8");
* **the position** — X_r and X_c share the examples token for token, :data:`SEPARATOR` (" . ") after each,
  for every model: the embedded word-level tokenizer drops a newline, and one separator keeps one code
  path; X_r and X_c differ only in the query's operator (or operands, for the operand counterfactual).

**Sets of examples per template** (``example_sets`` of :class:`arithmech.data.draw.Draw`; identify's
default :data:`EXAMPLE_SETS` = 16, written once in :class:`arithmech.identify.config.Identify`). The ``k``-th prompt
drawn (template ``k % T`` of the task's ``T``) takes its template's set number ``(k // T) % example_sets``
(:func:`set_index`; each set drawn from a seed of its own: the run's seed, the template, K and the set).
``example_sets=1`` is the first scheme, one set for all of a template's prompts, drawn exactly as the
shipped SmolLM2 runs at K = 2 drew it. Why not one set per template: with single-digit
operands a Fig. 8 template has only 36–45 queries, so one set made a draw of 2,560 repeat the same few dozen
subtraction prompts (SmolLM2 kept 176 subtraction X_r, 34 of them distinct), and a template's effects came
with one order of examples. Why not one per prompt: prompts then share no prefix, and every forward pays
for all K examples (~100 tokens at K = 8 against ~15 for the query; SmolLM2 runs ~260 tokens/s on 2 cores),
which puts identify past two hours. With 16 sets, the prompts of a (template, set) share their examples,
which :mod:`arithmech.core.prefix` runs once per batch and reuses as a KV cache, and a run averages over
16 orders of examples per template.
``shots=0`` draws nothing here: the pairs are exactly the zero-shot ones.

>>> ex = examples(TEMPLATES["add-1"], 4, seed=0, index=set_index(0, 21, EXAMPLE_SETS))
>>> print(ex.text)      # e.g. "9 / 3 = 3\n2 + 6 = 8\n8 - 5 = 3\n7 * 2 = 14\n"
"""

from __future__ import annotations

import random
from typing import NamedTuple

from arithmech.data import templates as templates_module
from arithmech.data.answers import PAIRS_DIVISION
from arithmech.data.render import draw_values, render

OPERATIONS = tuple(templates_module.OPS)  # the four operations the examples cycle through
SEPARATOR = " . "  # after each example, for every model (the embedded word-level tokenizer drops newlines)
EXAMPLE_SETS = 16  # sets of examples per template (module docstring: distinct prompts against shared prefixes)


def set_index(k: int, n_templates: int, sets: int) -> int | None:
    """The example set of the ``k``-th prompt drawn over ``n_templates`` templates taken round-robin: each
    template's prompts cycle through its ``sets`` sets (:class:`arithmech.data.draw.Draw` carries ``sets``);
    ``None`` with one set (the first scheme, whose examples were seeded without a set number)."""
    return None if sets == 1 else (k // n_templates) % sets


def describe(sets: int) -> str:
    """``"16 sets per template"``, ``"1 set per template"``."""
    return f"{sets} set{'' if sets == 1 else 's'} per template"


def recorded(shots: int, sets: int) -> dict:
    """What ``run.json`` records of the examples besides ``shots``: ``{"examples": describe(sets)}`` for a
    few-shot run, ``{}`` at zero shots."""
    return {"examples": describe(sets)} if shots else {}


class Examples(NamedTuple):
    """The solved examples of one template: ``text`` (each ends with the separator) and what a query must
    avoid: ``pairs`` (each example's ``(A, B)`` and ``(B, A)``) and ``answers`` (each example's ``(op, C)``)."""

    text: str
    pairs: frozenset
    answers: frozenset


NONE = Examples("", frozenset(), frozenset())


def prefix_key(prompt: str) -> str:
    """The text of ``prompt`` up to its last example separator, ``""`` without one: prompts with
    the same solved examples have the same key (:func:`arithmech.data.batches.group_by_length` batches them)."""
    return prompt[: prompt.rfind(SEPARATOR) + len(SEPARATOR)] if SEPARATOR in prompt else ""


def phrasing(t: templates_module.Template) -> dict[str, templates_module.Template]:
    """The template each operation's example is written in: ``t``'s Fig. 8 row for every operation
    (``mul-3`` → ``add-3``, ``sub-3``, ``mul-3``, ``div-3``; a two-digit twin ``add-3-2d`` → the same one-digit
    rows), else the equation row (``add-1`` ...)."""
    head, _, row = t.id.removesuffix(templates_module.TWO_DIGIT_SUFFIX).partition("-")
    prefixes = {op[:3]: op for op in OPERATIONS}
    if head not in prefixes or not row.isdigit() or f"add-{row}" not in templates_module.TEMPLATES:
        row = "1"
    return {op: templates_module.TEMPLATES[f"{op[:3]}-{row}"] for op in OPERATIONS}


def example_operations(k: int, query_op: str, rng: random.Random) -> list[str]:
    """``k`` operations, balanced so that the examples cannot tell which operation the query asks for:
    every operation appears ``k // 4`` or ``k // 4 + 1`` times and the query's operation ``k // 4`` times —
    never more often than another, not at all for ``k < 4`` — and never in the last example, the one next
    to the query. Shuffled by ``rng``."""
    others = [op for op in OPERATIONS if op != query_op]
    ops = list(OPERATIONS) * (k // 4) + rng.sample(others, k % 4)
    rng.shuffle(ops)
    if ops and ops[-1] == query_op:  # move it away from the query
        j = next(i for i in range(len(ops) - 2, -1, -1) if ops[i] != query_op)
        ops[j], ops[-1] = ops[-1], ops[j]
    return ops


def examples(t: templates_module.Template, k: int, seed: int, index: int | None) -> Examples:
    """Set number ``index`` of the ``k`` solved examples written before prompts of template ``t`` under ``seed``
    (:func:`set_index` says which set a prompt takes).

    Each is ``X_r`` of its operation's template (:func:`phrasing`), with its pool words and operator drawn as
    for a query, then the joiner, the answer and :data:`SEPARATOR`; operations by :func:`example_operations`; the
    examples' operand pairs are distinct in either order. Returns :class:`Examples` (the text and what a
    query must avoid: the examples' pairs in either order, and their ``(operation, answer)``, so that no
    example of the query's operation has its answer). The random stream is this function's own (seeded by
    ``seed``, ``t.id``, ``k`` and ``index``), so drawing the queries consumes exactly what it consumes at ``k = 0``.
    ``k = 0`` gives :data:`NONE`.
    """
    if k < 0:
        raise ValueError(f"shots={k}: the number of solved examples is 0 or more")
    if k == 0:
        return NONE
    rng = random.Random(f"shots:{seed}:{t.id}:{k}" + ("" if index is None else f":{index}"))
    rows: list[str] = []
    used, answers = set(), set()
    by_op = phrasing(t)
    for op in example_operations(k, t.op, rng):
        tpl = by_op[op]
        for _ in range(200):
            v = draw_values(tpl, rng, division=PAIRS_DIVISION)
            if (v["A"], v["B"]) not in used:
                break
        else:  # 81 pairs per operation: never reached for k <= 16
            raise ValueError(f"template {tpl.id!r}: no fresh operand pair for example {len(rows) + 1} of {k}")
        used |= {(v["A"], v["B"]), (v["B"], v["A"])}
        answers.add((op, v["C"]))
        rows.append(render(tpl.clean, v)[0] + tpl.joiner + str(v["C"]) + SEPARATOR)
    return Examples("".join(rows), frozenset(used), frozenset(answers))
