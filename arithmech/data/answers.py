"""Answers ``C`` of a template: a declarative arithmetic expression over ``A`` and ``B``, or an operation's rule.

A template-pair file may give its answer as an expression such as ``"A ** B"`` or ``"(A + B) % 10"``.
It is *parsed*, never run: :func:`parse_answer` reads it with :mod:`ast` and accepts only

* numbers (``int`` or ``float`` literals, at most ``MAX_MAGNITUDE`` in size),
* the names ``A`` and ``B``,
* ``+ - * / // % **`` between two sub-expressions, unary ``-`` and ``+``, and parentheses,

and :func:`evaluate_answer` walks that tree with plain Python arithmetic. Calls, attributes, subscripts,
lambdas, comprehensions, comparisons, strings and every other name are refused with a ``ValueError``
before anything is evaluated. Sizes are bounded so that no expression can hang or fill memory:
the text has at most ``MAX_EXPR_CHARS`` characters, every intermediate value at most
``MAX_MAGNITUDE`` in size, and ``x ** y`` is computed only when ``|y| <= MAX_EXPONENT`` and the result
is known (from logarithms) to stay within ``MAX_MAGNITUDE`` — ``9 ** 9 ** 9`` is simply "no answer".

Without an expression, the answer follows the template's operation (:data:`OPERATIONS`), with the
paper's operand rules (App. A): subtraction keeps ``A >= B``, division keeps exact quotients,
exponentiation keeps ``B <= 3``; the "from the year 172|3" sentences keep ``A + B <= 9`` and the
clock sentences ``A + B <= 12``.

:func:`draw_operands` draws ``A, B`` in ``1..9`` until the answer is a non-negative integer, and gives
up after ``max_draws`` draws with a message saying which template and what could not be satisfied.

Division has two draws (:data:`DIVISION_DRAWS`). Drawing ``A, B`` uniformly and rejecting inexact quotients
makes the quotient 1 come 9 times in 23 (every ``A = B``): the answer "1" then covers much of a division
task, and a model that always writes it looks right. ``"uniform-quotient"`` draws the quotient ``C``
uniformly over the quotients the rule allows (1..9), then ``(A, B)`` uniformly among the pairs with that
quotient — the pairs identify patches (:data:`PAIRS_DIVISION`). ``"uniform-operands"`` is the old draw,
kept for the embedded model's training text and the evaluation items drawn with it
(:data:`CORPUS_DIVISION`), so that text stays byte-identical to what the shipped weights were trained on.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
import random
from collections.abc import Callable

OPERATIONS = ("addition", "subtraction", "multiplication", "division", "exponentiation")
OPERANDS = range(1, 10)  # A and B are drawn from 1..9 (App. A)
MIN_CLUSTERS = 20
"""The least evidence any rule decides on: 20 problem clusters (a problem is an operation and its operands; all
its prompts, one per template, count once). Every rule that reads an interval over problems (identify's and
analyze's, faithfulness's, the planted model's scores, the accounts' signatures) is inconclusive, or not testable,
below it; a task whose X_r holds fewer distinct problems is *insufficient*: its verdicts are inconclusive and it is
left out of "all" (:func:`arithmech.steps.control.task_control`). A bootstrap or a Wilson interval over a handful
of clusters, or a key head found on 4 prompts, decides nothing. Written once, here, for every rule."""
MAX_EXPR_CHARS = 200
MAX_MAGNITUDE = 10**12
MAX_EXPONENT = 64
MAX_DRAWS = 10_000
DIVISION_DRAWS = ("uniform-quotient", "uniform-operands")
PAIRS_DIVISION = "uniform-quotient"  # the (X_r, X_c) pairs of identify, accuracy, knockout (data.pairs)
CORPUS_DIVISION = "uniform-operands"  # the training corpus and evaluation items (data.sentences, heldout, splits)

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_NAMES = ("A", "B")
_WHAT = {
    ast.Call: "function calls",
    ast.Attribute: "attribute access",
    ast.Subscript: "subscripts",
    ast.Lambda: "lambdas",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.Compare: "comparisons",
    ast.BoolOp: "and/or",
    ast.IfExp: "if/else",
    ast.NamedExpr: "assignments (:=)",
}


class _NoAnswer(Exception):
    """This (A, B) has no answer: division by zero, a value too large, a complex number."""


def parse_answer(text: str) -> ast.Expression:
    """Parse an answer expression and check every node against the whitelist; nothing is evaluated.

    Returns the ``ast.Expression`` that :func:`evaluate_answer` walks. Raises ``ValueError`` naming
    what is not allowed (``"function calls are not allowed"``, ``"unknown name 'os'"``, ...).
    """
    if not isinstance(text, str):
        raise ValueError(f'must be a string such as "A + B", not {type(text).__name__}')
    if not text.strip():
        raise ValueError('is empty; write an expression in A and B such as "A + B", or leave it out')
    if len(text) > MAX_EXPR_CHARS:
        raise ValueError(f"has {len(text)} characters; at most {MAX_EXPR_CHARS} are allowed")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        msg = e.msg if isinstance(e, SyntaxError) else type(e).__name__
        raise ValueError(f"{text!r} is not an arithmetic expression ({msg})") from None
    for node in ast.walk(tree):
        _check_node(node, text)
    return tree


def _check_node(node: ast.AST, text: str) -> None:
    if isinstance(node, (ast.Expression, ast.Load)) or type(node) in _BINOPS or type(node) in _UNARY:
        return
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            raise ValueError(
                f"{text!r}: the operator {type(node.op).__name__} is not allowed; use + - * / // % ** and parentheses"
            )
        return
    if isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            raise ValueError(f"{text!r}: the operator {type(node.op).__name__} is not allowed; use unary - or +")
        return
    if isinstance(node, ast.Name):
        if node.id not in _NAMES:
            raise ValueError(f"{text!r}: unknown name {node.id!r}; only A and B may be used")
        return
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):  # exactly int or float (as a literal is)
            raise ValueError(f"{text!r}: the constant {v!r} is not allowed; only numbers may be used")
        if not math.isfinite(v) or abs(v) > MAX_MAGNITUDE:
            raise ValueError(f"{text!r}: the number {v!r} is too large (at most {MAX_MAGNITUDE:.0e})")
        return
    what = _WHAT.get(type(node), f"{type(node).__name__} elements")
    raise ValueError(f"{text!r}: {what} are not allowed; use numbers, A, B, + - * / // % ** and parentheses")


def _bounded(v):
    if isinstance(v, complex) or (isinstance(v, float) and not math.isfinite(v)) or abs(v) > MAX_MAGNITUDE:
        raise _NoAnswer
    return v


def _power(x, y):
    if abs(y) > MAX_EXPONENT:
        raise _NoAnswer
    if x == 0 and y < 0:
        raise _NoAnswer
    if abs(x) > 1 and y > 0 and y * math.log10(abs(x)) > math.log10(MAX_MAGNITUDE) + 1:
        raise _NoAnswer
    if x < 0 and float(y) != int(y):
        raise _NoAnswer  # complex result
    return x**y


def _walk(node: ast.AST, env: dict):
    if isinstance(node, ast.Expression):
        return _walk(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        return _bounded(_UNARY[type(node.op)](_walk(node.operand, env)))
    if isinstance(node, ast.BinOp):
        x, y = _walk(node.left, env), _walk(node.right, env)
        op = type(node.op)
        try:
            return _bounded(_power(x, y) if op is ast.Pow else _BINOPS[op](x, y))
        except (ZeroDivisionError, OverflowError):
            raise _NoAnswer from None
    raise ValueError(f"{type(node).__name__} is not allowed")  # unreachable after parse_answer


def evaluate_answer(tree: ast.Expression, a: int, b: int) -> int | None:
    """The answer of a parsed expression at ``A=a, B=b``: a non-negative ``int``, else ``None``
    (negative, not a whole number, division by zero, or beyond ``MAX_MAGNITUDE``)."""
    try:
        c = _walk(tree, {"A": a, "B": b})
    except _NoAnswer:
        return None
    if isinstance(c, float):
        if not c.is_integer():
            return None
        c = int(c)
    return c if c >= 0 else None


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> ast.Expression:
    return parse_answer(text)


def operation_answer(op: str, clean: str, a: int, b: int) -> int | None:
    """The answer of a known operation at ``A=a, B=b`` under the paper's operand rules, else ``None``."""
    if op == "addition":
        c = a + b
        if "{YYY}{B}" in clean and c > 9:  # the year's last digit must not carry
            return None
        if (" pm " in clean or " am " in clean) and c > 12:
            return None
        return c
    if op == "subtraction":
        return a - b if a >= b else None
    if op == "multiplication":
        return a * b
    if op == "division":
        return a // b if a % b == 0 else None
    if op == "exponentiation":
        return a**b if b <= 3 else None
    raise ValueError(
        f"unknown operation {op!r}; use one of {', '.join(OPERATIONS)} or give an answer "
        'expression in A and B (e.g. "A ** B")'
    )


def answer_rule(template) -> Callable[[int, int], int | None]:
    """``(a, b) -> C or None`` for a template: its ``answer_expr`` when it has one, else its operation's rule.
    Raises ``ValueError`` for a disallowed expression or an unknown operation without an expression."""
    if template.answer_expr:
        tree = _parsed(template.answer_expr)
        return lambda a, b: evaluate_answer(tree, a, b)
    operation_answer(template.op, template.clean, 1, 1)  # unknown operation -> ValueError now
    return lambda a, b: operation_answer(template.op, template.clean, a, b)


def satisfiable(template) -> bool:
    """Whether some ``A, B`` in 1..9 give the template a non-negative integer answer (81 evaluations)."""
    rule = answer_rule(template)
    return any(rule(a, b) is not None for a in OPERANDS for b in OPERANDS)


def draw_operands(template, rng: random.Random, max_draws: int = MAX_DRAWS, *, division: str) -> tuple[int, int, int]:
    """Draw ``(A, B, C)`` with ``A, B`` in the template's ``operands`` (1..9, App. A; ``10..99`` for a two-digit
    twin, :func:`arithmech.data.templates.two_digit`) and ``C`` a non-negative integer by the template's rule.

    ``division`` (:data:`DIVISION_DRAWS`) matters only for a division template without an answer expression:
    ``"uniform-quotient"`` takes ``C = rng.choice(quotients)`` over the quotients the rule allows, then
    ``(A, B) = rng.choice(pairs with that quotient)`` (one draw each, no rejection). Otherwise (and every
    other operation) each try takes two ``rng.randint(lo, hi)`` (A then B) until the rule gives an answer, so a
    seed gives the same operands as it always did; after ``max_draws`` tries it raises ``ValueError`` naming
    the template and the rule that could not be satisfied.
    """
    if division not in DIVISION_DRAWS:
        raise ValueError(f"division draw {division!r}: use one of {', '.join(DIVISION_DRAWS)}")
    rule = answer_rule(template)
    if division == "uniform-quotient" and template.op == "division" and not template.answer_expr:
        by_c = _by_answer(template.op, template.clean)
        if by_c:
            c = rng.choice(sorted(by_c))
            a, b = rng.choice(by_c[c])
            return a, b, c
    lo, hi = template.operands
    for _ in range(max_draws):
        a, b = rng.randint(lo, hi), rng.randint(lo, hi)
        answer = rule(a, b)
        if answer is not None:
            return a, b, answer
    what = (
        f"the answer {template.answer_expr!r}"
        if template.answer_expr
        else f"the {template.op} rule for {template.clean!r}"
    )
    raise ValueError(
        f"template {template.id!r}: after {max_draws} draws of A, B in {lo}..{hi}, {what} never gave a "
        f"non-negative whole number (at most {MAX_MAGNITUDE:.0e}); change the answer or the operation"
    )


@functools.lru_cache(maxsize=64)
def _by_answer(op: str, clean: str) -> dict[int, list[tuple[int, int]]]:
    """Every ``(A, B)`` in 1..9 with an answer under an operation's rule, grouped by the answer (pairs sorted)."""
    out: dict[int, list[tuple[int, int]]] = {}
    for a in OPERANDS:
        for b in OPERANDS:
            c = operation_answer(op, clean, a, b)
            if c is not None:
                out.setdefault(c, []).append((a, b))
    return out
