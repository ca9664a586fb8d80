"""The input contract (issue 17): bad input costs no data, runs no code, hangs nothing.

Pair files (declarative answers, bounded drawing, schema), ``train-embedded --out``, and the fine-tune
runner's up-front checks. Everything here is fast: no SmolLM2, no training beyond one tiny step.
"""
from __future__ import annotations

import builtins
import json
import math
import random
import signal
import time
from contextlib import contextmanager

import pytest

from arithmech.data import answers as ANS
from arithmech.data import pairfile as PF
from arithmech.data import templates as T
from arithmech.data.pairs import load_template_pairs, make_pairs
from arithmech.embedded.train import build_tokenizer
from arithmech.steps.config import Finetune


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


@contextmanager
def time_limit(seconds: int):
    """Fail (instead of hanging the suite) when the block runs longer than ``seconds``."""
    def boom(*_):
        raise TimeoutError(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _write(tmp_path, text: str, name: str = "pairs.json"):
    f = tmp_path / name
    f.write_text(text)
    return f


GOOD = {"clean": "{A} plus {B} is", "corrupt": "{A} nothing {B} is"}


# ------------------------------------------------------------------------------ declarative answers
SAFE = ["A + B", "A - B", "A * B", "A / B", "A // B", "A % B", "A ** B", "-(A - B)", "(A + B) % 10",
        "2 * A + 3", "A ** 2 - B", "A / 2", "+A", "1.5 * A", "A ** -1", "(A * B) // (A + B)"]


@pytest.mark.parametrize("expr", SAFE)
def test_answer_expression_equals_python_arithmetic(expr):
    """Protects: an allowed answer expression gives what Python's own arithmetic gives (reference: the
    trusted literal evaluated by Python in this test), for all 81 operand pairs; non-integers and negatives
    are "no answer"."""
    tree = ANS.parse_answer(expr)
    for a in range(1, 10):
        for b in range(1, 10):
            ref = eval(expr, {}, {"A": a, "B": b})             # the test's own constant string
            want = int(ref) if float(ref).is_integer() and ref >= 0 else None
            assert ANS.evaluate_answer(tree, a, b) == want, (expr, a, b)


CRAFTED = ["__import__('os').system('touch {mark}')", "().__class__.__bases__[0].__subclasses__()",
           "A.__class__", "A.real", "(lambda: 1)()", "[x for x in (1, 2)]", "{{x for x in ()}}",
           "sum(i for i in (1,))", "open('{mark}', 'w')", "print(1)", "A if A else B", "A < B", "A and B",
           "not A", "~A", "A @ B", "A | B", "A << 70", "'abc'", "b'x'", "None", "True", "C", "os", "A[0]",
           "[]", "{{}}", "A, B", "f'{{A}}'", "...", "(x := 1)", "A; B", "import os", "exec('1')",
           "globals()", "__builtins__", "1j", "A ** B ** C", "getattr(A, 'x')"]


@pytest.mark.parametrize("payload", CRAFTED)
def test_crafted_answer_refused_without_running_anything(payload, tmp_path, monkeypatch):
    """Protects: a pair file cannot run code through its answer: calls, attribute access, lambdas,
    comprehensions, strings, other names... are refused at load with a ValueError naming the file, the
    pair and the field, and nothing runs (eval/exec are booby-trapped; the marker file never appears)."""
    mark = tmp_path / "pwned"
    expr = payload.format(mark=mark)

    def trap(*_a, **_k):
        raise AssertionError("eval/exec was called")
    monkeypatch.setattr(builtins, "eval", trap)
    monkeypatch.setattr(builtins, "exec", trap)
    f = _write(tmp_path, json.dumps([GOOD, {**GOOD, "answer": expr, "id": "evil"}]))
    with time_limit(5), pytest.raises(ValueError, match=r"pairs\.json: pair 1 \('evil'\), field 'answer'"):
        load_template_pairs(f)
    with pytest.raises(ValueError):
        ANS.parse_answer(expr)
    assert not mark.exists()


def test_huge_powers_are_no_answer_not_a_hang(tmp_path):
    """Protects: sizes are bounded: 9**9**9 and friends return "no answer" at once instead of computing
    a number with hundreds of millions of digits; a file whose answer is always that is refused at load."""
    t0 = time.perf_counter()
    for expr in ["9 ** 9 ** 9", "A ** (B ** 99)", "(A + 1) ** 64 ** 2", "10 ** 12 * 10 ** 12 * A",
                 "0.5 ** -2000", "(-8) ** 0.5", "A / (B - B)", "A % (B - B)", "0 ** -1"]:
        tree = ANS.parse_answer(expr)
        assert all(ANS.evaluate_answer(tree, a, b) is None for a in (1, 9) for b in (1, 9)), expr
    assert time.perf_counter() - t0 < 1.0
    with pytest.raises(ValueError, match="characters; at most 200"):
        ANS.parse_answer("A + " * 60 + "B")
    f = _write(tmp_path, json.dumps([{**GOOD, "answer": "9 ** 9 ** 9"}]))
    with time_limit(5), pytest.raises(ValueError, match="pair 0.*field 'answer'.*never a non-negative whole"):
        load_template_pairs(f)


# --------------------------------------------------------------------------------- bounded drawing
def test_unknown_operation_without_answer_is_refused_at_once(tmp_path):
    """Protects: an unknown operation with no answer no longer loops forever: the loader names file, pair
    and field; a Template built in code fails on its first draw, naming the operation."""
    f = _write(tmp_path, json.dumps([{**GOOD, "op": "modulo"}]))
    with time_limit(5), pytest.raises(ValueError, match=r"pairs\.json: pair 0.*field 'op'.*'modulo'"):
        load_template_pairs(f)
    t = T.Template("mod", "modulo", "custom", GOOD["clean"], GOOD["corrupt"])
    with time_limit(5), pytest.raises(ValueError, match="unknown operation 'modulo'"):
        ANS.draw_operands(t, random.Random(0))


def test_unsatisfiable_answer_gives_up_after_bounded_draws(tok, tmp_path):
    """Protects: an answer that is never a non-negative integer ends drawing after MAX_DRAWS tries with a
    message naming the template and the answer (make_pairs too), and is refused at load."""
    t = T.Template("neg", "custom", "custom", GOOD["clean"], GOOD["corrupt"], answer_expr="A - B - 100")
    t0 = time.perf_counter()
    with time_limit(10), pytest.raises(ValueError, match=r"'neg'.*10000 draws.*'A - B - 100'"):
        ANS.draw_operands(t, random.Random(0))
    with time_limit(10), pytest.raises(ValueError, match="'neg'"):
        make_pairs(tok, [t], n=2, seed=0)
    assert time.perf_counter() - t0 < 5
    f = _write(tmp_path, json.dumps([{**GOOD, "answer": "A - B - 100"}]))
    with pytest.raises(ValueError, match="field 'answer'.*never a non-negative whole number"):
        load_template_pairs(f)


def test_drawing_keeps_the_seeded_operand_stream():
    """Protects: bounding the draws changed no sample: the operands equal those of the old unbounded loop
    (two randint(1, 9) per try, rejected until the operation's rule holds), reimplemented here."""
    def old(op, rng):
        while True:
            a, b = rng.randint(1, 9), rng.randint(1, 9)
            if op == "subtraction" and a >= b:
                return a, b, a - b
            if op == "division" and a % b == 0:
                return a, b, a // b
            if op == "exponentiation" and b <= 3:
                return a, b, a ** b
            if op == "multiplication":
                return a, b, a * b
    for op in ("subtraction", "division", "exponentiation", "multiplication"):
        t = T.Template("x", op, "custom", GOOD["clean"], GOOD["corrupt"])
        r1, r2 = random.Random(11), random.Random(11)
        assert [ANS.draw_operands(t, r1) for _ in range(300)] == [old(op, r2) for _ in range(300)]


# ------------------------------------------------------------------------------------ pair schema
BAD_FILES = [
    ("[]", r"the file must hold at least 1"),
    ('"just text"', r"pair 0 must be a JSON object"),
    ("[1, 2]", r"pair 0 must be a JSON object, not number"),
    ('{"clean": "{A} + {B} ="}', r"pair 0, field 'corrupt' is required"),
    ('[{"clean": 5, "corrupt": "{A} x {B}"}]', r"pair 0, field 'clean' must be a JSON string, not number"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} =", "answr": "A+B"}]', r"field 'answr' is not a known key"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} {FOO} {B} ="}]', r"pair 0 \('pair-0'\), field 'corrupt'.*\{FOO\}"),
    ('[{"clean": "{A} + {B} = {C}", "corrupt": "{A} @ {B} ="}]', r"field 'clean'.*unknown field.*\{C\}"),
    ('[{"clean": "{B} + {B} =", "corrupt": "{A} @ {B} ="}]', r"field 'clean': needs an \{A\}"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} =", "op": "custom"}]', r"field 'answer'.*custom"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} =", "op_word": "{COLOR}"}]', r"field 'op_word'.*pool"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} =", "answer": ""}]', r"field 'answer' must not be empty"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} =", "id": "x"},'
     ' {"clean": "{A} - {B} =", "corrupt": "{A} @ {B} =", "id": "x"}]', r"pair 1, field 'id'.*'x'.*pair 0"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} ="}, {"clean": "{A} =", "corrupt": null}]',
     r"pair 1, field 'corrupt' must be a JSON string, not null"),
    ('[{"clean": "{A} + {B} =", ', r"not valid JSON at line 1"),
    ('{"clean": "a"}\nnot json\n', r"line 2 is not a JSON object"),
]


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
    with pytest.raises(ValueError, match="is not a file"):
        load_template_pairs(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_template_pairs(tmp_path / "missing.json")


def test_schema_checker_agrees_with_jsonschema():
    """Protects: PAIR_FILE_SCHEMA is a valid JSON Schema and our small checker accepts exactly what the
    reference validator (jsonschema, draft 2020-12) accepts, on hand-written and the BAD_FILES rows."""
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(PF.PAIR_FILE_SCHEMA)
    ref = jsonschema.Draft202012Validator(PF.PAIR_FILE_SCHEMA)
    cases = [[GOOD], [], [GOOD, {"clean": 1}], {"a": 1}, [{**GOOD, "op": "x"}], [{**GOOD, "answer": "A" * 300}],
             [{**GOOD, "op_word": ""}], [{**GOOD, "id": ""}], [True], [{**GOOD, "extra": 1}], "text", None]
    for text, _ in BAD_FILES:
        try:
            cases.append(json.loads(text))
        except json.JSONDecodeError:
            pass
    for rows in cases:
        assert ref.is_valid(rows) == (not PF.schema_problems(rows)), rows


def test_every_known_field_renders(tok):
    """Protects: FIELDS (what the schema check allows) are all filled in by the pair maker: a template that
    uses every one of them makes pairs without a KeyError."""
    clean = " ".join("{%s}" % f for f in sorted(T.FIELDS - {"A", "B", "OP"})) + " {A} {OP} {B} is"
    t = T.parse_pair(clean, clean.replace("{OP}", "{N}"), id="all-fields", op_word="plus")
    samples, _ = make_pairs(tok, [t], n=3, seed=0)
    assert len(samples) == 3 and all("{" not in s.clean for s in samples)


def test_documented_pair_file_example_loads(tok, tmp_path):
    """Protects: the pair-file example in the Data chapter is a valid file that loads and makes pairs whose
    answers follow the documented rules (A ** B with B <= 3; A * B % 10)."""
    import pathlib
    from arithmech.report.plan import read_notebook
    nb = read_notebook(pathlib.Path(__file__).parents[2] / "book" / "data.md")
    cells = [c.source for c in nb.cells if c.cell_type == "markdown"]
    (doc,) = [c for c in cells if "PAIR_FILE_SCHEMA" in c]
    example = doc.split("```json\n", 1)[1].split("```", 1)[0]
    tpls = load_template_pairs(_write(tmp_path, example))
    assert len(tpls) >= 2 and {t.op for t in tpls} >= {"custom"}
    samples, _ = make_pairs(tok, tpls, n=20, seed=0)
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
        return rng.choice([*ANS.OPERATIONS, "custom", "modulo", "", "ADDITION"])
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
    row = {"clean": clean, "corrupt": corrupt, "op_word": word, "op": rng.choice(ANS.OPERATIONS)}
    if rng.random() < 0.5:
        row["answer"] = rng.choice(SAFE)
    for _ in range(rng.choice([0, 1, 1, 2])):
        r, key = rng.random(), rng.choice(PF.PAIR_KEYS)
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
    ref = jsonschema.Draft202012Validator(PF.PAIR_FILE_SCHEMA)
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
                make_pairs(tok, tpls, n=2, seed=case)
            outcomes["accepted"] += 1
            assert ref.is_valid(json.loads(text) if text.lstrip().startswith("[") else rows), text
        except ValueError:
            outcomes["refused"] += 1
        assert time.perf_counter() - t0 < 5, text
    assert outcomes["accepted"] >= 10 and outcomes["refused"] >= 100, outcomes


# ---------------------------------------------------------------------------- train-embedded --out
TINY = dict(n_layers=1, n_heads=2, d_model=16, d_ff=32, max_len=64)


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_train_out_refuses_a_folder_it_did_not_write(tmp_path, monkeypatch):
    """Protects: `train-embedded --out DIR` no longer deletes DIR: a folder holding anything, a file, and the
    current folder (`--out .`) are refused before training starts, and every byte in them stays."""
    from arithmech.embedded import train as E
    out = tmp_path / "mine"
    (out / "sub").mkdir(parents=True)
    (out / "notes.txt").write_text("my thesis")
    (out / "sub" / "data.bin").write_bytes(b"\x00\x01")
    before = _snapshot(out)
    monkeypatch.setattr(E, "corpus", lambda *a, **k: pytest.fail("training started"))
    with pytest.raises(ValueError, match="already holds files.*--overwrite"):
        E.train(out, steps=1, batch_size=2, log_every=0, size=TINY, eval_per_template=1)
    assert _snapshot(out) == before
    with pytest.raises(ValueError, match="is a file"):
        E.check_train_out(out / "notes.txt", overwrite=True)
    with pytest.raises(ValueError, match="is a file"):
        E.check_train_out(out / "notes.txt" / "model", overwrite=True)
    monkeypatch.chdir(out)
    with pytest.raises(ValueError, match="already holds files"):
        E.check_train_out(".", overwrite=False)
    assert E.check_train_out(tmp_path / "new" / "model") == tmp_path / "new" / "model"
    (tmp_path / "empty").mkdir()
    assert E.check_train_out(tmp_path / "empty") == tmp_path / "empty"
    from arithmech.core.names import EMBEDDED_DIR
    assert E.check_train_out(None) == EMBEDDED_DIR          # the package's own folder: its files only


def test_train_overwrite_replaces_only_its_own_files(tmp_path):
    """Protects: with overwrite, training replaces the files it writes (a stale config.json) and leaves
    every other file as it was; no temporary folder is left beside the output."""
    from arithmech.embedded import train as E
    out = tmp_path / "model"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    (out / "config.json").write_text("stale")
    E.train(out, steps=1, batch_size=2, log_every=0, size=TINY, eval_per_template=1, overwrite=True)
    assert (out / "notes.txt").read_text() == "keep me"
    assert json.loads((out / "config.json").read_text())["model_type"] == "llama"
    assert {"model.safetensors", "tokenizer.json", "accuracy.json", "README.md"} <= {p.name for p in out.iterdir()}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


# ------------------------------------------------------------------------------ finetune up front
def _toy_results(tmp_path, n_layers=2, n_heads=4, effects_rows=None, key_heads=None):
    """A model folder holding only config.json (geometry) and a results folder with identify's files."""
    from transformers import LlamaConfig
    LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=n_layers,
                num_attention_heads=n_heads, num_key_value_heads=n_heads).save_pretrained(tmp_path / "toy")
    res = tmp_path / "res" / "toy"
    res.mkdir(parents=True)
    kh = key_heads if key_heads is not None else {"task": "all", "heads": [{"layer": 1, "head": 2}],
                                                  "mlps": [{"layer": 0}]}
    (res / "key_heads.json").write_text(json.dumps(kh) if not isinstance(kh, str) else kh)
    if effects_rows is None:
        effects_rows = [("all", l, str(h), -0.01 * (l * n_heads + h)) for l in range(n_layers) for h in range(n_heads)]
        effects_rows += [("all", l, "mlp", 0.1 * l) for l in range(n_layers)]
    lines = ["task,layer,head,effect,effect_lo,effect_hi"] + [f"{t},{l},{h},{e},{e},{e}" for t, l, h, e in effects_rows]
    (res / "effects.csv").write_text("\n".join(lines) + "\n")
    return dict(model_name=str(tmp_path / "toy"), results=str(tmp_path / "res"), benchmarks=["generic"], max_steps=2,
                batch_size=4, micro_batch_size=4, lr=1e-3, n_train=8)


@pytest.fixture
def no_model_load(monkeypatch):
    """run_finetune must fail before any model is loaded: loading (or evaluating) one fails the test."""
    from arithmech.steps import finetune
    def boom(*_a, **_k):
        raise AssertionError("a model was loaded before the arguments were checked")
    monkeypatch.setattr(finetune, "load_model", boom)


BAD_FINETUNE = [
    (dict(heads="top-0"), r"--heads top-0: K in top-K must be a whole number >= 1"),
    (dict(heads="top-x"), r"--heads top-x"),
    (dict(heads="1.2.3"), r"--heads '1.2.3': '1.2.3' is not layer.head"),
    (dict(heads="99.0"), r"--heads: head 99.0 is not in the model \(2 layers"),
    (dict(heads="0.4"), r"head 0.4 is not in the model"),
    (dict(heads="1.-2"), r"is not layer.head"),
    (dict(heads=""), r"--heads ''"),
    (dict(heads="top-99"), r"only 8 ranked heads"),      # the 8 heads of a 2 x 4 model, key head 1.2 first
    (dict(mlps=-1), r"--mlps -1 is below 0"),
    (dict(mlps=3), r"--mlps 3: only 2 ranked MLP layers"),
    (dict(batch_size=0), r"--batch-size 0"),
    (dict(batch_size=-4), r"--batch-size -4"),
    (dict(micro_batch_size=0), r"--micro-batch-size 0"),
    (dict(batch_size=6, micro_batch_size=4), r"--batch-size 6 must be a multiple of --micro-batch-size 4"),
    (dict(lr=0.0), r"--lr 0.0"),
    (dict(lr=float("nan")), r"--lr nan"),
    (dict(max_steps=0), r"--max-steps 0"),
    (dict(max_steps=-1, epochs=0), r"--epochs 0"),
    (dict(limit=0), r"--limit 0"),
    (dict(n_train=-5), r"--n-train -5"),
    (dict(threads=-1), r"--threads -1"),
    (dict(mode="partial"), r"--mode 'partial'"),
    (dict(kv_policy="some"), r"--kv-policy 'some'"),
    (dict(dtype="fp8"), r"--dtype 'fp8'"),
    (dict(benchmarks=["gsm9k"]), r"--benchmarks: unknown \['gsm9k'\]"),
    (dict(fsdp=True), r"--fsdp is for full SFT only"),
    (dict(device="tpu9"), r"--device 'tpu9'"),
]


@pytest.mark.parametrize("bad,match", BAD_FINETUNE, ids=[m for _, m in BAD_FINETUNE])
def test_finetune_bad_argument_refused_before_model_load(tmp_path, no_model_load, bad, match):
    """Protects: each bad fine-tune argument is one ValueError naming the value and what is allowed, raised
    before the base model is loaded or evaluated (load_model is booby-trapped)."""
    from arithmech.steps.finetune import run_finetune
    kw = {**_toy_results(tmp_path), "heads": "1.2", **bad}
    with time_limit(20), pytest.raises(ValueError, match=match):
        run_finetune(Finetune(**kw))


def test_finetune_missing_inputs_refused_before_model_load(tmp_path, no_model_load):
    """Protects: a missing --train-data file, a missing model folder, CUDA on a machine without it."""
    import torch
    from arithmech.steps.finetune import run_finetune
    kw = {**_toy_results(tmp_path), "heads": "1.2"}
    with pytest.raises(FileNotFoundError, match="--train-data 'nope.jsonl'"):
        run_finetune(Finetune(**{**kw, "train_data": "nope.jsonl"}))
    with pytest.raises((FileNotFoundError, OSError, ValueError)):
        run_finetune(Finetune(**{**kw, "model_name": str(tmp_path / "nothing.gguf")}))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            run_finetune(Finetune(**{**kw, "device": "cuda"}))


KEY_HEADS_BAD = [
    ("[1, 2]", "must be a JSON object"),
    ('{"heads": []}', "needs a 'task'"),
    ('{"task": "all", "heads": {"layer": 1}}', "'heads' must be a list"),
    ('{"task": "all", "heads": [{"layer": "1", "head": 2}]}', r"heads\[0\] must be an object with whole numbers"),
    ('{"task": "all", "heads": [{"layer": 1}]}', r"heads\[0\]"),
    ('{"task": "all", "heads": [{"layer": 7, "head": 0}]}', r"head 7.0 is not in the model"),
    ('{"task": "all", "heads": [], "mlps": [{"layer": 9}]}', r"MLP layer is beyond"),
    ('{"task": "all", "heads": [', "is not valid JSON"),
]


@pytest.mark.parametrize("text,match", KEY_HEADS_BAD)
def test_key_heads_of_the_wrong_shape_refused_before_model_load(tmp_path, no_model_load, text, match):
    """Protects: a key_heads.json of the wrong shape is a ValueError naming the file, not a KeyError deep
    inside the run (and not after the base evaluation)."""
    from arithmech.steps.finetune import run_finetune
    kw = {**_toy_results(tmp_path, key_heads=text), "heads": "top-2"}
    with time_limit(20), pytest.raises(ValueError, match=r"key_heads\.json.*" + match):
        run_finetune(Finetune(**kw))


def test_truncated_effects_csv_refused_and_full_one_ranks(tmp_path, no_model_load):
    """Protects: a truncated effects.csv (missing heads, a row cut mid-line) is refused, naming the file,
    instead of silently tuning other heads; a complete one gives key heads first, then the rest by effect
    (reference: sorted here by hand)."""
    from arithmech.steps.finetune import validate_finetune_args
    full = [("all", l, str(h), round(-0.01 * ((5 * (l * 4 + h)) % 8), 3)) for l in range(2) for h in range(4)]
    full += [("all", l, "mlp", 0.1 * l) for l in range(2)]
    kw = {**_toy_results(tmp_path, effects_rows=full), "heads": "top-4", "mlps": 1}
    spec = validate_finetune_args(Finetune(**kw))
    rest = sorted(((e, l, int(h)) for _, l, h, e in full if h != "mlp" and (l, int(h)) != (1, 2)))
    want = [(1, 2)] + [(l, h) for _, l, h in rest][:3]
    assert spec.heads == tuple(sorted(want)) and spec.mlps == (0,)
    csv = tmp_path / "res" / "toy" / "effects.csv"
    lines = csv.read_text().splitlines()
    for text in ["\n".join(lines[:6]) + "\n", "\n".join(lines[:-3] + [lines[-3][:6]]) + "\n"]:
        csv.write_text(text)
        with time_limit(20), pytest.raises(ValueError, match=r"effects\.csv.*truncated"):
            validate_finetune_args(Finetune(**kw))


# ------------------------------------------------------------------------ fuzz: finetune arguments
def test_fuzz_finetune_arguments_accepted_or_refused(tmp_path, no_model_load):
    """Protects: 200 seeded random combinations of fine-tune arguments: each validates to a HeadSpec inside
    the model (or None for full SFT) or is refused with ValueError/FileNotFoundError, within seconds."""
    from arithmech.steps.finetune import validate_finetune_args
    base = _toy_results(tmp_path)
    rng = random.Random(5)
    choices = dict(heads=["top-1", "top-3", "top-0", "top-99", "1.2", "0.0,1.3", "2.0", "1.2.3", "x", "", "top-"],
                   mlps=[0, 1, 2, 3, -1], batch_size=[4, 8, 0, -1, 6], micro_batch_size=[1, 2, 4, 0, 3],
                   lr=[1e-3, 0.0, -1.0, math.inf], max_steps=[-1, 1, 0, -2], epochs=[1.0, 0.0, -1.0],
                   mode=["precise", "full", "lora"], kv_policy=["any", "all", "none", "bad"],
                   limit=[None, 1, 0], benchmarks=[["generic"], ["toy"], ["paper"], ["nope"], []])
    ok = refused = 0
    for _ in range(200):
        kw = {**base, **{k: rng.choice(v) for k, v in choices.items() if rng.random() < 0.4}}
        t0 = time.perf_counter()
        try:
            spec = validate_finetune_args(Finetune(**kw))
            ok += 1
            assert (spec is None) == (kw.get("mode", "precise") == "full")
            assert spec is None or all(0 <= l < 2 and 0 <= h < 4 for l, h in spec.heads)
        except (ValueError, FileNotFoundError):
            refused += 1
        assert time.perf_counter() - t0 < 5
    assert ok >= 20 and refused >= 50, (ok, refused)
