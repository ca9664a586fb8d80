"""Unit tests of ``arithmech/evals/suites.py``."""
from __future__ import annotations


def _form_and_pair(prompt: str):
    """The Fig. 8/10 template a prompt was rendered from (its id) and its operand pair."""
    import re

    from arithmech.data import templates
    for t in templates.FIG8 + templates.FIG10:
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
    from arithmech.data import splits, templates
    from arithmech.evals import suites as evals_suites
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
    rows = [_form_and_pair(p) for p, _ in evals_suites.toy_train(600, seed=0)]
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
    assert all(t in {x.id for x in templates.FIG10} or int(t.rsplit("-", 1)[1]) in (3, 7) for t, _ in test)


def test_planted_suite_reads_the_cluster_items_and_computes_chance():
    """Protects the planted suite's wiring to :mod:`arithmech.data.planted_items`: its training rows are the stream's
    (train clusters only), and its evaluation scores every side's clusters once per measure with ``chance`` the
    side's per-operation majority share and ``n_clusters`` at least 20 (a stub model that always answers the same)."""
    from arithmech.data import planted_items
    from arithmech.evals import suites

    suite = suites.get_suite("planted")
    assert suite.train(50, seed=3) == [(p, a) for p, a, _ in planted_items.train_rows(50, 3)]
    assert suite.primary_math == "phrasings" and suite.primary_general == "fig8"
    orig = suites.greedy_exact
    try:
        suites.greedy_exact = lambda model, tok, items, batch_size=0: [a == "1" for _, a in items]
        out = suites.planted_evaluate(None, None, "test", {})
    finally:
        suites.greedy_exact = orig
    for k, items in (("phrasings", planted_items.skill_items("test")), ("fig8", planted_items.retention_items("test"))):
        assert out[k]["n"] == out[k]["n_clusters"] == len(planted_items.sides()["test"]) >= 20
        assert out[k]["chance"] == planted_items.side_chance("test", items) >= planted_items.majority_share(items)
        assert out[k]["value"] == sum(a == "1" for _, a in items) / len(items) <= out[k]["chance"]
