"""What the embedded model never sees in training: held-out operand pairs and held-out phrasings.

With operands 1..9 and fixed templates, a "fresh" seeded draw of a training template is almost always a
sentence the model was trained on, so its accuracy says nothing about generalisation. This module declares,
in one place, two things that :func:`arithmech.embedded.train.training_stream` never produces:

* **held-out operand pairs** (:data:`HELDOUT_PAIRS`): per operation, a seeded ~15 % of the ``(A, B)`` pairs
  its rule allows (addition and multiplication 81, subtraction ``A >= B`` 45, exact division 23). For the
  commutative operations a pair is held out with its mirror (both 3 + 5 and 5 + 3), so the mirror fact
  cannot leak it; the draw is stratified by the answer's number of digits, so both one- and two-digit
  answers are held out. A pair is held out in *every* training template of its operation (addition: the
  Fig. 8 forms and all of Fig. 10). Facts of *other* operations are not held out with it (8 - 5 = 3 may be
  trained while 3 + 5 is held out): inverse facts are a fair route to generalise.
* **held-out phrasings** (:data:`HELDOUT_TEMPLATES`): 14 new sentence forms, never trained, built only from
  words of the model's vocabulary (so no ``<unk>``): three per operation beside the Fig. 8 forms and one each
  beside the Fig. 10 accumulation and time-span forms. No Fig. 8 / Fig. 10 template is held out (the
  chapters use them all: Fig. 8 in identify, Fig. 10 as the transfer test), and no held-out prompt is a
  prefix of a training sentence ("3 plus 5 is" would be: training continues it with "equal").
  Pool words are not held out: with a word-level tokenizer an unseen word has an untrained embedding.

:func:`heldout_report` scores four splits with Wilson 95 % intervals — in-distribution draws (trained pairs,
trained templates), held-out pairs (trained templates), held-out phrasings (trained pairs), and both held
out — by the answer token (the answer's first token, as ``filter_correct``), by the last digit after the
answer's leading digits ("3 + 9 = 1" -> "2", the answer token that needs the computation) and by exact match of
the whole greedy answer.
"""

from __future__ import annotations

import random

from arithmech.data import templates
from arithmech.data.answers import CORPUS_DIVISION, OPERANDS, answer_rule
from arithmech.data.render import draw_values, render

SEED = 13
FRACTION = 0.15
COMMUTATIVE = ("addition", "multiplication")
SPLITS = ("in_distribution", "heldout_pairs", "heldout_phrasings", "heldout_both")


def _fig8_like() -> list[templates.Template]:
    out = []
    for op, (_sym, word, noun, qa_noun) in templates.OPS.items():
        p = op[:3]
        rows = [
            ("statement", "The {OP} of {A} and {B} is equal to", "The {N} of {A} and {B} is equal to", noun),
            ("qa", "Q: How much is the {OP} of {A} and {B}? A:", "Q: How much is the {N} of {A} and {B}? A:", qa_noun),
            ("qa", "Q: What is {A} {OP} {B} equal to? A:", "Q: What is {A} {N} {B} equal to? A:", word),
        ]
        out += [
            templates.Template(f"held-{p}-{k}", op, fam, c, x, op_word=w) for k, (fam, c, x, w) in enumerate(rows, 1)
        ]
    return out


HELDOUT_TEMPLATES: list[templates.Template] = _fig8_like() + [
    templates.Template(
        "held-acc-1",
        "addition",
        "accumulation",
        "{NAME} has {A} {OBJECT}, and {NAME2} {OP} {B} {OBJECT}. What's the total number of {OBJECT} "
        "that they have? The answer is",
        "{NAME} has {A} {OBJECT}, and {NAME2} {OP} {B} {OBJECT_C}. What's the total number of "
        "{OBJECT_C2} that {NAME_C} have? The answer is",
        op_word="{ACQUIRE}",
    ),
    templates.Template(
        "held-span-1",
        "addition",
        "time-span",
        "The {EVENT} will {OP} {A} years from {YYY}{B} to {YYY}",
        "The {EVENT} will {N} {A} {N2} from {YYY}{B} to {YYY}",
        op_word="{SPAN_FUTURE}",
        joiner="",
    ),
]
"""The held-out phrasings: never in a training sentence; the chapters never use them."""


def _valid_pairs(op: str) -> list[tuple[int, int]]:
    """Every ``(A, B)`` in 1..9 that the operation's Fig. 8 rule accepts."""
    rule = answer_rule(next(t for t in templates.FIG8 if t.op == op))
    return [(a, b) for a in OPERANDS for b in OPERANDS if rule(a, b) is not None]


def _draw_heldout(op: str, seed: int = SEED, fraction: float = FRACTION) -> frozenset[tuple[int, int]]:
    """A seeded ``fraction`` of ``op``'s pairs, per answer length (one / two digits), mirrors together."""
    valid = _valid_pairs(op)
    rule = answer_rule(next(t for t in templates.FIG8 if t.op == op))
    rng = random.Random(f"{seed}-{op}")
    held: set[tuple[int, int]] = set()
    for digits in (1, 2):
        stratum = [p for p in valid if len(str(rule(*p))) == digits]
        units = sorted({tuple(sorted(p)) for p in stratum} if op in COMMUTATIVE else set(stratum))
        rng.shuffle(units)
        goal = round(fraction * len(stratum))
        for a, b in units:
            if len([p for p in stratum if p in held]) >= goal:
                break
            held |= {(a, b), (b, a)} if op in COMMUTATIVE else {(a, b)}
    return frozenset(held)


HELDOUT_PAIRS: dict[str, frozenset[tuple[int, int]]] = {op: _draw_heldout(op) for op in templates.OPS}
"""``HELDOUT_PAIRS[op]``: the ``(A, B)`` pairs never trained in any template of ``op``."""


def is_heldout_pair(op: str, a: int, b: int) -> bool:
    """Whether ``op(a, b)`` is a held-out fact (``is_heldout_pair("addition", 5, 3)``)."""
    return (a, b) in HELDOUT_PAIRS.get(op, ())


def declaration() -> dict:
    """The held-out declaration as written into ``accuracy.json`` (pairs sorted, phrasings by id)."""
    return {
        "seed": SEED,
        "fraction": FRACTION,
        "commutative_mirrored": list(COMMUTATIVE),
        "pairs": {op: sorted(map(list, p)) for op, p in HELDOUT_PAIRS.items()},
        "n_pairs": {op: [len(p), len(_valid_pairs(op))] for op, p in HELDOUT_PAIRS.items()},
        "phrasings": {t.id: t.clean for t in HELDOUT_TEMPLATES},
    }


# ------------------------------------------------------------------------------------ evaluation items
def _item(t: templates.Template, rng: random.Random, pair: tuple[int, int] | None = None) -> dict:
    """One prompt of template ``t``: seeded pool words; operands ``pair`` or a non-held-out draw."""
    v = draw_values(t, rng, division=CORPUS_DIVISION)
    if pair is not None:
        v.update(A=pair[0], B=pair[1], C=answer_rule(t)(*pair))
    while pair is None and is_heldout_pair(t.op, v["A"], v["B"]):
        v = draw_values(t, rng, division=CORPUS_DIVISION)
    return {
        "prompt": render(t.clean, v)[0],
        "target": str(v["C"]),
        "joiner": t.joiner,
        "op": t.op,
        "template": t.id,
        "a": v["A"],
        "b": v["B"],
    }


def split_items(split: str, seed: int = 1, n_per_template: int = 20, draws_per_pair: int = 2) -> list[dict]:
    """The seeded prompts of one split (:data:`SPLITS`), each ``{prompt, target, joiner, op, template, a, b}``.

    ``in_distribution`` and ``heldout_phrasings`` draw ``n_per_template`` prompts per template with trained
    pairs; ``heldout_pairs`` and ``heldout_both`` take every held-out pair the template's rule allows,
    ``draws_per_pair`` times with other pool words."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    rng = random.Random(f"{seed}-{split}")
    tpls = templates.FIG8 + templates.FIG10 if split in ("in_distribution", "heldout_pairs") else HELDOUT_TEMPLATES
    if split in ("in_distribution", "heldout_phrasings"):
        return [_item(t, rng) for t in tpls for _ in range(n_per_template)]
    return [
        _item(t, rng, p)
        for t in tpls
        for p in sorted(HELDOUT_PAIRS[t.op])
        if answer_rule(t)(*p) is not None
        for _ in range(draws_per_pair)
    ]
