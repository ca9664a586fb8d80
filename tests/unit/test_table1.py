"""Table 1's training data (arithmech.steps.table1_old) keeps the held-out phrasings and pairs unseen."""
from __future__ import annotations

from arithmech.evals.measures import phrasings
from arithmech.data.sentences import train_sentences


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


def _form_and_pair(prompt: str):
    """The Fig. 8/10 template a prompt was rendered from (its id) and its operand pair."""
    import re
    from arithmech.data import templates as T
    for t in T.FIG8 + T.FIG10:
        pat = re.escape(t.clean)
        for f in ("A", "B"):
            pat = pat.replace(re.escape("{" + f + "}"), r"(\d+)", 1)
        pat = re.sub(r"\\\{[A-Z_0-9]+\\\}", r".+?", pat)
        m = re.fullmatch(pat, prompt)
        if m:
            return t.id, (int(m.group(1)), int(m.group(2)))
    raise AssertionError(f"no template renders {prompt!r}")


def test_validation_and_test_disjoint_by_pair_and_phrasing():
    """Protects: #14's split rule: for every toy measure (and the paper suite's arithmetic validation vs
    its test items), validation and test items share no operand pair and no phrasing (template); the
    training data of the new skills holds no validation or test pair; sizes are as documented."""
    from arithmech.data import templates as T
    from arithmech.evals import suites as S
    for name, f in (("negative", S.negative_items), ("two_digit", S.two_digit_items),
                    ("single_digit", lambda side: S.single_digit_items(side, 4))):
        val = [_form_and_pair(p) for p, _ in f("val")]
        test = [_form_and_pair(p) for p, _ in f("test")]
        assert val and test, name
        assert not {t for t, _ in val} & {t for t, _ in test}, f"{name}: shared phrasing"
        assert not {ab for _, ab in val} & {ab for _, ab in test}, f"{name}: shared operand pair"
    assert (len(S.negative_items("val")), len(S.negative_items("test")), len(S.two_digit_items("test"))) == (18, 90, 300)
    facts_val, facts_test = S.fact_items("val"), S.fact_items("test")
    assert not set(facts_val) & set(facts_test) and len(facts_val) + len(facts_test) == 87
    rows = [_form_and_pair(p) for p, _ in S.toy_train(600, seed=0)]
    new_pairs = {ab for t, ab in rows if (t.startswith("sub-") and ab[0] < ab[1]) or min(ab) >= 10}
    assert len(new_pairs) > 150                                    # negative-difference and two-digit rows
    for side in ("val", "test"):
        for f in (S.negative_items, S.two_digit_items):
            assert not new_pairs & {_form_and_pair(p)[1] for p, _ in f(side)}
    # the paper suite: validation = forms VAL_FORMS on "val" pairs; test held-out phrasings = forms 3, 7 + Fig. 10
    from arithmech.evals.measures import phrasings
    _, held_t = phrasings()
    test = [_form_and_pair(p) for p, _ in S.single_digit_items("test", 4, templates=held_t)]
    val = [_form_and_pair(p) for p, _ in S.single_digit_items("val", 4)]
    assert not {t for t, _ in val} & {t for t, _ in test} and not {ab for _, ab in val} & {ab for _, ab in test}
    assert all(t in {x.id for x in T.FIG10} or int(t.rsplit("-", 1)[1]) in (3, 7) for t, _ in test)


def test_random_heads_never_key_and_layer_matched():
    """Protects: the random-heads control: k distinct heads, never a key head, each drawn from its key
    head's layer while that layer has free heads, else from the nearest layer; seeded per draw."""
    from arithmech.steps.table1 import random_heads
    all_heads = [(l, h) for l in range(6) for h in range(8)]
    tuned = [(0, 1), (0, 4), (0, 3), (0, 2), (1, 0), (3, 2), (0, 0), (2, 7)]       # the embedded model's top 8
    draws = [random_heads(tuned, all_heads, set(tuned), d) for d in range(3)]
    for r in draws:
        assert len(set(r)) == 8 and not set(r) & set(tuned)
        layers = sorted(l for l, _ in r)
        assert layers == [0, 0, 0, 1, 1, 1, 2, 3]        # layer 0 has 3 free heads: its other 2 go to layer 1
    assert draws[0] != draws[1] and random_heads(tuned, all_heads, set(tuned), 0) == draws[0]
    matched = random_heads([(2, 0), (4, 1)], all_heads, {(2, 0), (4, 1)}, 0)
    assert sorted(l for l, _ in matched) == [2, 4]


def test_learning_rate_rule_and_interior_extension():
    """Protects: the pre-stated selection rule (highest validation math accuracy; within 0.01 of it the
    lowest validation loss) and the grid extension until the chosen rate is interior."""
    from arithmech.steps.table1 import choose, extension
    rows = [{"lr": 1e-3, "val_math": 0.30, "val_nll": 2.0}, {"lr": 3e-3, "val_math": 0.305, "val_nll": 1.5},
            {"lr": 1e-2, "val_math": 0.20, "val_nll": 1.0}]
    assert choose(rows) == 3e-3                                    # 0.30 is within 0.01 of 0.305 but has the higher loss
    rows[2]["val_math"] = 0.5
    assert choose(rows) == 1e-2
    assert extension([1e-3, 3e-3, 1e-2], 1e-2) == 3e-2 and extension([1e-3, 3e-3, 1e-2], 1e-3) == 3e-4
    assert extension([1e-3, 3e-3, 1e-2], 3e-3) is None and extension([0.1, 0.3, 0.9], 0.9) is None


def test_verdict_rules_on_known_intervals():
    """Protects: the verdict rules as the chapter states them, on hand-made intervals (margin 5 points)."""
    from arithmech.claims.verdicts import rule_verdict
    assert [rule_verdict("within", lo, hi, 0.05) for lo, hi in ((-0.04, 0.03), (0.06, 0.2), (-0.1, 0.02))] == \
        ["holds", "does not hold", "inconclusive"]
    assert [rule_verdict("above0", lo, hi, 0.05) for lo, hi in ((0.01, 0.1), (0.0, 0.0), (-0.02, 0.03))] == \
        ["holds", "does not hold", "inconclusive"]
    assert [rule_verdict("above0_or_below_m", lo, hi, 0.05) for lo, hi in ((0.01, 0.2), (-0.1, 0.04), (-0.1, 0.1))] == \
        ["holds", "does not hold", "inconclusive"]
    assert [rule_verdict("above_minus_m", lo, hi, 0.05) for lo, hi in ((-0.04, 0.0), (-0.3, -0.06), (-0.2, 0.0))] == \
        ["holds", "does not hold", "inconclusive"]
