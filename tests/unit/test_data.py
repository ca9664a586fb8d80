"""The paper's prompt datasets (arithmech.data.templates, arithmech.data.pairs) under the embedded tokenizer."""
from __future__ import annotations

import pytest

from arithmech.data import templates as T
from arithmech.data.pairs import (TemplateLengthError, answer_ids, load_template_pairs, make_pairs,
                                  select_templates)


def test_template_counts():
    """Protects: Fig. 8 has 4 operations x 9 distinct forms; Fig. 10 has 8 time-span + 4 accumulation."""
    assert len(T.FIG8) == 36 and len({(t.op, t.clean) for t in T.FIG8}) == 36
    assert {t.family for t in T.FIG8} == {"equation", "statement", "qa"}
    assert [t.family for t in T.FIG10].count("time-span") == 8 and len(T.FIG10) == 12
    assert len(T.EXPONENTIATION) == 2


@pytest.mark.parametrize("task", ["addition", "subtraction", "multiplication", "division", "all", "exponentiation"])
def test_pairs_equal_length_and_answer_token(embedded_tokenizer, task):
    """Protects: X_r and X_c have equal token length, and {C} is the first token of the true answer."""
    tok = embedded_tokenizer
    samples, stats = make_pairs(tok, task, n=120, seed=3)
    assert stats.made == 120
    for s in samples:
        assert len(tok(s.clean)["input_ids"]) == len(tok(s.corrupt)["input_ids"])
        assert s.clean != s.corrupt
        assert s.target.startswith(s.answer)
        c = {"addition": s.a + s.b, "subtraction": s.a - s.b, "multiplication": s.a * s.b,
             "division": s.a // s.b if s.b else None, "exponentiation": s.a ** s.b}[s.op]
        assert int(s.target) == c and 1 <= s.a <= 9 and 1 <= s.b <= 9
    ids = answer_ids(tok, samples)
    assert [tok.decode([i]).strip() for i in ids.tolist()] == [s.answer for s in samples]


def test_counterfactual_removes_operator(embedded_tokenizer):
    """Protects: the operator word/symbol of X_r is replaced by a neutral word/symbol in X_c."""
    tok = embedded_tokenizer
    samples, _ = make_pairs(tok, "fig8", n=72, seed=0)
    for s in samples:
        op_tokens = [tok(s.clean)["input_ids"][p] for p in s.positions["operator"]]
        cor_tokens = [tok(s.corrupt)["input_ids"][p] for p in s.positions["operator"]]
        assert op_tokens != cor_tokens
        assert tok.decode(cor_tokens).strip() in T.NEUTRAL_WORDS + T.NEUTRAL_SYMBOLS


def test_positions_point_at_operands(embedded_tokenizer):
    """Protects: stored token positions of A, B and the operator are where those tokens are."""
    tok = embedded_tokenizer
    samples, _ = make_pairs(tok, "all", n=96, seed=1)
    for s in samples:
        toks = tok.convert_ids_to_tokens(tok(s.clean)["input_ids"])
        assert [toks[p] for p in s.positions["A"]] == list(str(s.a))
        assert [toks[p] for p in s.positions["B"]] == list(str(s.b))
        assert s.positions["end"] == len(toks) - 1
        # every template names its operator, except Fig. 10's "X has A, and Y has B" (no calculation word)
        assert s.positions["operator"] or "{OP}" not in T.TEMPLATES[s.template].clean


def test_seeded_and_deterministic(embedded_tokenizer):
    """Protects: the same seed gives the same pairs; another seed gives others."""
    tok = embedded_tokenizer
    a, _ = make_pairs(tok, "all", n=50, seed=7)
    b, _ = make_pairs(tok, "all", n=50, seed=7)
    c, _ = make_pairs(tok, "all", n=50, seed=8)
    assert a == b and a != c


def test_length_changing_pair_is_redrawn_then_fails(embedded_tokenizer):
    """Protects: a user pair whose counterfactual can never keep the token length fails with one clear message."""
    tok = embedded_tokenizer
    bad = T.parse_pair("{A} plus {B} is", "{A} is not the same as {B} is", id="bad")
    with pytest.raises(TemplateLengthError, match="'bad'.*same token length"):
        make_pairs(tok, [bad], n=2, seed=0)


def test_user_pair_exponentiation(embedded_tokenizer, tmp_path):
    """Protects: a template-pair file (App. D) goes through the same pairing, answers from its expression."""
    tok = embedded_tokenizer
    f = tmp_path / "pairs.json"
    f.write_text('[{"clean": "{A} to the power of {B} equals", "corrupt": "{A} to the none of {B} equals", '
                 '"answer": "A ** B", "op_word": "power", "id": "pow"}]')
    samples, _ = make_pairs(tok, load_template_pairs(f), n=20, seed=0)
    assert all(int(s.target) == s.a ** s.b for s in samples)


def test_jsonl_roundtrip(embedded_tokenizer, tmp_path):
    """Protects: prompts.jsonl, written and read through the results contract, holds the exact samples."""
    import pandas as pd

    from arithmech.core import results as R

    from arithmech.data import pairs
    tok = embedded_tokenizer
    samples, _ = make_pairs(tok, "addition", n=30, seed=0)
    R.write_step(tmp_path, "identify", {"prompts.jsonl": samples, "effects.csv": pd.DataFrame(
        {"task": ["addition"], "layer": [0], "head": ["0"], "effect": [0.0], "effect_lo": [0.0], "effect_hi": [0.0]})}, {})
    assert pairs.samples(tmp_path) == samples
    with pytest.raises(FileNotFoundError, match="run `python -m arithmech identify`"):
        pairs.samples(tmp_path / "missing")


def test_unknown_task_clear_error():
    """Protects: an unknown task names the valid ones."""
    with pytest.raises(ValueError, match="unknown task 'sum'.*addition"):
        select_templates("sum")


@pytest.mark.parametrize("task", ["all", "subtraction", "multiplication", "division"])
def test_operand_pairs_change_only_the_operands(embedded_tokenizer, task):
    """Protects: the operand counterfactual keeps every token of X_r except those of {A} and {B}
    (same template, operator and pool words), keeps the token length, and moves the answer token."""
    tok = embedded_tokenizer
    from arithmech.data.pairs import make_operand_pairs
    samples, stats = make_operand_pairs(tok, task, n=96, seed=2)
    assert stats.made == 96
    for s in samples:
        c, x = tok(s.clean)["input_ids"], tok(s.corrupt)["input_ids"]
        assert len(c) == len(x)
        changed = {i for i, (u, w) in enumerate(zip(c, x)) if u != w}
        assert changed and changed <= set(s.positions["A"]) | set(s.positions["B"])
        # X_c's own operands, read back from its tokens, give another answer token by the template's rule
        toks = tok.convert_ids_to_tokens(x)
        a2 = int("".join(toks[p] for p in s.positions["A"]))
        b2 = int("".join(toks[p] for p in s.positions["B"]))
        assert (a2, b2) != (s.a, s.b)
        c2 = {"addition": a2 + b2, "subtraction": a2 - b2, "multiplication": a2 * b2,
              "division": a2 // b2}[s.op]
        assert str(c2)[0] != s.answer and c2 >= 0


def test_operand_pairs_leave_operator_stream_alone(embedded_tokenizer):
    """Protects: drawing operand pairs does not touch make_pairs' random stream (the embedded model's
    training data depends on it): make_pairs gives the same pairs before and after, and the operand
    pairs are seeded (same seed → same pairs)."""
    tok = embedded_tokenizer
    from arithmech.data.pairs import make_operand_pairs
    before, _ = make_pairs(tok, "all", n=40, seed=5)
    a, _ = make_operand_pairs(tok, "all", n=40, seed=5)
    after, _ = make_pairs(tok, "all", n=40, seed=5)
    b, _ = make_operand_pairs(tok, "all", n=40, seed=5)
    assert before == after and a == b
    # the reference sentences of the two counterfactuals come from different draws but the same templates
    assert [s.template for s in a] == [s.template for s in before]


# Digests of the pairs that make_pairs / make_operand_pairs drew before their two loops became one
# (draw_pairs): sha256 of the samples' JSON and the redraw counts, under the embedded tokenizer.
DRAWN_BEFORE = {
    "make_pairs/addition/0": "9253f61a6c38dd7f", "make_pairs/all/1": "354118d1774389a9",
    "make_pairs/fig8/7": "06be1c20dba73b77", "make_pairs/subtraction/3": "83bb335c34917165",
    "make_pairs/fig10/11": "ff976439686f67d9", "make_operand_pairs/addition/0": "f72c5dbe9b414f6e",
    "make_operand_pairs/all/1": "8106525a3f68a84f", "make_operand_pairs/fig8/7": "c2109dadb9c26498",
    "make_operand_pairs/subtraction/3": "acf9da88fbe17f3c", "make_operand_pairs/fig10/11": "15a13b0db127500e",
}


def test_pairs_identical_to_the_two_loop_version(embedded_tokenizer, monkeypatch):
    """Protects: one drawing loop for both counterfactual kinds, and the answer-token variants added to it,
    draw with the paper's variant ("first") exactly the pairs (texts, positions, redraw counts) the two former
    loops drew — given the neutral symbols of that time (eight, ^ & | ~ since dropped as operators)."""
    tok = embedded_tokenizer
    import hashlib
    import json

    from arithmech.data import pairs as D
    former = ("<", ">", "@", "#", "&", "~", "|", "^")
    monkeypatch.setattr(T, "SYMBOL_DRAWS", former)
    monkeypatch.setitem(T.POOLS, "S", former)
    for key, digest in DRAWN_BEFORE.items():
        maker, task, seed = key.split("/")
        s, st = getattr(D, maker)(tok, task, n=40, seed=int(seed))
        assert all(x.answer_token == "first" and x.carried == "" for x in s)
        rows = [{k: v for k, v in x.to_json().items() if k not in ("answer_token", "carried")} for x in s]
        blob = json.dumps(rows + [st.redrawn, st.per_template], sort_keys=True)
        assert hashlib.sha256(blob.encode()).hexdigest()[:16] == digest, key
    with pytest.raises(ValueError, match="unknown counterfactual kind"):
        D.draw_pairs(tok, "addition", n=1, kind="operands")
