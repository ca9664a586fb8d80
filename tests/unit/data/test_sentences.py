"""Unit tests of ``arithmech/data/sentences.py``."""
from __future__ import annotations

from arithmech.data.sentences import train_sentences
from arithmech.evals.measures import phrasings


def test_training_sentences_exclude_heldout():
    """Protects: Table 1 trains only on its training phrasings and training operand pairs, so the
    held-out phrasings and the two-digit test pairs are unseen."""
    import re

    from arithmech.data.sentences import two_digit_split
    train_t, held_t = phrasings()
    assert not {t.id for t in train_t} & {t.id for t in held_t} and len(train_t) == 16   # 36 - 4 x (2 + 3)
    pattern = lambda t: re.compile(re.sub(r"\\\{(A|B)\\\}", r"(\\d+)", re.sub(r"\\\{OP\\\}", r"\\S+", re.escape(t.clean))))
    _, test = two_digit_split(0)
    test_pairs = {(a, b) for a, b, _ in test}
    sents = train_sentences(400, seed=0)
    assert sum(int(re.findall(r"\d+", p)[0]) >= 10 for p, _ in sents) >= 150      # two-digit rows are there
    for p, c in sents:
        assert any(pattern(t).fullmatch(p) for t in train_t) and not any(pattern(t).fullmatch(p) for t in held_t)
        a, b = map(int, re.findall(r"\d+", p)[:2])
        assert (a, b) not in test_pairs or max(a, b) < 10
        assert c.startswith(" ") and c.strip().lstrip("-").isdigit()
