"""Held-out item sets of the arithmetic skills: training, validation and test sides that share no operand
pair and no phrasing (used by :mod:`arithmech.evals.suites` and :mod:`arithmech.evals.measures`).

* **phrasing**: validation items use Fig. 8 forms :data:`VAL_FORMS`, test items the other Fig. 8 forms
  (and Fig. 10 for single-digit arithmetic);
* **operand pairs**: single-digit pairs go to one side by a seeded hash (:func:`half`); negative
  differences (``1 <= A < B <= 9``) and two-digit pairs are split into train / validation / test lists.
* the planted model's Table 1 items live in :mod:`arithmech.data.planted_items` (split by problem cluster).

Every set is fixed by ``data_seed`` alone (never by a training seed), so all runs are scored on the same items.

**Identify's split**: the prompts that rank the components and the prompts that test them
(knockout, transfer) ask different problems. A problem is a *cluster* (:func:`cluster`): the operation and
the unordered operand pair, in any template, operand order or set of solved examples. One cluster in
:data:`EVAL_SHARE` of *each operation* goes to the evaluation side (:func:`side`): the operation's
single-digit problems (the paper's templates: operands 1..9) in the order of a fixed hash,
every third one; any other problem by the hash alone. The sides are the same for every run, seed and model,
so the queries of the two sides never share a problem (their solved examples may: an example is not a
query); the identification side is deduplicated (:func:`ranking_side`).
"""

from __future__ import annotations

import random
import zlib

from arithmech.data import pairs
from arithmech.data import templates as templates_module
from arithmech.data.answers import CORPUS_DIVISION, OPERANDS
from arithmech.data.render import draw_values, render
from arithmech.data.sentences import GENERIC_FACTS, HELDOUT_FORMS, VAL_FORMS, two_digit_split

EVAL_SHARE = 3  # one problem cluster in three is kept for evaluation (knockout, transfer), never ranked


def cluster(s) -> tuple[str, int, int]:
    """``(operation, smaller operand, larger operand)`` of a sample: the prompts that ask the same problem
    (:func:`problem_cluster` of its ``(op, a, b)``)."""
    return problem_cluster((s.op, s.a, s.b))


def problem_cluster(p: tuple[str, int, int]) -> tuple[str, int, int]:
    """The cluster of a problem ``(operation, A, B)`` (a draw population's key, :func:`arithmech.data.floors.
    population`): ``(operation, smaller operand, larger operand)``."""
    op, a, b = p
    return (op, min(a, b), max(a, b))


def _hash(c: tuple[str, int, int]) -> int:
    return zlib.crc32(f"{c[0]}:{c[1]}:{c[2]}".encode())


def single_digit(op: str) -> list[tuple[str, int, int]]:
    """The operation's single-digit problem clusters (every App. A problem with an answer: the planted model's
    :func:`arithmech.data.planted_items.universe` too), in the order of :func:`_hash`."""
    pairs_ = (
        {(b, a) for a in OPERANDS for b in OPERANDS if a % b == 0}
        if op == "division"
        else {(a, b) for a in OPERANDS for b in OPERANDS if a <= b}
    )
    return sorted(((op, min(p), max(p)) for p in pairs_), key=_hash)


_EVAL = {c for op in pairs.TASKS for c in single_digit(op)[::EVAL_SHARE]}
_UNIVERSE = {c for op in pairs.TASKS for c in single_digit(op)}


def side(c: tuple[str, int, int]) -> str:
    """``"eval"`` or ``"rank"``: the fixed side of a problem cluster — every :data:`EVAL_SHARE`-th of its
    operation's single-digit problems in hash order (so each operation gets its share), else by the hash."""
    if c in _UNIVERSE:
        return "eval" if c in _EVAL else "rank"
    return "eval" if _hash(c) % EVAL_SHARE == 0 else "rank"


def ranking_rows(samples: list) -> list[int]:
    """Indices of the samples that may rank components: those of ``"rank"`` clusters, each distinct prompt once
    (the first drawn; a repeat is not more evidence)."""
    seen, out = set(), []
    for i, s in enumerate(samples):
        if side(cluster(s)) == "rank" and s.clean not in seen:
            seen.add(s.clean)
            out.append(i)
    return out


def ranking_side(samples: list) -> list:
    """The samples at :func:`ranking_rows`."""
    return [samples[i] for i in ranking_rows(samples)]


BOOTSTRAP_UNITS = {"cluster": "problem clusters (operation, operand pair)", "prompt": "prompts"}


def resampling_units(samples: list, bootstrap: str) -> list | None:
    """What an effect's bootstrap resamples (:func:`arithmech.methods.effects.effects_frame`'s ``clusters``):
    each sample's problem cluster with ``bootstrap="cluster"``; ``None`` (the rows) with ``"prompt"`` or for
    samples without integer operands."""
    if bootstrap == "prompt" or not all(isinstance(s.a, int) and isinstance(s.b, int) for s in samples):
        return None
    return [cluster(s) for s in samples]


def n_problems(samples: list) -> int:
    """How many distinct problem clusters ``samples`` ask (each sample its own where operands are not integers)."""
    units = resampling_units(samples, "cluster")
    return len(set(units)) if units is not None else len(samples)


def form(t: templates_module.Template) -> int | None:
    """The Fig. 8 form number of ``t`` (1..9), ``None`` for Fig. 10."""
    return int(t.id.rsplit("-", 1)[1]) if t in templates_module.FIG8 else None


def split_forms() -> tuple[list[templates_module.Template], list[templates_module.Template]]:
    """``(validation, test)`` templates: Fig. 8 forms :data:`VAL_FORMS` / the other Fig. 8 forms and Fig. 10."""
    return (
        [t for t in templates_module.FIG8 if form(t) in VAL_FORMS],
        [t for t in templates_module.FIG8 if form(t) not in VAL_FORMS] + list(templates_module.FIG10),
    )


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
    return render(t.clean, v)[0], str(a + b if t.op == "addition" else a - b)


def negative_items(side: str, data_seed: int = 0) -> list[tuple[str, str]]:
    """``(prompt, answer)``: every pair of ``side`` in every subtraction form of that side (train: all nine)."""
    val_t, test_t = split_forms()
    tpls = {"val": val_t, "test": test_t, "train": templates_module.FIG8}[side]
    return [_sentence(t, a, b) for a, b in negative_pairs(data_seed)[side] for t in tpls if t.op == "subtraction"]


def two_digit_items(side: str, data_seed: int = 0) -> list[tuple[str, str]]:
    """``(prompt, answer)``: each two-digit pair of ``side`` in a seeded form of its operation from that
    side's forms (train: all nine)."""
    val_t, test_t = split_forms()
    tpls = {"val": val_t, "test": [t for t in test_t if t in templates_module.FIG8], "train": templates_module.FIG8}[
        side
    ]
    rng = random.Random(data_seed + 13)
    return [
        _sentence(rng.choice([t for t in tpls if t.op == op]), a, b) for a, b, op in two_digit_pairs(data_seed)[side]
    ]


def single_digit_items(
    side: str, per_template: int, data_seed: int = 0, templates: list[templates_module.Template] | None = None
) -> list[tuple[str, str]]:
    """``(prompt, answer)``: ``per_template`` draws of each template of ``side`` (or of ``templates``)
    whose operand pair lies on that side (:func:`half`); the answer is the whole ``{C}``."""
    val_t, test_t = split_forms()
    rng, out = random.Random(data_seed + (17 if side == "val" else 19)), []
    for t in templates or (val_t if side == "val" else test_t):
        got = 0
        for _ in range(200 * per_template):
            v = draw_values(t, rng, division=CORPUS_DIVISION)
            if half((v["A"], v["B"]), data_seed) == side:
                out.append((render(t.clean, v)[0], str(v["C"])))
                got += 1
                if got == per_template:
                    break
    return out


def fact_items(side: str, data_seed: int = 0) -> list[tuple[str, str]]:
    """The embedded model's generic facts: a seeded third for ``val``, the rest for ``test``."""
    facts = list(GENERIC_FACTS)
    random.Random(data_seed + 23).shuffle(facts)
    return facts[: len(facts) // 3] if side == "val" else facts[len(facts) // 3 :]


def carry_pairs(data_seed: int = 0, val: float = 0.1, test: float = 0.2) -> dict[str, list[tuple[int, int, str]]]:
    """Two-digit problems that need a carry: ``(A, B, "addition")`` with ``A % 10 + B % 10 >= 10`` and
    ``(A, B, "subtraction")`` with ``A > B`` and ``A % 10 < B % 10`` (a borrow), ``10 <= A, B <= 99``.
    Split into ``train`` / ``val`` / ``test`` by a seeded hash of the *unordered* operand pair, so that
    ``47 + 38``, ``38 + 47`` and ``47 - 38`` are always on the same side."""
    probs = [(a, b, "addition") for a in range(10, 100) for b in range(10, 100) if a % 10 + b % 10 >= 10]
    probs += [(a, b, "subtraction") for a in range(10, 100) for b in range(10, 100) if a > b and a % 10 < b % 10]
    out: dict[str, list] = {"train": [], "val": [], "test": []}
    for a, b, op in probs:
        u = random.Random(f"carry:{data_seed}:{min(a, b)},{max(a, b)}").random()
        out["test" if u < test else "val" if u < test + val else "train"].append((a, b, op))
    return out


def carry_forms(side: str) -> list[templates_module.Template]:
    """The Fig. 8 forms of ``side``: ``train`` 1, 4, 6, 9; ``val`` :data:`VAL_FORMS` (2, 5, 8); ``test`` the
    held-out forms :data:`arithmech.data.sentences.HELDOUT_FORMS` (3, 7), which training never sees."""
    keep = {"val": VAL_FORMS, "test": HELDOUT_FORMS}.get(side)
    return [t for t in templates_module.FIG8 if (form(t) in keep if keep else form(t) not in VAL_FORMS + HELDOUT_FORMS)]


def _carry_draw(
    side: str, n: int, data_seed: int, seed: int, start: int = 0
) -> list[tuple[templates_module.Template, int, int]]:
    """The ``(form, A, B)`` of :func:`carry_items`' items, in order (one random stream for both callers); ``start``:
    skip the side's first ``start`` problems of each operation (validation and test)."""
    rng = random.Random(f"carry-items:{data_seed}:{side}:{seed if side == 'train' else 0}")
    tpls = carry_forms(side)
    by_op = {op: [p for p in carry_pairs(data_seed)[side] if p[2] == op] for op in ("addition", "subtraction")}
    if side != "train":
        for ps in by_op.values():
            rng.shuffle(ps)
        if start + (n + 1) // 2 > min(map(len, by_op.values())):
            raise ValueError(
                f"carry_items: {n} {side} items from problem {start} asked, the side holds "
                f"{min(map(len, by_op.values()))} per operation"
            )
    out = []
    for i in range(n):
        op = ("addition", "subtraction")[i % 2]
        a, b, _ = rng.choice(by_op[op]) if side == "train" else by_op[op][start + i // 2]
        out.append((rng.choice([t for t in tpls if t.op == op]), a, b))
    return out


def carry_items(side: str, n: int, data_seed: int = 0, seed: int = 0, start: int = 0) -> list[tuple[str, str]]:
    """``n`` ``(prompt, answer)`` carry problems of ``side`` (:func:`carry_pairs`), alternating addition and
    subtraction, each in a seeded form of its operation from :func:`carry_forms`. Validation and test
    items are distinct problems fixed by ``data_seed`` (at most the side's problems of each operation; ``start``:
    from the side's ``start``-th problem of each operation on, so items past an earlier run's are fresh);
    training items are drawn with replacement by ``seed``."""
    return [_sentence(t, a, b) for t, a, b in _carry_draw(side, n, data_seed, seed, start)]


def carry_phrasings(side: str, n: int, data_seed: int = 0, start: int = 0) -> list[str]:
    """The phrasing of each of :func:`carry_items`' ``n`` items of ``side``: ``"<operation>-<form>"`` (e.g.
    ``"subtraction-7"``), the strata of a paired interval over the items."""
    return [f"{t.op}-{form(t)}" for t, _, _ in _carry_draw(side, n, data_seed, 0, start)]


def plain_pairs(data_seed: int = 0) -> list[tuple[int, int, str]]:
    """Two-digit problems **without** a carry or borrow (``A % 10 + B % 10 < 10``; ``A > B`` with
    ``A % 10 >= B % 10``), ``10 <= A, B <= 99``, whose unordered pair lies on the training side of
    :func:`carry_pairs`' hash: the answer format of the carry items without their skill, never a pair that a
    validation or test item asks in either operation."""
    probs = [(a, b, "addition") for a in range(10, 100) for b in range(10, 100) if a % 10 + b % 10 < 10]
    probs += [(a, b, "subtraction") for a in range(10, 100) for b in range(10, 100) if a > b and a % 10 >= b % 10]
    held = {(min(a, b), max(a, b)) for s in ("val", "test") for a, b, _ in carry_pairs(data_seed)[s]}
    return [(a, b, op) for a, b, op in probs if (min(a, b), max(a, b)) not in held]


def plain_items(n: int, data_seed: int = 0, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` training ``(prompt, answer)`` problems of :func:`plain_pairs` in the training forms, alternating
    addition and subtraction, drawn with replacement by ``seed``: a format-only training set."""
    rng = random.Random(f"plain-items:{data_seed}:{seed}")
    tpls = carry_forms("train")
    by_op = {op: [p for p in plain_pairs(data_seed) if p[2] == op] for op in ("addition", "subtraction")}
    out = []
    for i in range(n):
        op = ("addition", "subtraction")[i % 2]
        a, b, _ = rng.choice(by_op[op])
        out.append(_sentence(rng.choice([t for t in tpls if t.op == op]), a, b))
    return out
