"""The paper's prompt templates (App. A, Fig. 8 and Fig. 10; App. D) and their counterfactuals.

Each :class:`Template` is a pair of format strings: the reference ``X_r`` and the counterfactual
``X_c``. Fields:

* ``{A}``, ``{B}``: operands; ``{OP}``: the operator word or symbol of the reference.
* ``{N}``: a neutral word (drawn from ``NEUTRAL_WORDS``), ``{S}``: a neutral symbol (``NEUTRAL_SYMBOLS``),
  neither an operator of any template (:func:`operators`);
  they take the place of ``{OP}`` in ``X_c``, as in the paper ("42 plus 34" → "42 nothing 34").
* ``{NAME}``, ``{NAME2}``, ``{OBJECT}``, ``{EVENT}``, ``{VERB}``, ``{MONTH}``, ``{YYY}``: pool words,
  drawn once per sample and shared by ``X_r`` and ``X_c``; ``{OBJECT_C}``, ``{NAME_C}`` are fresh
  draws used only by ``X_c`` (Fig. 9: "... gains 4 cups. What is the total number of tables that John has?").

The prompt ends where the answer ``{C}`` would start; ``joiner`` is the text between the prompt
and the answer (``" "`` usually, ``""`` for "from 1723 to 172|8").

Fig. 8 prints the "equals to" statement twice per operation; the second copy is read here as
"{A} plus {B} is equal to", the phrasing of the paper's Fig. 9, so that each operation has nine
distinct forms: one equation, four statements, four question-answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from arithmech.data.answers import OPERATIONS, parse_answer, satisfiable


@dataclass(frozen=True)
class Template:
    id: str  # e.g. "add-eq-1"
    op: str  # addition | subtraction | multiplication | division | exponentiation | custom
    family: str  # equation | statement | qa | time-span | accumulation | custom
    clean: str
    corrupt: str
    op_word: str = ""  # what {OP} stands for in the reference; "{POOL}" draws it from POOLS
    joiner: str = " "
    answer_expr: str = ""  # arithmetic in A, B giving C (arithmech.data.answers); "" uses the operation's rule
    operands: tuple[int, int] = (1, 9)  # A and B are drawn from lo..hi (App. A: 1..9; two_digit: 10..99)


# Neutral replacements for operator words and symbols (Section 3, App. A). None of them is an operator
# that a template or chapter studies (OPERATORS below; a test keeps the sets disjoint): "^" is App. D's
# exponentiation, and "&", "|", "~" are bitwise operators, so they are not neutral.
NEUTRAL_WORDS = ("none", "nothing", "null", "void", "blank", "empty", "nil", "mute")
NEUTRAL_SYMBOLS = ("<", ">", "@", "#")
# {S} is drawn from this tuple: each neutral symbol twice, uniform over the four. Eight entries, as when
# the set held eight symbols, so one draw consumes the random stream exactly as before and every other
# field — and the embedded model's training corpus (arithmech.embedded.train) — is drawn unchanged.
SYMBOL_DRAWS = NEUTRAL_SYMBOLS * 2

OPS = {
    #               symbol word     noun          (per Fig. 8)
    "addition": ("+", "plus", "addition", "sum"),
    "subtraction": ("-", "minus", "difference", "difference"),
    "multiplication": ("*", "times", "product", "product"),
    "division": ("/", "over", "ratio", "ratio"),
}


def _fig8() -> list[Template]:
    out = []
    for op, (sym, word, noun, qa_noun) in OPS.items():
        p = op[:3]
        rows = [
            ("equation", "{A} {OP} {B} =", "{A} {S} {B} =", sym),
            ("statement", "{A} {OP} {B} equals to", "{A} {N} {B} equals to", word),
            ("statement", "The {OP} of {A} and {B} is", "The {N} of {A} and {B} is", noun),
            ("statement", "The {OP} of {A} and {B} equals to", "The {N} of {A} and {B} equals to", noun),
            ("statement", "{A} {OP} {B} is equal to", "{A} {N} {B} is equal to", word),
            ("qa", "Q: How much is {A} {OP} {B}? A:", "Q: How much is {A} {N} {B}? A:", word),
            ("qa", "Q: What is {A} {OP} {B}? A:", "Q: What is {A} {N} {B}? A:", word),
            ("qa", "Q: What is the result of {A} {OP} {B}? A:", "Q: What is the result of {A} {N} {B}? A:", word),
            ("qa", "Q: What is the {OP} of {A} and {B}? A:", "Q: What is the {N} of {A} and {B}? A:", qa_noun),
        ]
        for k, (fam, c, x, w) in enumerate(rows, 1):
            out.append(Template(f"{p}-{k}", op, fam, c, x, op_word=w))
    return out


def _fig10() -> list[Template]:
    """Fig. 10: twelve addition templates with other linguistic meanings (:func:`_time_spans`,
    :func:`_accumulations`)."""
    return _time_spans() + _accumulations()


def _time_spans() -> list[Template]:
    """Fig. 10's eight time-span templates (``span-1`` to ``span-8``): {A} is the duration, {B} the start, the answer
    the end ({B} + {A}). The verb is the calculation word ({OP}); X_c replaces it and the unit with neutral words."""
    ts = [
        (
            "The {EVENT} {OP} {A} years from the year {YYY}{B} to the year {YYY}",
            "The {EVENT} {N} {A} {N2} from the year {YYY}{B} to the year {YYY}",
            "",
        ),
        ("The {EVENT} {OP} {A} years from {YYY}{B} to {YYY}", "The {EVENT} {N} {A} {N2} from {YYY}{B} to {YYY}", ""),
        (
            "The {EVENT} {OP} {A} days from {MONTH} {B} to {MONTH}",
            "The {EVENT} {N} {A} {N2} from {MONTH} {B} to {MONTH}",
            " ",
        ),
        (
            "The {EVENT} will {OP} {A} days from {MONTH} {B} to {MONTH}",
            "The {EVENT} will {N} {A} {N2} from {MONTH} {B} to {MONTH}",
            " ",
        ),
        ("The {EVENT} {OP} {A} hours from {B} pm to", "The {EVENT} {N} {A} {N2} from {B} pm to", " "),
        ("The {EVENT} will {OP} {A} hours from {B} pm to", "The {EVENT} will {N} {A} {N2} from {B} pm to", " "),
        ("The {EVENT} {OP} {A} hours from {B} am to", "The {EVENT} {N} {A} {N2} from {B} am to", " "),
        ("The {EVENT} will {OP} {A} hours from {B} am to", "The {EVENT} will {N} {A} {N2} from {B} am to", " "),
    ]
    return [
        Template(
            f"span-{k}", "addition", "time-span", c, x, joiner=j, op_word="{SPAN_FUTURE}" if " will " in c else "{SPAN}"
        )
        for k, (c, x, j) in enumerate(ts, 1)
    ]


def _accumulations() -> list[Template]:
    """Fig. 10's four accumulation templates (``acc-9`` to ``acc-12``): X_c breaks the link between the two counts
    (other objects, other owner), Fig. 9."""
    acc = [
        (
            "{NAME} has {A} {OBJECT}, then {NAME} {OP} {B} {OBJECT}. What's the total number of {OBJECT} that "
            "{NAME} has? The answer is",
            "{NAME} has {A} {OBJECT}, then {NAME} {OP} {B} {OBJECT_C}. What's the total number of {OBJECT_C2} that "
            "{NAME_C} has? The answer is",
        ),
        (
            "{NAME} {OP} {A} {OBJECT}, and {NAME2} {OP} {B} {OBJECT}. What's the total number of {OBJECT} that they "
            "{OP}? The answer is",
            "{NAME} {OP} {A} {OBJECT}, and {NAME2} {OP} {B} {OBJECT_C}. What's the total number of {OBJECT_C2} that "
            "{NAME_C} {OP}? The answer is",
        ),
        (
            "{NAME} has {A} {OBJECT}, and {NAME2} has {B} {OBJECT}. What's the total number of {OBJECT} that they "
            "have? The answer is",
            "{NAME} has {A} {OBJECT}, and {NAME2} has {B} {OBJECT_C}. What's the total number of {OBJECT_C2} that "
            "{NAME_C} have? The answer is",
        ),
        (
            "{NAME} {OP} {A} {OBJECT} yesterday, and {NAME} {OP} {B} {OBJECT} today. What's the total number of "
            "{OBJECT} that {NAME} {OP}? The answer is",
            "{NAME} {OP} {A} {OBJECT} yesterday, and {NAME} {OP} {B} {OBJECT_C} today. What's the total number of "
            "{OBJECT_C2} that {NAME_C} {OP}? The answer is",
        ),
    ]
    return [
        Template(f"acc-{k}", "addition", "accumulation", c, x, op_word="{ACQUIRE}") for k, (c, x) in enumerate(acc, 9)
    ]


FIG8 = _fig8()
FIG10 = _fig10()
EXPONENTIATION = [  # App. D, Table 3
    Template("pow-1", "exponentiation", "equation", "{A} {OP} {B} =", "{A} {S} {B} =", op_word="^"),
    Template(
        "pow-2",
        "exponentiation",
        "statement",
        "{A} to the {OP} of {B} equals",
        "{A} to the {N} of {B} equals",
        op_word="power",
    ),
]
TWO_DIGIT_OPERANDS = (10, 99)
TWO_DIGIT_SUFFIX = "-2d"  # a two-digit twin's id: its template's and this


def has_two_digit(t: Template) -> bool:
    """Whether ``t`` has a two-digit twin (:data:`TWO_DIGIT`): addition, subtraction and multiplication, but not the
    time-span sentences (a year's last digit or a clock hour takes one digit) nor division (few exact quotients)."""
    return t.op in ("addition", "subtraction", "multiplication") and t.family != "time-span" and t.operands == (1, 9)


def two_digit(t: Template) -> Template:
    """``t`` drawn with operands 10..99, as ``<id>-2d``: the same sentence and counterfactual with two-digit numbers,
    for the tests that need more numbers than 1..9 (the accounts' helix over the operand grid,
    :mod:`arithmech.accounts.twodigit`). ``ValueError`` where ``t`` has none (:func:`has_two_digit`).

    >>> two_digit(TEMPLATES["add-3"]).clean, two_digit(TEMPLATES["add-3"]).operands
    ('The {OP} of {A} and {B} is', (10, 99))
    """
    if not has_two_digit(t):
        raise ValueError(
            f"template {t.id!r} has no two-digit twin (addition, subtraction, multiplication; not time-span)"
        )
    return replace(t, id=t.id + TWO_DIGIT_SUFFIX, operands=TWO_DIGIT_OPERANDS)


TWO_DIGIT = [two_digit(t) for t in FIG8 + FIG10 if has_two_digit(t)]
TEMPLATES: dict[str, Template] = {t.id: t for t in FIG8 + FIG10 + EXPONENTIATION + TWO_DIGIT}

# Pools (App. A). Words are single tokens for LLaMA-style tokenizers where possible.
NAMES = (
    "Mary John James Robert Michael William David Richard Joseph Thomas Charles Daniel Matthew "
    "Anthony Mark Paul Steven Andrew Kenneth Joshua Kevin Brian George Timothy Ronald Edward Jason "
    "Jeffrey Ryan Jacob Gary Nicholas Eric Jonathan Stephen Larry Justin Scott Brandon Benjamin "
    "Samuel Gregory Alexander Frank Patrick Raymond Jack Dennis Jerry Tyler Aaron Jose Adam Nathan "
    "Henry Douglas Zachary Peter Kyle Ethan Walter Noah Jeremy Christian Keith Roger Terry Austin "
    "Sean Gerald Carl Harold Dylan Arthur Lawrence Jordan Jesse Bryan Billy Bruce Gabriel Joe Logan "
    "Alan Juan Albert Willie Elijah Wayne Randy Vincent Russell Louis Philip Bobby Johnny Bradley "
    "Linda Susan Sarah"
).split()
OBJECTS = (
    "apples oranges pears bananas grapes peaches lemons plums cherries melons cups books pens "
    "coins cards shells stones tables chairs balls toys hats"
).split()
EVENTS = ("war conflict project meeting festival journey trip storm drought campaign strike trial").split()
SPAN_VERBS = ("lasted spanned extended continued ran").split()  # time span ("last", "span", ...)
SPAN_VERBS_FUTURE = ("last span extend continue run").split()
ACC_VERBS = ("got obtained acquired gained received collected bought picked").split()  # accumulation
MONTHS = ("Jan. Feb. Mar. Apr. May Jun. Jul. Aug. Sep. Oct. Nov. Dec.").split()

POOLS = {
    "NAME": NAMES,
    "OBJECT": OBJECTS,
    "EVENT": EVENTS,
    "MONTH": MONTHS,
    "SPAN": SPAN_VERBS,
    "SPAN_FUTURE": SPAN_VERBS_FUTURE,
    "ACQUIRE": ACC_VERBS,
    "N": NEUTRAL_WORDS,
    "S": SYMBOL_DRAWS,
}


def operators() -> frozenset[str]:
    """Every operator word or symbol a template studies: the four operations' symbols, words and nouns
    (:data:`OPS`), each template's own ``op_word`` (App. D's ``^`` and ``power``), the calculation verbs of
    Fig. 10, and the bitwise/exponent symbols ``& | ~ ^ **``. The neutral sets must hold none of them."""
    out = {w for ws in OPS.values() for w in ws} | set(SPAN_VERBS + SPAN_VERBS_FUTURE + ACC_VERBS)
    out |= {t.op_word for t in FIG8 + FIG10 + EXPONENTIATION if t.op_word and not t.op_word.startswith("{")}
    return frozenset(out | {"&", "|", "~", "^", "**", "%", "//"})


# Every {FIELD} a template may use (what pairs.py fills in for each sample). {C}, the answer, is not
# one of them: a prompt ends where the answer would start.
FIELDS = frozenset({"A", "B", "OP", "YYY", "NAME2", "NAME_C", "OBJECT_C", "OBJECT_C2", "N2", "N3", *POOLS})
FIELD_PATTERN = re.compile(r"\{([A-Z_0-9]+)\}")


def pair_problems(
    clean, corrupt, op: str = "addition", op_word: str = "", answer_expr: str = ""
) -> list[tuple[str, str]]:
    """Everything wrong with a template pair, as ``(field, message)``; empty when it is usable.

    Checks: ``clean``/``corrupt`` are strings with an ``{A}`` and only known ``{FIELD}``s (:data:`FIELDS`);
    ``op`` is a known operation (or ``custom`` with an ``answer_expr``); ``op_word`` names a pool when
    it is a ``{FIELD}``; ``answer_expr`` is an allowed expression (:func:`arithmech.data.answers.parse_answer`)
    that is a non-negative whole number for at least one ``A, B`` in 1..9. Nothing is evaluated unsafely.
    """
    out = []
    for name, text in (("clean", clean), ("corrupt", corrupt)):
        if not isinstance(text, str):
            out.append((name, f"must be a string, not {type(text).__name__}"))
            continue
        if "{A}" not in text:
            out.append((name, "needs an {A} field (and usually {B})"))
        unknown = sorted({m for m in FIELD_PATTERN.findall(text) if m not in FIELDS})
        if unknown:
            out.append(
                (
                    name,
                    f"unknown field(s) {', '.join(f'{{{u}}}' for u in unknown)}; "
                    f"known fields: {', '.join(sorted(FIELDS))}",
                )
            )
    if not isinstance(op_word, str):
        out.append(("op_word", f"must be a string, not {type(op_word).__name__}"))
    elif op_word.startswith("{") and (not op_word.endswith("}") or op_word[1:-1] not in POOLS):
        out.append(
            (
                "op_word",
                f"{op_word!r} is not a pool; use plain text or one of {', '.join(f'{{{k}}}' for k in sorted(POOLS))}",
            )
        )
    if not isinstance(op, str) or op not in (*OPERATIONS, "custom"):
        out.append(
            (
                "op",
                f'unknown operation {op!r}; use one of {", ".join(OPERATIONS)} (or "custom" with an answer expression)',
            )
        )
    elif op == "custom" and not answer_expr:
        out.append(("answer", 'op "custom" needs an answer expression in A and B, e.g. "A ** B"'))
    if answer_expr:
        try:
            parse_answer(answer_expr)
        except ValueError as e:
            out.append(("answer", str(e)))
    if (
        not out
        and isinstance(clean, str)
        and not satisfiable(Template("check", op, "custom", clean, corrupt, answer_expr=answer_expr))
    ):
        out.append(("answer" if answer_expr else "op", "never a non-negative whole number for any A, B in 1..9"))
    return out


def parse_pair(
    clean: str, corrupt: str, id: str = "custom", op: str = "addition", op_word: str = "", answer_expr: str = ""
) -> Template:
    """A user-supplied template pair (App. D, E), e.g. ``("{A} ^ {B} =", "{A} < {B} =")``.

    ``answer_expr`` is an arithmetic expression in ``A`` and ``B`` (e.g. ``"A ** B"``, parsed by
    :func:`arithmech.data.answers.parse_answer`, never run as code); without it the answer follows
    ``op``'s rule. Raises ``ValueError`` naming the pair and field of the first problem
    (:func:`pair_problems`)."""
    problems = pair_problems(clean, corrupt, op, op_word, answer_expr)
    if problems:
        field, msg = problems[0]
        raise ValueError(f"template pair {id!r}, field {field!r}: {msg}")
    return Template(id, op, "custom", clean, corrupt, op_word=op_word, answer_expr=answer_expr)
