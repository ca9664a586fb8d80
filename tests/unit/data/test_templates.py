"""Unit tests of ``arithmech/data/templates.py``."""
from __future__ import annotations

from collections import Counter

from arithmech.data import templates
from arithmech.data.draw import Draw
from arithmech.data.pairs import make_pairs


def test_template_counts():
    """Protects: Fig. 8 has 4 operations x 9 distinct forms; Fig. 10 has 8 time-span + 4 accumulation."""
    assert len(templates.FIG8) == 36 and len({(t.op, t.clean) for t in templates.FIG8}) == 36
    assert {t.family for t in templates.FIG8} == {"equation", "statement", "qa"}
    assert [t.family for t in templates.FIG10].count("time-span") == 8 and len(templates.FIG10) == 12
    assert len(templates.EXPONENTIATION) == 2


def test_neutral_sets_hold_no_operator():
    """Protects valid counterfactuals: no neutral word or symbol is an operator any template or chapter studies
    (the four operations' symbols/words/nouns, App. D's "^" and "power", Fig. 10's verbs, bitwise symbols),
    and {S} is drawn uniformly from the neutral symbols only."""
    ops = templates.operators()
    assert {"+", "-", "*", "/", "^", "power", "plus", "times", "sum"} <= ops
    for t in templates.TEMPLATES.values():
        if t.op_word and not t.op_word.startswith("{"):
            assert t.op_word in ops, t.id
    assert not ops & set(templates.NEUTRAL_WORDS) and not ops & set(templates.NEUTRAL_SYMBOLS)
    assert not ops & set(templates.POOLS["N"]) and not ops & set(templates.POOLS["S"])
    assert set(templates.SYMBOL_DRAWS) == set(templates.NEUTRAL_SYMBOLS)
    assert set(Counter(templates.SYMBOL_DRAWS).values()) == {len(templates.SYMBOL_DRAWS) // len(templates.NEUTRAL_SYMBOLS)}


def test_every_known_field_renders(tok):
    """Protects: FIELDS (what the schema check allows) are all filled in by the pair maker: a template that
    uses every one of them makes pairs without a KeyError."""
    clean = " ".join(f"{{{f}}}" for f in sorted(templates.FIELDS - {"A", "B", "OP"})) + " {A} {OP} {B} is"
    t = templates.parse_pair(clean, clean.replace("{OP}", "{N}"), id="all-fields", op_word="plus")
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

    want = [t for t in templates.FIG8 if t.op != "division"] + [t for t in templates.FIG10 if t.family == "accumulation"]
    assert [t.id + "-2d" for t in want] == [t.id for t in templates.TWO_DIGIT] and len(templates.TWO_DIGIT) == 31
    for one, two in zip(want, templates.TWO_DIGIT, strict=True):
        assert templates.TEMPLATES[two.id] is two
        assert (two.op, two.family, two.clean, two.corrupt, two.op_word, two.joiner) == (
            one.op, one.family, one.clean, one.corrupt, one.op_word, one.joiner)
        assert (one.operands, two.operands) == ((1, 9), (10, 99))
    rng = random.Random(0)
    drawn = [draw_operands(templates.TEMPLATES["sub-1-2d"], rng, division="uniform-quotient") for _ in range(200)]
    assert all(10 <= a <= 99 and 10 <= b <= 99 and a >= b and c == a - b for a, b, c in drawn)
    assert max(a for a, _, _ in drawn) > 80 and min(b for _, b, _ in drawn) < 20  # the whole range, not a corner
    for t in [templates.TEMPLATES["div-1"], templates.TEMPLATES["span-1"], templates.TWO_DIGIT[0]]:
        with pytest.raises(ValueError, match=t.id):
            templates.two_digit(t)


def test_one_digit_draws_are_unchanged_by_the_operand_range():
    """Protects every shipped draw (X_r, X_c, the embedded model's training text): a one-digit template still takes
    two ``randint(1, 9)`` per try from the same stream, written out here without the package."""
    import random

    from arithmech.data.answers import draw_operands

    got, ref = random.Random(7), random.Random(7)
    for _ in range(50):
        a, b, c = draw_operands(templates.TEMPLATES["add-2"], got, division="uniform-quotient")
        assert (a, b, c) == (ref.randint(1, 9), ref.randint(1, 9), a + b)
