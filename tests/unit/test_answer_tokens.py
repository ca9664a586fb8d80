"""Answer-token variants, neutral symbols and the counterfactual check (arithmech.data.pairs,
arithmech.data.answer_tokens, arithmech.methods.prepare), under the embedded word-level tokenizer and a tiny
tokenizer with SmolLM2's rules for numbers (tests/factories.py)."""
from __future__ import annotations

import dataclasses
import hashlib
import random
from collections import Counter

import pandas as pd
import pytest
import torch
from factories import make_bytelevel_tokenizer, make_tiny_llama

from arithmech.data import pairs as D
from arithmech.evals.scoring import filter_correct
from arithmech.evals.scoring import predict
from arithmech.data import templates as T
from arithmech.data.answer_tokens import answer_token_table, template_summary
from arithmech.evals.scoring import check_counterfactuals
from arithmech.methods.prepare import prepare

SMALL = ("add-1", "add-2", "add-5", "mul-1", "sub-1")        # equations and statements both tokenizers write


def _ids(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


@pytest.fixture(scope="module")
def bytelevel():
    return make_bytelevel_tokenizer()


@pytest.fixture(params=["embedded", "bytelevel"])
def any_tok(request, embedded_tokenizer, bytelevel):
    return embedded_tokenizer if request.param == "embedded" else bytelevel


@pytest.mark.parametrize("variant", D.ANSWER_TOKENS)
@pytest.mark.parametrize("kind", ["operator", "operand"])
def test_each_variant_on_a_small_template_set(any_tok, variant, kind):
    """Protects the three answer tokens: "first" is the answer's first digit, "single-token" keeps only
    one-token answers, "last-digit" carries the leading digits and asks for the last one; the prompt plus
    the answer token tokenizes exactly as the whole text (prompt + joiner + answer) does, X_c carries the
    same digits and keeps the token length, and the operand X_c's own answer shares the leading digits."""
    tok = any_tok
    samples, _ = D.draw_pairs(tok, [T.TEMPLATES[i] for i in SMALL], n=60, seed=4, kind=kind, answer_token=variant)
    ids = D.answer_ids(tok, samples).tolist()
    rule = {"addition": int.__add__, "subtraction": int.__sub__, "multiplication": int.__mul__}
    for s, a in zip(samples, ids):
        assert int(s.target) == rule[s.op](s.a, s.b) and s.answer_token == variant
        assert tok.decode([a]).strip() == s.answer
        whole, head = _ids(tok, s.bare + s.target), _ids(tok, s.clean) + [a]
        assert whole[:len(head)] == head                    # prompt + answer token = the whole text's tokens
        assert len(tok(s.clean)["input_ids"]) == len(tok(s.corrupt)["input_ids"])
        assert s.corrupt.endswith(s.carried)
        if variant == "first":
            assert s.carried == "" and s.answer == s.target[0]
        elif variant == "single-token":
            assert s.carried == "" and s.answer == s.target and len(s.target) == 1   # both tokenizers split digits
            assert head == whole
        else:
            assert s.carried == s.target[:-1] and s.answer == s.target[-1] and s.clean.endswith(s.carried)
            assert head == whole                            # ... and the answer token is its last token
        if kind == "operand":
            toks = tok.convert_ids_to_tokens(tok(s.corrupt)["input_ids"])
            a2 = int("".join(toks[p] for p in s.positions["A"]).replace("Ġ", ""))
            b2 = int("".join(toks[p] for p in s.positions["B"]).replace("Ġ", ""))
            c2 = str(rule[s.op](a2, b2))
            assert (a2, b2) != (s.a, s.b) and c2[:len(s.carried)] == s.carried
            assert c2[len(s.carried)] != s.target[len(s.carried)]          # another answer token
    if variant == "last-digit":
        assert any(s.carried for s in samples)


@pytest.mark.parametrize("variant", ["last-digit", "first"])
def test_last_digit_token_depends_on_both_operands(embedded_tokenizer, variant):
    """Protects the point of "last-digit": over every (A, B) in 1..9 of "{A} + {B} =", fixing either operand
    and varying the other gives nine different answer tokens; under the paper's "first" token it does not
    (A = 9: every B gives "1"), and 45 of the 81 sums share the token "1"."""
    tok = embedded_tokenizer
    tokens = {}
    for a in range(1, 10):
        for b in range(1, 10):
            split = D.split_answer(tok, f"{a} + {b} =", str(a + b), " ", variant)
            tokens[a, b] = tok.decode([split[1]]).strip()
    fixed_a = [len({tokens[a, b] for b in range(1, 10)}) for a in range(1, 10)]
    fixed_b = [len({tokens[a, b] for a in range(1, 10)}) for b in range(1, 10)]
    if variant == "last-digit":
        assert fixed_a == [9] * 9 and fixed_b == [9] * 9
        assert all(tokens[a, b] == str((a + b) % 10) for a, b in tokens)
    else:
        assert fixed_a[8] == 1 and Counter(tokens.values())["1"] == 45


@pytest.mark.parametrize("variant", D.ANSWER_TOKENS)
def test_variants_are_seeded(embedded_tokenizer, variant):
    """Protects determinism: the same seed gives the same samples under every variant, another seed others."""
    tok = embedded_tokenizer
    a, sa = D.make_pairs(tok, "all", n=40, seed=7, answer_token=variant)
    b, sb = D.make_pairs(tok, "all", n=40, seed=7, answer_token=variant)
    c, _ = D.make_pairs(tok, "all", n=40, seed=8, answer_token=variant)
    assert a == b and sa == sb and a != c


def test_unknown_variant_is_refused(embedded_tokenizer):
    """Protects the input contract: an unknown answer-token variant is one clear ValueError naming the three."""
    with pytest.raises(ValueError, match="answer token 'last'.*last-digit, single-token, first"):
        D.make_pairs(embedded_tokenizer, "addition", n=2, answer_token="last")


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


def test_drawn_counterfactuals_carry_no_operator(embedded_tokenizer):
    """Protects: no drawn X_c of any template (App. D's exponentiation included) holds an operator token
    where X_r has its operator."""
    tok = embedded_tokenizer
    samples, _ = D.make_pairs(tok, T.FIG8 + T.EXPONENTIATION, n=4 * 38, seed=0)
    ops = T.operators()
    for s in samples:
        got = tok.decode([tok(s.corrupt)["input_ids"][p] for p in s.positions["operator"]]).strip()
        assert got in T.NEUTRAL_WORDS + T.NEUTRAL_SYMBOLS and got not in ops


def test_embedded_training_corpus_unchanged():
    """Protects reproducible retraining: dropping ^ & | ~ from the neutral symbols leaves the embedded model's
    training corpus byte-identical to the one the shipped weights were trained on (digest of the held-out
    retraining's corpus, taken on its branch before the neutral-symbol change was merged)."""
    from arithmech.embedded import train as E
    blob = "\n".join(E.corpus(random.Random(0), 3000)).encode()
    assert hashlib.sha256(blob).hexdigest()[:16] == "855168a5f5c225a3"


def _constant_model(tok, token: str):
    """A tiny Llama whose top-1 next token is ``token`` after every prompt: all embeddings equal, so the
    END state is one vector, and the output row of ``token`` is that vector (the others zero)."""
    model = make_tiny_llama(n_layers=2, vocab=len(tok), seed=1)
    with torch.no_grad():
        model.model.embed_tokens.weight[:] = model.model.embed_tokens.weight[0]
        h = model.model(torch.tensor([[1, 2, 3]])).last_hidden_state[0, -1]
        model.lm_head.weight.zero_()
        model.lm_head.weight[tok.convert_tokens_to_ids(token)] = h
    return model


def test_counterfactual_check_drops_pairs_answered_the_same(embedded_tokenizer):
    """Protects the X_c check: a model whose answer ignores the prompt answers X_c as X_r, so every pair is
    dropped and counted; prepare then stops with a message saying why (no X_r is left)."""
    tok = embedded_tokenizer
    model = _constant_model(tok, "8")
    samples, _ = D.make_pairs(tok, "addition", n=60, seed=0, answer_token="single-token")
    right = [s for s in samples if s.answer == "8"]
    assert right
    kept, passed = check_counterfactuals(model, tok, samples)
    assert kept == [s for s in samples if s.answer != "8"] and passed == [s.answer != "8" for s in samples]
    with pytest.raises(ValueError, match=f"answers {len(right)} of the 60 .*top-1 token is still the answer"):
        prepare(model, tok, "addition", 60, 0, answer_token="single-token")


def test_counterfactual_check_on_the_embedded_model(embedded_model):
    """Protects prepare's counts against a direct recount: a pair whose X_c is X_r itself is always dropped;
    the others pass exactly when the model's top-1 token on X_c differs from the answer token; info and the
    answer-token table agree with the samples kept."""
    model, tok, _ = embedded_model
    samples, _ = D.make_pairs(tok, "addition", n=48, seed=2, answer_token="last-digit")
    same = [dataclasses.replace(s, corrupt=s.clean) if i % 3 == 0 else s for i, s in enumerate(samples)]
    correct, _ = filter_correct(model, tok, same)
    kept, passed = check_counterfactuals(model, tok, correct)
    top_c = predict(model, tok, [s.corrupt for s in correct])[:, 0]
    assert passed == (top_c != D.answer_ids(tok, correct)).tolist()
    assert all(s.corrupt != s.clean for s in kept) and any(s.corrupt == s.clean for s in correct)
    kept2, info = prepare(model, tok, same, 48, 0)
    assert kept2 == kept and info["n_kept"] == len(kept) and info["n_correct"] == len(correct)
    cc = info["counterfactual_check"]
    assert (cc["checked"], cc["passed"], cc["dropped"]) == (len(correct), len(kept), len(correct) - len(kept))
    table = answer_token_table({"addition": info})
    whole = table[table.template == "all"].iloc[0]
    assert (whole.n, whole.xc_checked, whole.xc_passed) == (len(kept), len(correct), len(kept))
    counts = Counter(s.answer for s in kept)
    assert whole.top_share == pytest.approx(max(counts.values()) / len(kept))
    assert 0 <= info["exact_match"] <= 1


def test_answer_token_table_counts():
    """Protects answer_tokens.csv against a hand count: per-template and "all" rows, the most frequent answer
    token among kept prompts (ties broken by text), its share (the floor), pass rates and accuracies."""
    mk = lambda tid, ans: D.Sample("p", "q", ans, ans, 1, 1, "addition", tid, "equation")
    samples = [mk("t1", "1"), mk("t1", "1"), mk("t1", "2"), mk("t1", "3"), mk("t2", "5"), mk("t2", "4"), mk("t2", "4")]
    correct = [True, True, True, False, True, True, True]
    exact = [True, False, True, False, True, True, False]
    passed = [True, True, False, None, True, True, True]
    info = {"addition": {"answer_token": "last-digit", "templates": template_summary(samples, correct, exact, passed)},
            "other": {"answer_token": "first", "templates": template_summary(samples[:2], correct[:2], exact[:2],
                                                                            passed[:2])}}
    t = answer_token_table(info).set_index(["task", "template"])
    r = t.loc[("addition", "t1")]
    assert (r.n_drawn, r.correct, r.exact, r.xc_checked, r.xc_passed, r.n) == (4, 3, 2, 3, 2, 2)
    assert r.top_token == "1" and r.top_share == 1.0 and r.xc_pass_rate == pytest.approx(2 / 3)
    r = t.loc[("addition", "t2")]
    assert r.top_token == "4" and r.top_share == pytest.approx(2 / 3)
    r = t.loc[("addition", "all")]
    assert (r.n, r.top_token, r.top_share, r.accuracy, r.exact_match) == (5, "1", 0.4, 6 / 7, 4 / 7)
    r = t.loc[("all", "all")]
    assert (r.n, r.top_token, r.top_share, r.answer_token) == (7, "1", 4 / 7, "first/last-digit")
    tie = answer_token_table({"x": {"templates": template_summary(samples[4:6], [True] * 2, [True] * 2, [True] * 2)}})
    assert tie.iloc[0].top_token == "4" and tie.iloc[0].top_share == 0.5            # "4" < "5"
    assert list(answer_token_table({"gsm8k": {"n_kept": 3}}).columns)[:3] == ["task", "template", "answer_token"]
    assert isinstance(answer_token_table({}), pd.DataFrame)


def test_answer_tokens_file_roundtrip(tmp_path):
    """Protects the results contract of answer_tokens.csv: written and read through core/results, the answer
    tokens stay text ("0" is not the number 0) and every declared column is there."""
    from arithmech.core import results as R
    mk = lambda ans: D.Sample("p", "q", ans, "1" + ans, 1, 9, "addition", "add-1", "equation")
    samples = [mk("0"), mk("0"), mk("7")]
    info = {"addition": {"answer_token": "last-digit", "templates": template_summary(samples, [True] * 3, [True] * 3,
                                                                                   [True] * 3)}}
    effects = pd.DataFrame({"task": ["addition"], "layer": [0], "head": ["0"], "effect": [0.0], "effect_lo": [0.0],
                            "effect_hi": [0.0]})
    R.write_step(tmp_path, "identify", {"answer_tokens.csv": answer_token_table(info), "effects.csv": effects}, {})
    back = R.read(tmp_path, "answer_tokens.csv")
    assert list(back.top_token) == ["0", "0"] and back.top_share.tolist() == pytest.approx([2 / 3] * 2)
