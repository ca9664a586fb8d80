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
