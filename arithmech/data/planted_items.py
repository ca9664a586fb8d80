"""The planted model's Table 1 items: a new skill counted in problem clusters, and a retention set no fine-tune sees.

Used by the ``planted`` suite (:mod:`arithmech.evals.suites`). Every set is fixed by ``data_seed`` alone.

**The problems.** A *problem cluster* is ``(operation, smaller operand, larger operand)``
(:func:`arithmech.data.splits.cluster`): ``3 + 5`` and ``5 + 3`` are one problem, in any phrasing. The universe is
every App. A problem the paper's rules allow (:func:`universe`): addition and multiplication 45 unordered pairs of
1..9 each, subtraction 45 (``A >= B``), exact division 23 — 158 problems. Operands stay in 1..9 because the planted
model can compute nothing else: its exact match on two-digit Fig. 8 addition is 2 % (model card), so a two-digit
skill would have nothing to build on and two-digit retention nothing to keep.

**The sides** (:func:`sides`): each operation's clusters, in the order of a seeded hash, go one in three to
``train``, ``val`` and ``test`` (53 / 53 / 52). A cluster holds both operand orders, so a pair and its mirror are
always on one side; training never asks a validation or test problem, in any phrasing.

**The new skill** (:data:`PHRASINGS`): the 12 held-out phrasings of the four operations
(:data:`arithmech.data.heldout.HELDOUT_TEMPLATES`, three a operation: a statement and two questions), never in the
planted model's training, on which the base model scores 27 % (addition) to 60 % (division). Chosen over the
Fig. 10 accumulation problems (13 % base) because accumulation is addition only: 45 problems in 1..9, 15 a side,
under the 20 clusters a side a verdict needs. The phrasings are the skill and are shared by the sides; the problems
are not. :func:`skill_items` asks every cluster of a side **once** (one seeded phrasing of its operation, one seeded
operand order), so an accuracy's items are its clusters and every interval the Table 1 rules draw over items
(Wilson, the paired bootstrap, the crossed intervals) is an interval over problem clusters.

**Retention** (:func:`retention_items`): the Fig. 8 skill the base model has (its base level on these items: the
learning curve's step 0, ``results/planted/exploration/``), one Fig. 8 item per cluster of ``val`` / ``test``. The
fine-tune's stream (:func:`train_rows`: the new phrasings and the Fig. 8 replay) draws ``train`` clusters only, so
no retention problem is ever trained, in any phrasing (``tests/unit/data/test_planted_items.py`` intersects the two
sets).

**Chance** (:func:`side_chance`): the per-operation majority share, computed from the items: every phrasing names its
operation, so an operand-blind model that reads it writes that operation's most frequent answer and scores, within
each operation, that answer's share of its items (weighted by the operation's items; the reasoning of
:mod:`arithmech.data.floors`). The pooled majority share (version 1 of ``planted-table1``) set chance too low.
"""

from __future__ import annotations

import random
import zlib
from collections import Counter

from arithmech.data import templates
from arithmech.data.answers import CORPUS_DIVISION, answer_rule
from arithmech.data.heldout import HELDOUT_TEMPLATES
from arithmech.data.render import draw_values, render
from arithmech.data.splits import single_digit

OPERATIONS = ("addition", "subtraction", "multiplication", "division")
SIDES = ("train", "val", "test")
PHRASINGS: list[templates.Template] = [
    t for t in HELDOUT_TEMPLATES if t.op in OPERATIONS and t.id[5:8] in ("add", "sub", "mul", "div")
]
"""The new skill's 12 phrasings (``held-add-1`` .. ``held-div-3``)."""
FIG8 = list(templates.FIG8)
MIN_CLUSTERS = 20

Cluster = tuple[str, int, int]


def _rule(op: str):
    return answer_rule(next(t for t in FIG8 if t.op == op))


def orders(c: Cluster) -> list[tuple[int, int]]:
    """The operand orders ``(A, B)`` of cluster ``c`` with an answer (both for + and x, larger first for - and /)."""
    op, lo, hi = c
    return [p for p in dict.fromkeys([(lo, hi), (hi, lo)]) if _rule(op)(*p) is not None]


def universe() -> list[Cluster]:
    """Every App. A problem cluster with an answer, by operation (158): each operation's single-digit clusters
    (:func:`arithmech.data.splits.single_digit`, identify's split), in operand order."""
    return [c for op in OPERATIONS for c in sorted(single_digit(op))]


def sides(data_seed: int = 0) -> dict[str, list[Cluster]]:
    """Each operation's clusters in the order of a seeded hash, the ``i``-th to ``SIDES[i % 3]``."""
    out: dict[str, list[Cluster]] = {s: [] for s in SIDES}
    for op in OPERATIONS:
        ranked = sorted(
            (c for c in universe() if c[0] == op), key=lambda c: zlib.crc32(f"{data_seed}:planted:{c}".encode())
        )
        for i, c in enumerate(ranked):
            out[SIDES[i % 3]].append(c)
    return out


def _item(t: templates.Template, a: int, b: int, rng: random.Random) -> tuple[str, str]:
    v = draw_values(t, rng, division=CORPUS_DIVISION) | {"A": a, "B": b, "C": answer_rule(t)(a, b)}
    return render(t.clean, v)[0], str(v["C"])


def _once(side: str, data_seed: int, tpls: list[templates.Template], tag: str) -> list[tuple[str, str]]:
    """One item per cluster of ``side``: a seeded template of its operation among ``tpls``, a seeded order."""
    out = []
    for c in sides(data_seed)[side]:
        rng = random.Random(f"{data_seed}:{tag}:{c}")
        t = rng.choice([t for t in tpls if t.op == c[0]])
        out.append(_item(t, *rng.choice(orders(c)), rng))
    return out


def skill_items(side: str, data_seed: int = 0) -> list[tuple[str, str]]:
    """``(prompt, answer)``: every cluster of ``side`` once, in a seeded phrasing of :data:`PHRASINGS`."""
    return _once(side, data_seed, PHRASINGS, "skill")


def retention_items(side: str, data_seed: int = 0) -> list[tuple[str, str]]:
    """``(prompt, answer)``: every cluster of ``side`` (``val`` or ``test``) once, in a seeded Fig. 8 form."""
    if side == "train":
        raise ValueError("retention is measured on val / test clusters only: train's are the fine-tune's")
    return _once(side, data_seed, FIG8, "retention")


def train_rows(n: int, seed: int = 0, data_seed: int = 0) -> list[tuple[str, str, Cluster]]:
    """``n`` fine-tune rows ``(prompt, completion, cluster)``, alternately the new skill (a held-out phrasing) and the
    Fig. 8 replay, each on a seeded ``train`` cluster in a seeded order: nothing outside ``train`` is ever drawn."""
    rng, train = random.Random(seed), sides(data_seed)["train"]
    out = []
    for i in range(n):
        c = rng.choice(train)
        t = rng.choice([t for t in (PHRASINGS if i % 2 == 0 else FIG8) if t.op == c[0]])
        p, a = _item(t, *rng.choice(orders(c)), rng)
        out.append((p, t.joiner + a, c))
    return out


def majority_share(items: list[tuple[str, str]], ops: list[str] | None = None) -> float:
    """Chance: the accuracy of a model that reads only what the prompt gives away besides the operands. Every
    phrasing names its operation, so with ``ops`` (the operation of each item) it is the per-operation majority: the
    most frequent answer's share within each operation, weighted by that operation's items (the reasoning of
    :mod:`arithmech.data.floors`); without ``ops``, the most frequent answer's share over all ``items``."""
    if ops is None:
        return Counter(a for _, a in items).most_common(1)[0][1] / len(items)
    if len(ops) != len(items):
        raise ValueError(f"{len(ops)} operations for {len(items)} items")
    by: dict[str, Counter] = {}
    for (_, a), op in zip(items, ops):
        by.setdefault(op, Counter())[a] += 1
    return sum(c.most_common(1)[0][1] for c in by.values()) / len(items)


def side_chance(side: str, items: list[tuple[str, str]], data_seed: int = 0) -> float:
    """Chance on ``side``'s items (:func:`skill_items` or :func:`retention_items`, one per cluster in the side's
    order): the per-operation majority share (:func:`majority_share` with each cluster's operation)."""
    return majority_share(items, [c[0] for c in sides(data_seed)[side]])
