"""Unit tests of ``arithmech/data/splits.py``: the carry problems of the cpu suite (every item needs a carry, sides share
no operand pair and no phrasing)."""
from __future__ import annotations

import re

from arithmech.data import splits


def test_every_problem_needs_a_carry_and_sides_are_disjoint_by_unordered_pair():
    """Protects: the skill is the one named (a units carry in addition, a borrow in subtraction, A > B) and
    no operand pair of a test item occurs on another side in either order or operation."""
    p = splits.carry_pairs(0)
    for probs in p.values():
        for a, b, op in probs:
            assert 10 <= a <= 99 and 10 <= b <= 99
            assert (a % 10 + b % 10 >= 10) if op == "addition" else (a > b and a % 10 < b % 10)
    keys = {side: {(min(a, b), max(a, b)) for a, b, _ in probs} for side, probs in p.items()}
    assert not (keys["test"] & keys["train"]) and not (keys["test"] & keys["val"]) and not (keys["val"] & keys["train"])


def test_items_use_their_sides_forms_and_answers():
    """Protects: training never sees a validation or test phrasing (forms 2, 5, 8 and 3, 7), answers are
    the whole result, and validation/test items are fixed by data_seed alone."""
    forms = {side: {t.id.rsplit("-", 1)[1] for t in splits.carry_forms(side)} for side in ("train", "val", "test")}
    assert forms == {"train": {"1", "4", "6", "9"}, "val": {"2", "5", "8"}, "test": {"3", "7"}}
    test = splits.carry_items("test", 400)
    assert test == splits.carry_items("test", 400, seed=5) and len(set(test)) == 400
    for prompt, ans in test + splits.carry_items("train", 50, seed=1):
        a, b = map(int, re.findall(r"\d+", prompt)[:2])
        assert int(ans) in (a + b, a - b)


def test_identify_split_sides_never_share_a_problem():
    """Protects identify's split: a problem cluster (operation, unordered operand pair) has one fixed side, so
    3 + 5 and 5 + 3 fall together; each operation's single-digit problems go one in EVAL_SHARE to evaluation
    (not only on average: division has 23); ranking_side keeps only ranking clusters and each prompt once."""
    from types import SimpleNamespace

    from arithmech.data import splits
    assert splits.cluster(SimpleNamespace(op="addition", a=5, b=3)) == splits.cluster(SimpleNamespace(op="addition", a=3, b=5))
    for op in ("addition", "subtraction", "multiplication"):
        every = [(op, a, b) for a in range(1, 10) for b in range(a, 10)]
        assert sum(splits.side(c) == "eval" for c in every) == 15
    division = {("division", b, a) for a in range(1, 10) for b in range(1, 10) if a % b == 0}
    assert len(division) == 23 and sum(splits.side(c) == "eval" for c in division) == 8
    ss = [SimpleNamespace(op="addition", a=a, b=b, clean=f"{a}+{b}") for a in range(1, 10) for b in range(1, 10)] * 2
    kept = splits.ranking_side(ss)
    assert len({s.clean for s in kept}) == len(kept) and all(splits.side(splits.cluster(s)) == "rank" for s in kept)
    assert len(kept) == sum(splits.side(splits.cluster(s)) == "rank" for s in ss[:81])
