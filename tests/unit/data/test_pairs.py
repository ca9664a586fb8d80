"""The paper's prompt pairs (arithmech.data.pairs) under the embedded tokenizer and a tiny BPE one: drawing,
answer-token variants, and pair files that are refused quickly with one clear message."""

from __future__ import annotations

import json
import random
import time
from collections import Counter

import pytest
from factories import BAD_FILES, SAFE, make_bytelevel_tokenizer, time_limit
from factories import write_file as _write

from arithmech.core.inputs import ANSWER_TOKENS
from arithmech.data import answers, pairfile, templates
from arithmech.data import pairs as data_pairs
from arithmech.data.batches import answer_ids
from arithmech.data.draw import Draw
from arithmech.data.pairs import TemplateLengthError, load_template_pairs, make_pairs, select_templates


@pytest.mark.parametrize("task", ["addition", "subtraction", "multiplication", "division", "all", "exponentiation"])
def test_pairs_equal_length_and_answer_token(embedded_tokenizer, task):
    """Protects: X_r and X_c have equal token length, and {C} is the first token of the true answer."""
    tok = embedded_tokenizer
    samples, stats = make_pairs(tok, task, n=120, seed=3, draw=Draw("first", 0, 1))
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
    samples, _ = make_pairs(tok, "fig8", n=72, seed=0, draw=Draw("first", 0, 1))
    for s in samples:
        op_tokens = [tok(s.clean)["input_ids"][p] for p in s.positions["operator"]]
        cor_tokens = [tok(s.corrupt)["input_ids"][p] for p in s.positions["operator"]]
        assert op_tokens != cor_tokens
        assert tok.decode(cor_tokens).strip() in templates.NEUTRAL_WORDS + templates.NEUTRAL_SYMBOLS


def test_positions_point_at_operands(embedded_tokenizer):
    """Protects: stored token positions of A, B and the operator are where those tokens are."""
    tok = embedded_tokenizer
    samples, _ = make_pairs(tok, "all", n=96, seed=1, draw=Draw("first", 0, 1))
    for s in samples:
        toks = tok.convert_ids_to_tokens(tok(s.clean)["input_ids"])
        assert [toks[p] for p in s.positions["A"]] == list(str(s.a))
        assert [toks[p] for p in s.positions["B"]] == list(str(s.b))
        assert s.positions["end"] == len(toks) - 1
        # every template names its operator, except Fig. 10's "X has A, and Y has B" (no calculation word)
        assert s.positions["operator"] or "{OP}" not in templates.TEMPLATES[s.template].clean


def test_seeded_and_deterministic(embedded_tokenizer):
    """Protects: the same seed gives the same pairs; another seed gives others."""
    tok = embedded_tokenizer
    a, _ = make_pairs(tok, "all", n=50, seed=7, draw=Draw("first", 0, 1))
    b, _ = make_pairs(tok, "all", n=50, seed=7, draw=Draw("first", 0, 1))
    c, _ = make_pairs(tok, "all", n=50, seed=8, draw=Draw("first", 0, 1))
    assert a == b and a != c


def test_length_changing_pair_is_redrawn_then_fails(embedded_tokenizer):
    """Protects: a user pair whose counterfactual can never keep the token length fails with one clear message."""
    tok = embedded_tokenizer
    bad = templates.parse_pair("{A} plus {B} is", "{A} is not the same as {B} is", id="bad")
    with pytest.raises(TemplateLengthError, match="'bad'.*same token length"):
        make_pairs(tok, [bad], n=2, seed=0, draw=Draw("first", 0, 1))


def test_user_pair_exponentiation(embedded_tokenizer, tmp_path):
    """Protects: a template-pair file (App. D) goes through the same pairing, answers from its expression."""
    tok = embedded_tokenizer
    f = tmp_path / "pairs.json"
    f.write_text('[{"clean": "{A} to the power of {B} equals", "corrupt": "{A} to the none of {B} equals", '
                 '"answer": "A ** B", "op_word": "power", "id": "pow"}]')
    samples, _ = make_pairs(tok, load_template_pairs(f), n=20, seed=0, draw=Draw("first", 0, 1))
    assert all(int(s.target) == s.a ** s.b for s in samples)


def test_jsonl_roundtrip(embedded_tokenizer, tmp_path):
    """Protects: prompts.jsonl, written and read through the results contract, holds the exact samples."""
    import pandas as pd

    from arithmech.core import results
    from arithmech.data import pairs
    tok = embedded_tokenizer
    samples, _ = make_pairs(tok, "addition", n=30, seed=0, draw=Draw("first", 0, 1))
    results.write_step(tmp_path, "identify", {"prompts.jsonl": samples, "effects.csv": pd.DataFrame(
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
    samples, stats = make_operand_pairs(tok, task, n=96, seed=2, draw=Draw("first", 0, 1))
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
    before, _ = make_pairs(tok, "all", n=40, seed=5, draw=Draw("first", 0, 1))
    a, _ = make_operand_pairs(tok, "all", n=40, seed=5, draw=Draw("first", 0, 1))
    after, _ = make_pairs(tok, "all", n=40, seed=5, draw=Draw("first", 0, 1))
    b, _ = make_operand_pairs(tok, "all", n=40, seed=5, draw=Draw("first", 0, 1))
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
    loops drew — given the neutral symbols of that time (eight, ^ & | ~ since dropped as operators) and the
    division draw of that time ("uniform-operands", since replaced by a uniform quotient for pairs)."""
    tok = embedded_tokenizer
    import hashlib
    import json

    from arithmech.data import pairs as data_pairs
    former = ("<", ">", "@", "#", "&", "~", "|", "^")
    monkeypatch.setattr(templates, "SYMBOL_DRAWS", former)
    monkeypatch.setattr(data_pairs, "PAIRS_DIVISION", "uniform-operands")
    monkeypatch.setitem(templates.POOLS, "S", former)
    for key, digest in DRAWN_BEFORE.items():
        maker, task, seed = key.split("/")
        s, st = getattr(data_pairs, maker)(tok, task, n=40, seed=int(seed), draw=data_pairs.Draw("first", 0, 1))
        assert all(x.answer_token == "first" and x.carried == "" for x in s)
        rows = [{k: v for k, v in x.to_json().items() if k not in ("answer_token", "carried")} for x in s]
        blob = json.dumps(rows + [st.redrawn, st.per_template], sort_keys=True)
        assert hashlib.sha256(blob.encode()).hexdigest()[:16] == digest, key
    with pytest.raises(ValueError, match="unknown counterfactual kind"):
        data_pairs.draw_pairs(tok, "addition", n=1, kind="operands", draw=data_pairs.Draw("first", 0, 1))


SMALL = ("add-1", "add-2", "add-5", "mul-1", "sub-1")        # equations and statements both tokenizers write


def _ids(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


@pytest.fixture(scope="module")
def bytelevel():
    return make_bytelevel_tokenizer()


@pytest.fixture(params=["embedded", "bytelevel"])
def any_tok(request, embedded_tokenizer, bytelevel):
    return embedded_tokenizer if request.param == "embedded" else bytelevel


@pytest.mark.parametrize("variant", ANSWER_TOKENS)
@pytest.mark.parametrize("kind", ["operator", "operand"])
def test_each_variant_on_a_small_template_set(any_tok, variant, kind):
    """Protects the three answer tokens: "first" is the answer's first digit, "single-token" keeps only
    one-token answers, "last-digit" carries the leading digits and asks for the last one; the prompt plus
    the answer token tokenizes exactly as the whole text (prompt + joiner + answer) does, X_c carries the
    same digits and keeps the token length, and the operand X_c's own answer shares the leading digits."""
    tok = any_tok
    samples, _ = data_pairs.draw_pairs(tok, [templates.TEMPLATES[i] for i in SMALL], n=60, seed=4, kind=kind, draw=data_pairs.Draw(variant, 0, 1))
    ids = answer_ids(tok, samples).tolist()
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
            split = data_pairs.split_answer(tok, f"{a} + {b} =", str(a + b), " ", answer_token=variant)
            tokens[a, b] = tok.decode([split[1]]).strip()
    fixed_a = [len({tokens[a, b] for b in range(1, 10)}) for a in range(1, 10)]
    fixed_b = [len({tokens[a, b] for a in range(1, 10)}) for b in range(1, 10)]
    if variant == "last-digit":
        assert fixed_a == [9] * 9 and fixed_b == [9] * 9
        assert all(tokens[a, b] == str((a + b) % 10) for a, b in tokens)
    else:
        assert fixed_a[8] == 1 and Counter(tokens.values())["1"] == 45


@pytest.mark.parametrize("variant", ANSWER_TOKENS)
def test_variants_are_seeded(embedded_tokenizer, variant):
    """Protects determinism: the same seed gives the same samples under every variant, another seed others."""
    tok = embedded_tokenizer
    a, sa = data_pairs.make_pairs(tok, "all", n=40, seed=7, draw=data_pairs.Draw(variant, 0, 1))
    b, sb = data_pairs.make_pairs(tok, "all", n=40, seed=7, draw=data_pairs.Draw(variant, 0, 1))
    c, _ = data_pairs.make_pairs(tok, "all", n=40, seed=8, draw=data_pairs.Draw(variant, 0, 1))
    assert a == b and sa == sb and a != c


def test_unknown_variant_is_refused(embedded_tokenizer):
    """Protects the input contract: an unknown answer-token variant is one clear ValueError naming the three."""
    with pytest.raises(ValueError, match="answer_token='last'.*last-digit, single-token, first"):
        data_pairs.make_pairs(embedded_tokenizer, "addition", n=2, draw=data_pairs.Draw("last", 0, 1))


def test_drawn_counterfactuals_carry_no_operator(embedded_tokenizer):
    """Protects: no drawn X_c of any template (App. D's exponentiation included) holds an operator token
    where X_r has its operator."""
    tok = embedded_tokenizer
    samples, _ = data_pairs.make_pairs(tok, templates.FIG8 + templates.EXPONENTIATION, n=4 * 38, seed=0, draw=data_pairs.Draw("first", 0, 1))
    ops = templates.operators()
    for s in samples:
        got = tok.decode([tok(s.corrupt)["input_ids"][p] for p in s.positions["operator"]]).strip()
        assert got in templates.NEUTRAL_WORDS + templates.NEUTRAL_SYMBOLS and got not in ops


# ------------------------------------------------------------------------------------ pair schema


@pytest.mark.parametrize("text,match", BAD_FILES)
def test_pair_file_violation_names_file_pair_and_field(tmp_path, text, match):
    """Protects: each schema violation of a pair file is one ValueError naming the file, the pair's index
    and the field (and no KeyError/TypeError traceback)."""
    f = _write(tmp_path, text)
    with time_limit(5), pytest.raises(ValueError, match=r"pairs\.json.*" + match):
        load_template_pairs(f)


def test_pair_file_that_is_not_text_or_not_a_file(tmp_path):
    """Protects: binary bytes and a folder given as pair file are clear errors; a missing file is FileNotFoundError."""
    f = tmp_path / "pairs.json"
    f.write_bytes(b"[\xff\xfe\x00]")
    with pytest.raises(ValueError, match="not UTF-8"):
        load_template_pairs(f)
    with pytest.raises(ValueError, match="is not a regular file"):
        load_template_pairs(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_template_pairs(tmp_path / "missing.json")


def test_documented_pair_file_example_loads(tok, tmp_path):
    """Protects: the pair-file example in the Data chapter is a valid file that loads and makes pairs whose
    answers follow the documented rules (A ** B with B <= 3; A * B % 10)."""
    import pathlib

    from arithmech.report.build.plan import read_notebook
    nb = read_notebook(pathlib.Path(__file__).parents[3] / "book" / "data.md")
    cells = [c.source for c in nb.cells if c.cell_type == "markdown"]
    (doc,) = [c for c in cells if "PAIR_FILE_SCHEMA" in c]
    example = doc.split("```json\n", 1)[1].split("```", 1)[0]
    tpls = load_template_pairs(_write(tmp_path, example))
    assert len(tpls) >= 2 and {t.op for t in tpls} >= {"custom"}
    samples, _ = make_pairs(tok, tpls, n=20, seed=0, draw=Draw("first", 0, 1))
    rule = {"power": lambda a, b: a ** b if b <= 3 else None, "last-digit": lambda a, b: a * b % 10}
    assert all(int(s.target) == rule[s.template](s.a, s.b) for s in samples)


# ---------------------------------------------------------------------------------- fuzz: pair files
_ATOMS = ["A", "B", "1", "2.5", "0", "-3", "C", "os", "__import__('os')", "A.real", "f(A)", "'s'", "[1]",
          "lambda: 0", "9", "10 ** 13", "None", "(", ")"]


_OPS = [" + ", " - ", " * ", " / ", " // ", " % ", " ** ", " @ ", " | ", " and ", " < ", ""]


_TEXTS = ["{A} plus {B} is", "{A} nothing {B} is", "{A} {OP} {B} =", "{A} {S} {B} =", "{NAME} has {A} {OBJECT}",
          "{B} only", "{A} {FOO} {B}", "{a} {A}", "{", "}", "", "{A}{B}{C}", "{YYY}{B} {A} {N2}", "x" * 50]


def _expr(rng: random.Random, depth: int = 0) -> str:
    if depth > 3 or rng.random() < 0.35:
        return rng.choice(_ATOMS)
    left, right = _expr(rng, depth + 1), _expr(rng, depth + 1)
    out = left + rng.choice(_OPS) + right
    return f"({out})" if rng.random() < 0.3 else out


def _value(rng: random.Random, key: str):
    r = rng.random()
    if r < 0.08:
        return rng.choice([None, 3, 2.5, True, [], {}, ["{A}"]])
    if key in ("clean", "corrupt"):
        return rng.choice(_TEXTS) + rng.choice(["", " is", " {B}", " {OP}"])
    if key == "op":
        return rng.choice([*answers.OPERATIONS, "custom", "modulo", "", "ADDITION"])
    if key == "op_word":
        return rng.choice(["plus", "", "{SPAN}", "{NOPE}", "{", "{N}"])
    if key == "answer":
        return _expr(rng)
    return rng.choice(["p", "q", "", "id-1"])


_VALID = [("{A} plus {B} is", "{A} nothing {B} is", ""), ("{A} {OP} {B} =", "{A} {S} {B} =", "+"),
          ("Q: What is {A} {OP} {B}? A:", "Q: What is {A} {N} {B}? A:", "plus")]


def _pair(rng: random.Random):
    """A valid pair, then (mostly) one or two random mutations: a value replaced, a key dropped or added."""
    if rng.random() < 0.05:
        return rng.choice([1, "text", None, []])
    clean, corrupt, word = rng.choice(_VALID)
    row = {"clean": clean, "corrupt": corrupt, "op_word": word, "op": rng.choice(answers.OPERATIONS)}
    if rng.random() < 0.5:
        row["answer"] = rng.choice(SAFE)
    for _ in range(rng.choice([0, 1, 1, 2])):
        r, key = rng.random(), rng.choice(pairfile.PAIR_KEYS)
        if r < 0.7:
            row[key] = _value(rng, key)
        elif r < 0.85:
            row.pop(key, None)
        else:
            row[rng.choice(["answr", "extra", "Clean"])] = 1
    return row


def test_fuzz_random_pair_files_are_accepted_or_refused_quickly(tok, tmp_path):
    """Protects: 300 seeded random pair files (random keys, values, expressions with code in them, broken
    JSON) through the loader and pair drawing: each is accepted or refused with ValueError within seconds —
    no other exception, no hang; jsonschema agrees with the loader's schema verdict."""
    jsonschema = pytest.importorskip("jsonschema")
    ref = jsonschema.Draft202012Validator(pairfile.PAIR_FILE_SCHEMA)
    rng = random.Random(17)
    outcomes = {"accepted": 0, "refused": 0}
    for case in range(300):
        rows = [_pair(rng) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        style = rng.random()
        if style < 0.7:
            text = json.dumps(rows)
        elif style < 0.9:
            text = "\n".join(json.dumps(r) for r in rows)
        else:
            text = json.dumps(rows)[: rng.randint(0, 40)]                 # truncated file
        f = _write(tmp_path, text, f"case{case}.json")
        t0 = time.perf_counter()
        try:
            with time_limit(10):
                tpls = load_template_pairs(f)
                make_pairs(tok, tpls, n=2, seed=case, draw=Draw("first", 0, 1))
            outcomes["accepted"] += 1
            assert ref.is_valid(json.loads(text) if text.lstrip().startswith("[") else rows), text
        except ValueError:
            outcomes["refused"] += 1
        assert time.perf_counter() - t0 < 5, text
    assert outcomes["accepted"] >= 10 and outcomes["refused"] >= 100, outcomes
