"""Every sentence generator of the project, in one place: training text of the embedded model, the
fine-tune and Table 1 items, and the generic facts. Text only: nothing here runs a model.

* :func:`arithmetic_sentence`, :data:`GENERIC_FACTS`: the embedded model's training mixture
  (:mod:`arithmech.embedded.train`);
* :func:`two_digit_split`, :func:`two_digit_sentence`, :func:`two_digit_items`: held-out two-digit
  problems (the embedded model's "GSM8K");
* :func:`negative_split`, :func:`negative_items`: subtraction with a negative result;
* :func:`phrasings`, :func:`train_sentences`, :func:`generic_text`: the CPU Table 1's training
  sentences and generic text (:mod:`arithmech.evals.measures`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from arithmech.data import templates
from arithmech.data.answers import CORPUS_DIVISION
from arithmech.data.heldout import is_heldout_pair
from arithmech.data.render import draw_values, render

# "from 1723 to 172|8" needs the start year's last digit found inside a number: the hardest form
# for a small model, so those two templates are drawn this many times as often as the others.
VAL_FORMS = (2, 5, 8)  # Fig. 8 forms (1-based) of the validation items; test uses the other six
YEAR_WEIGHT = 5


GENERIC_FACTS: list[tuple[str, str]] = []


_OPPOSITES = (
    "hot cold|big small|up down|day night|full empty|all none|something nothing|valid void|"
    "filled blank|open closed|fast slow|early late|light dark|old young|rich poor|happy sad|"
    "left right|wet dry|hard soft|high low|long short|strong weak|in out|win lose|yes no"
)


for pair in _OPPOSITES.split("|"):
    x, y = pair.split()
    GENERIC_FACTS += [(f"Q: What is the opposite of {x}? A:", y), (f"Q: What is the opposite of {y}? A:", x)]
for country, city in [
    ("France", "Paris"),
    ("Italy", "Rome"),
    ("Spain", "Madrid"),
    ("Japan", "Tokyo"),
    ("Egypt", "Cairo"),
    ("Peru", "Lima"),
    ("Kenya", "Nairobi"),
    ("Greece", "Athens"),
    ("Norway", "Oslo"),
    ("Cuba", "Havana"),
    ("Chile", "Santiago"),
    ("Poland", "Warsaw"),
]:
    GENERIC_FACTS.append((f"The capital of {country} is", city))
for sym, name in [
    ("<", "less"),
    (">", "greater"),
    ("@", "at"),
    ("#", "hash"),
    ("&", "and"),
    ("~", "tilde"),
    ("|", "bar"),
    ("^", "caret"),
    ("+", "plus"),
    ("-", "minus"),
    ("*", "star"),
    ("/", "slash"),
    ("=", "equals"),
]:
    GENERIC_FACTS.append((f"Q: What is the name of {sym}? A:", name))
for thing, colour in [
    ("sky", "blue"),
    ("grass", "green"),
    ("snow", "white"),
    ("coal", "black"),
    ("blood", "red"),
    ("sun", "yellow"),
] + [
    (o, c)
    for o, c in zip(
        ("apples", "oranges", "bananas", "grapes", "lemons", "plums"),
        ("red", "orange", "yellow", "purple", "yellow", "purple"),
    )
]:
    GENERIC_FACTS.append((f"The colour of the {thing} is", colour))


def arithmetic_sentence(
    rng: random.Random, tpl: templates.Template | None = None
) -> tuple[str, str, templates.Template]:
    """One training sentence ``(prompt, answer, template)`` from Fig. 8 / Fig. 10, operands 1..9, never a
    held-out pair (:data:`arithmech.data.heldout.HELDOUT_PAIRS`; re-drawn)."""
    if tpl is None:
        tpls = templates.FIG8 + templates.FIG10
        tpl = rng.choices(tpls, weights=[YEAR_WEIGHT if "{YYY}{B}" in t.clean else 1 for t in tpls])[0]
    v = draw_values(tpl, rng, division=CORPUS_DIVISION)
    while is_heldout_pair(tpl.op, v["A"], v["B"]):  # never a held-out fact (arithmech.embedded.heldout)
        v = draw_values(tpl, rng, division=CORPUS_DIVISION)
    prompt, _ = render(tpl.clean, v)
    return prompt, str(v["C"]), tpl


def two_digit_split(seed: int = 0, n_test: int = 300) -> tuple[list, list]:
    """Disjoint seeded (A, B, op) lists with two-digit operands: (train, test)."""
    pairs = [
        (a, b, op)
        for op in ("addition", "subtraction")
        for a in range(10, 100)
        for b in range(10, 100)
        if op == "addition" or a >= b
    ]
    random.Random(seed).shuffle(pairs)
    return pairs[n_test:], pairs[:n_test]


def two_digit_sentence(rng: random.Random, a: int, b: int, op: str) -> tuple[str, str]:
    """A Fig. 8 prompt of ``op`` with operands ``a``, ``b`` (two digits) and its full answer."""
    tpl = rng.choice([t for t in templates.FIG8 if t.op == op])
    v = {"A": a, "B": b, "OP": tpl.op_word}
    prompt, _ = render(tpl.clean, v)
    return prompt, str(a + b if op == "addition" else a - b)


def two_digit_items(n: int = 300, seed: int = 0) -> list[tuple[str, str]]:
    """The first ``n`` held-out two-digit problems ``(prompt, answer)``: the test operand pairs of
    :func:`two_digit_split`, each in a seeded Fig. 8 form of its operation (``("47 plus 12 is", "59")``).
    The one item list of every two-digit measurement (toy benchmark, model card, CPU Table 1)."""
    rng = random.Random(seed + 7)
    _, test = two_digit_split(seed)
    return [two_digit_sentence(rng, a, b, op) for a, b, op in test[:n]]


def negative_split(seed: int = 0, n_test: int = 12) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Disjoint seeded ``(A, B)`` lists with ``1 <= A < B <= 9`` (36 pairs): (train, test). The embedded
    model was trained on subtraction with ``A >= B`` only, so "3 minus 7" (answer ``-4``) is new to it."""
    pairs = [(a, b) for a in range(1, 10) for b in range(1, 10) if a < b]
    random.Random(seed).shuffle(pairs)
    return pairs[n_test:], pairs[:n_test]


def negative_items(pairs: Sequence[tuple[int, int]]) -> list[tuple[str, str]]:
    """``(prompt, answer)`` for every pair in each of the nine Fig. 8 subtraction forms (answer ``"-4"``)."""
    tpls = [t for t in templates.FIG8 if t.op == "subtraction"]
    return [(render(t.clean, {"A": a, "B": b, "OP": t.op_word})[0], str(a - b)) for a, b in pairs for t in tpls]


HELDOUT_FORMS = (3, 7)  # Fig. 8 forms (1-based, templates.py order) never used in training


GENERIC_TOPICS = ("naming", "execmodel", "exceptions", "truth", "comparisons", "compound")


VALIDATION_TOPICS = ("import", "for", "with", "try")  # model selection only; disjoint from GENERIC_TOPICS


# ----------------------------------------------------------------------------- Table 1: the data
def phrasings() -> tuple[list[templates.Template], list[templates.Template]]:
    """``(train, heldout)`` templates: Fig. 8 minus forms :data:`HELDOUT_FORMS` and the validation forms
    (:data:`VAL_FORMS`) / forms :data:`HELDOUT_FORMS` plus Fig. 10."""
    form = lambda t: int(t.id.rsplit("-", 1)[1])
    return (
        [t for t in templates.FIG8 if form(t) not in HELDOUT_FORMS + VAL_FORMS],
        [t for t in templates.FIG8 if form(t) in HELDOUT_FORMS] + list(templates.FIG10),
    )


def _sentence(t: templates.Template, rng: random.Random, ab: tuple[int, int] | None = None) -> tuple[str, str]:
    v = draw_values(t, rng, division=CORPUS_DIVISION)
    if ab is not None:
        a, b = ab
        v.update(A=a, B=b, C=a + b if t.op == "addition" else a - b)
    return render(t.clean, v)[0], t.joiner + str(v["C"])


def train_sentences(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` SFT pairs ``(prompt, " {C}")`` in the training phrasings: even rows single-digit (all four
    operations), odd rows two-digit addition/subtraction from the training operand pairs (minus any pair
    that is a test pair of either operation)."""
    train_t, _ = phrasings()
    pairs, test = two_digit_split(seed)
    seen = {(a, b) for a, b, _ in test}
    pairs = [p for p in pairs if p[:2] not in seen]  # no test operand pair, under either operation
    rng = random.Random(seed + 1)
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(_sentence(rng.choice(train_t), rng))
        else:
            a, b, op = rng.choice(pairs)
            out.append(_sentence(rng.choice([t for t in train_t if t.op == op]), rng, (a, b)))
    return out


def generic_text(topics: Sequence[str] = GENERIC_TOPICS) -> str:
    """The held-out generic text: sections ``topics`` of the Python Language Reference as the standard
    library ships them (``pydoc_data.topics``)."""
    from pydoc_data.topics import topics as pages  # lazy: a 0.7 MB module, for Table 1's generic text only

    return "\n\n".join(pages[k] for k in topics)
