"""Unit tests of ``arithmech/data/templates.py``."""
from __future__ import annotations

from collections import Counter

from arithmech.data import templates as T
from arithmech.data.draw import Draw
from arithmech.data.pairs import make_pairs


def test_template_counts():
    """Protects: Fig. 8 has 4 operations x 9 distinct forms; Fig. 10 has 8 time-span + 4 accumulation."""
    assert len(T.FIG8) == 36 and len({(t.op, t.clean) for t in T.FIG8}) == 36
    assert {t.family for t in T.FIG8} == {"equation", "statement", "qa"}
    assert [t.family for t in T.FIG10].count("time-span") == 8 and len(T.FIG10) == 12
    assert len(T.EXPONENTIATION) == 2


def test_neutral_sets_hold_no_operator():
    """Protects valid counterfactuals: no neutral word or symbol is an operator any template or chapter studies
    (the four operations' symbols/words/nouns, App. D's "^" and "power", Fig. 10's verbs, bitwise symbols),
    and {S} is drawn uniformly from the neutral symbols only."""
    ops = T.operators()
    assert {"+", "-", "*", "/", "^", "power", "plus", "times", "sum"} <= ops
    for t in T.TEMPLATES.values():
        if t.op_word and not t.op_word.startswith("{"):
            assert t.op_word in ops, t.id
    assert not ops & set(T.NEUTRAL_WORDS) and not ops & set(T.NEUTRAL_SYMBOLS)
    assert not ops & set(T.POOLS["N"]) and not ops & set(T.POOLS["S"])
    assert set(T.SYMBOL_DRAWS) == set(T.NEUTRAL_SYMBOLS)
    assert set(Counter(T.SYMBOL_DRAWS).values()) == {len(T.SYMBOL_DRAWS) // len(T.NEUTRAL_SYMBOLS)}


def test_every_known_field_renders(tok):
    """Protects: FIELDS (what the schema check allows) are all filled in by the pair maker: a template that
    uses every one of them makes pairs without a KeyError."""
    clean = " ".join(f"{{{f}}}" for f in sorted(T.FIELDS - {"A", "B", "OP"})) + " {A} {OP} {B} is"
    t = T.parse_pair(clean, clean.replace("{OP}", "{N}"), id="all-fields", op_word="plus")
    samples, _ = make_pairs(tok, [t], n=3, seed=0, draw=Draw("first", 0, 1))
    assert len(samples) == 3 and all("{" not in s.clean for s in samples)


def test_two_digit_twins_widen_only_the_operands():
    """Protects the knockout's two-digit held-out problems: every Fig. 8 addition, subtraction and multiplication form
    and the four accumulation sentences have a twin (``<id>-2d``, registered) with the same sentence, counterfactual
    and operator, drawing A and B in 10..99 by its rule (subtraction keeps A >= B); division and the time-span
    sentences have none (a ValueError names the template)."""
    import random

    import pytest

    from arithmech.data.answers import draw_operands

    want = [t for t in T.FIG8 if t.op != "division"] + [t for t in T.FIG10 if t.family == "accumulation"]
    assert [t.id + "-2d" for t in want] == [t.id for t in T.TWO_DIGIT] and len(T.TWO_DIGIT) == 31
    for one, two in zip(want, T.TWO_DIGIT, strict=True):
        assert T.TEMPLATES[two.id] is two
        assert (two.op, two.family, two.clean, two.corrupt, two.op_word, two.joiner) == (
            one.op, one.family, one.clean, one.corrupt, one.op_word, one.joiner)
        assert (one.operands, two.operands) == ((1, 9), (10, 99))
    rng = random.Random(0)
    drawn = [draw_operands(T.TEMPLATES["sub-1-2d"], rng, division="uniform-quotient") for _ in range(200)]
    assert all(10 <= a <= 99 and 10 <= b <= 99 and a >= b and c == a - b for a, b, c in drawn)
    assert max(a for a, _, _ in drawn) > 80 and min(b for _, b, _ in drawn) < 20  # the whole range, not a corner
    for t in [T.TEMPLATES["div-1"], T.TEMPLATES["span-1"], T.TWO_DIGIT[0]]:
        with pytest.raises(ValueError, match=t.id):
            T.two_digit(t)


def test_one_digit_draws_are_unchanged_by_the_operand_range():
    """Protects every shipped draw (X_r, X_c, the embedded model's training text): a one-digit template still takes
    two ``randint(1, 9)`` per try from the same stream, written out here without the package."""
    import random

    from arithmech.data.answers import draw_operands

    got, ref = random.Random(7), random.Random(7)
    for _ in range(50):
        a, b, c = draw_operands(T.TEMPLATES["add-2"], got, division="uniform-quotient")
        assert (a, b, c) == (ref.randint(1, 9), ref.randint(1, 9), a + b)
