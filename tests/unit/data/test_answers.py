"""The input contract for declarative answers (arithmech.data.answers): an answer expression runs no
code and hangs nothing, and drawing operands for it is bounded and keeps the seeded stream."""

from __future__ import annotations

import builtins
import json
import random
import time

import pytest
from factories import GOOD, SAFE, time_limit
from factories import write_file as _write

from arithmech.data import answers, templates
from arithmech.data.draw import Draw
from arithmech.data.pairs import load_template_pairs, make_pairs

# ------------------------------------------------------------------------------ declarative answers


@pytest.mark.parametrize("expr", SAFE)
def test_answer_expression_equals_python_arithmetic(expr):
    """Protects: an allowed answer expression gives what Python's own arithmetic gives (reference: the
    trusted literal evaluated by Python in this test), for all 81 operand pairs; non-integers and negatives
    are "no answer"."""
    tree = answers.parse_answer(expr)
    for a in range(1, 10):
        for b in range(1, 10):
            ref = eval(expr, {}, {"A": a, "B": b})             # the test's own constant string
            want = int(ref) if float(ref).is_integer() and ref >= 0 else None
            assert answers.evaluate_answer(tree, a, b) == want, (expr, a, b)


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
        answers.parse_answer(expr)
    assert not mark.exists()


def test_huge_powers_are_no_answer_not_a_hang(tmp_path):
    """Protects: sizes are bounded: 9**9**9 and friends return "no answer" at once instead of computing
    a number with hundreds of millions of digits; a file whose answer is always that is refused at load."""
    t0 = time.perf_counter()
    for expr in ["9 ** 9 ** 9", "A ** (B ** 99)", "(A + 1) ** 64 ** 2", "10 ** 12 * 10 ** 12 * A",
                 "0.5 ** -2000", "(-8) ** 0.5", "A / (B - B)", "A % (B - B)", "0 ** -1"]:
        tree = answers.parse_answer(expr)
        assert all(answers.evaluate_answer(tree, a, b) is None for a in (1, 9) for b in (1, 9)), expr
    assert time.perf_counter() - t0 < 1.0
    with pytest.raises(ValueError, match="characters; at most 200"):
        answers.parse_answer("A + " * 60 + "B")
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
    t = templates.Template("mod", "modulo", "custom", GOOD["clean"], GOOD["corrupt"])
    with time_limit(5), pytest.raises(ValueError, match="unknown operation 'modulo'"):
        answers.draw_operands(t, random.Random(0), division=answers.PAIRS_DIVISION)


def test_unsatisfiable_answer_gives_up_after_bounded_draws(tok, tmp_path):
    """Protects: an answer that is never a non-negative integer ends drawing after MAX_DRAWS tries with a
    message naming the template and the answer (make_pairs too), and is refused at load."""
    t = templates.Template("neg", "custom", "custom", GOOD["clean"], GOOD["corrupt"], answer_expr="A - B - 100")
    t0 = time.perf_counter()
    with time_limit(10), pytest.raises(ValueError, match=r"'neg'.*10000 draws.*'A - B - 100'"):
        answers.draw_operands(t, random.Random(0), division=answers.PAIRS_DIVISION)
    with time_limit(10), pytest.raises(ValueError, match="'neg'"):
        make_pairs(tok, [t], n=2, seed=0, draw=Draw("first", 0, 1))
    assert time.perf_counter() - t0 < 5
    f = _write(tmp_path, json.dumps([{**GOOD, "answer": "A - B - 100"}]))
    with pytest.raises(ValueError, match="field 'answer'.*never a non-negative whole number"):
        load_template_pairs(f)


def test_drawing_keeps_the_seeded_operand_stream():
    """Protects: bounding the draws changed no sample: the operands equal those of the old unbounded loop
    (two randint(1, 9) per try, rejected until the operation's rule holds), reimplemented here — for division
    under "uniform-operands", the embedded model's training text's draw; every other operation under either."""
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
        t = templates.Template("x", op, "custom", GOOD["clean"], GOOD["corrupt"])
        r1, r2 = random.Random(11), random.Random(11)
        assert [answers.draw_operands(t, r1, division="uniform-operands") for _ in range(300)] == [old(op, r2) for _ in range(300)]
        if op != "division":
            r1, r2 = random.Random(11), random.Random(11)
            assert [answers.draw_operands(t, r1, division="uniform-quotient") for _ in range(300)] == [old(op, r2) for _ in range(300)]


def test_division_quotient_is_uniform():
    """Protects the division draw of the pairs: the quotient is uniform over 1..9 (chi-square over 9,000
    draws below the 0.999 quantile of chi2 with 8 degrees of freedom, 26.12; the old draw gave "1" 9 times in
    23), every draw is an exact quotient of operands in 1..9, each quotient's pairs are all drawn, the draw is
    seeded, and an unknown rule name is refused."""
    t = templates.Template("d", "division", "custom", GOOD["clean"], GOOD["corrupt"])
    rng = random.Random(3)
    draws = [answers.draw_operands(t, rng, division="uniform-quotient") for _ in range(9000)]
    assert all(1 <= a <= 9 and 1 <= b <= 9 and a == b * c for a, b, c in draws)
    counts = [sum(c == q for _, _, c in draws) for q in range(1, 10)]
    chi2 = sum((k - 1000) ** 2 / 1000 for k in counts)
    assert chi2 < 26.12, counts
    assert {(a, b) for a, b, c in draws if c == 1} == {(b, b) for b in range(1, 10)}
    assert {(a, b) for a, b, c in draws if c == 2} == {(2, 1), (4, 2), (6, 3), (8, 4)}
    old = [answers.draw_operands(t, rng, division="uniform-operands")[2] for _ in range(9000)]
    assert abs(old.count(1) / 9000 - 9 / 23) < 0.03                   # the draw it replaces, for contrast
    assert draws[:50] == [answers.draw_operands(t, r, division="uniform-quotient") for r in [random.Random(3)] for _ in range(50)]
    with pytest.raises(ValueError, match="division draw 'uniform'"):
        answers.draw_operands(t, random.Random(0), division="uniform")
