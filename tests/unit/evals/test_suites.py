"""Unit tests of ``arithmech/evals/suites.py``."""
from __future__ import annotations


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
    """Protects the split rule: for every toy measure (and the paper suite's arithmetic validation vs
    its test items), validation and test items share no operand pair and no phrasing (template); the
    training data of the new skills holds no validation or test pair; sizes are as documented."""
    from arithmech.data import splits
    from arithmech.data import templates as T
    from arithmech.evals import suites as S
    for name, f in (("negative", splits.negative_items), ("two_digit", splits.two_digit_items),
                    ("single_digit", lambda side: splits.single_digit_items(side, 4))):
        val = [_form_and_pair(p) for p, _ in f("val")]
        test = [_form_and_pair(p) for p, _ in f("test")]
        assert val and test, name
        assert not {t for t, _ in val} & {t for t, _ in test}, f"{name}: shared phrasing"
        assert not {ab for _, ab in val} & {ab for _, ab in test}, f"{name}: shared operand pair"
    assert (len(splits.negative_items("val")), len(splits.negative_items("test")), len(splits.two_digit_items("test"))) == (18, 90, 300)
    facts_val, facts_test = splits.fact_items("val"), splits.fact_items("test")
    assert not set(facts_val) & set(facts_test) and len(facts_val) + len(facts_test) == 87
    rows = [_form_and_pair(p) for p, _ in S.toy_train(600, seed=0)]
    new_pairs = {ab for t, ab in rows if (t.startswith("sub-") and ab[0] < ab[1]) or min(ab) >= 10}
    assert len(new_pairs) > 150                                    # negative-difference and two-digit rows
    for side in ("val", "test"):
        for f in (splits.negative_items, splits.two_digit_items):
            assert not new_pairs & {_form_and_pair(p)[1] for p, _ in f(side)}
    # the paper suite: validation = forms VAL_FORMS on "val" pairs; test held-out phrasings = forms 3, 7 + Fig. 10
    from arithmech.evals.measures import phrasings
    _, held_t = phrasings()
    test = [_form_and_pair(p) for p, _ in splits.single_digit_items("test", 4, templates=held_t)]
    val = [_form_and_pair(p) for p, _ in splits.single_digit_items("val", 4)]
    assert not {t for t, _ in val} & {t for t, _ in test} and not {ab for _, ab in val} & {ab for _, ab in test}
    assert all(t in {x.id for x in T.FIG10} or int(t.rsplit("-", 1)[1]) in (3, 7) for t, _ in test)


def test_planted_suite_sides_share_no_pair_and_no_form():
    """Protects the planted Table 1's held-out design: the accumulation problems of training, validation and test
    use disjoint operand pairs (27 each of the 81 App. A pairs) and disjoint forms (two, one, one), every answer is
    A + B, and the training rows hold no validation or test pair of the new skill."""
    import re

    from arithmech.data import splits
    from arithmech.evals.suites import get_suite

    pairs = splits.accumulation_pairs()
    assert [len(pairs[s]) for s in ("train", "val", "test")] == [27, 27, 27]
    assert len({p for s in pairs.values() for p in s}) == 81
    items = {s: splits.accumulation_items(s) for s in ("train", "val", "test")}
    seen = {s: {tuple(map(int, re.findall(r"\d+", p)[:2])) for p, _ in items[s]} for s in items}
    assert seen == {s: set(pairs[s]) for s in items}
    assert all(int(a) == sum(map(int, re.findall(r"\d+", p)[:2])) for s in items for p, a in items[s])
    assert len(items["val"]) == len(items["test"]) == 27 * 4 and len(items["train"]) == 27 * 2 * 4
    sides = [set(v) for v in splits.ACCUMULATION_FORMS.values()]
    assert sum(map(len, sides)) == len(set().union(*sides)) == 4
    assert all(" yesterday, " in p for p, _ in items["test"])  # acc-12's form only
    assert all(re.search(r"^\S+ has \d+ \S+, and \S+ has \d+", p) for p, _ in items["val"])  # acc-11's
    assert not any(" yesterday, " in p or re.search(r", and \S+ has \d+", p) for p, _ in items["train"])
    suite = get_suite("planted")
    rows = suite.train(200, seed=0)
    acc = [p for p, _ in rows if "total number" in p]
    assert len(acc) == 100 and all(p in {q for q, _ in items["train"]} for p in acc)
    assert suite.primary_math == "accumulation" and suite.primary_general == "fig8"
