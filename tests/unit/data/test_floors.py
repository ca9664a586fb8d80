"""The floor over distinct problems (arithmech.data.floors) against a brute force written here."""
from __future__ import annotations

from collections import Counter

import pytest

from arithmech.data.answer_tokens import conditioned_floor
from arithmech.data.floors import population, problem_floor
from arithmech.data.pairs import Sample


def _sample(op, a, b, template="t"):
    c = {"addition": a + b, "multiplication": a * b}[op]
    t = str(c)
    return Sample("p", "q", t[-1], t, a, b, op, template, "equation", answer_token="last-digit", carried=t[:-1])


def _brute(samples):
    """The floor written from its definition: every (A, B) in 1..9 once, equally likely; for each grouping the
    group's most frequent last digit (ties: smallest text); counted over the 81 problems, X_r's distinct
    problems and its prompts; the highest."""
    op = samples[0].op
    f = {"addition": lambda a, b: a + b, "multiplication": lambda a, b: a * b}[op]
    tok = lambda a, b: (str(f(a, b))[-1], str(f(a, b))[:-1])
    pop = [(a, b) for a in range(1, 10) for b in range(1, 10)]
    best = 0.0
    for key in (lambda a, b: tok(a, b)[1], lambda a, b: (tok(a, b)[1], a), lambda a, b: (tok(a, b)[1], b)):
        groups = {}
        for a, b in pop:
            groups.setdefault(key(a, b), Counter())[tok(a, b)[0]] += 1
        guess = lambda a, b: min(groups[key(a, b)].items(), key=lambda kv: (-kv[1], kv[0]))[0]  # noqa: B023 (used at once)
        right = lambda a, b: guess(a, b) == tok(a, b)[0]  # noqa: B023 (used at once)
        dist = {(s.a, s.b) for s in samples}
        best = max(best, sum(right(*p) for p in pop) / len(pop), sum(right(*p) for p in dist) / len(dist),
                   sum(right(s.a, s.b) for s in samples) / len(samples))
    return best


def test_copies_of_one_problem_do_not_vote_for_its_answer():
    """Protects the control from duplication (science review §2.2): the same sums copied over templates made the
    old leave-one-prompt-out floor 100 % (each copy guessed from its copies); over distinct problems the floor is
    the draw population's guess, far below half, and equal to a brute force over the 81 problems."""
    kept = [_sample("addition", a, b, f"t{i}") for a, b in [(1, 2), (2, 5), (3, 3), (4, 4), (6, 7), (8, 9)]
            for i in range(5)]
    old = conditioned_floor(kept)["accuracy"]
    new = problem_floor(kept)
    assert old == 1.0                                   # version 1: every prompt guessed from its own copies
    assert new["accuracy"] == pytest.approx(_brute(kept)) and new["accuracy"] < 0.5
    assert new["problems"] == 6 and new["n"] == 30


def test_an_answer_pinned_by_one_operand_is_a_leak():
    """Protects the real leak the floor must keep: "7 times B = 5|" admits only B = 8, so products read from one
    operand and the tens digit are guessable (the population's guess is right for most products), equal to the
    brute force; the leave-one-problem-out bound cannot see it (it is printed, never deciding)."""
    kept = [_sample("multiplication", a, b) for a in range(2, 10) for b in range(2, 10)]
    f = problem_floor(kept)
    assert f["accuracy"] == pytest.approx(_brute(kept)) and f["accuracy"] >= 0.5
    assert max(max(t.values()) for t in f["loo"].values()) < f["accuracy"]


def test_population_weights_each_problem_once_by_its_draw():
    """Protects the draw population: addition's 81 problems equally likely whatever the copies kept, and division
    uniform over quotients (the nine pairs A = B share quotient 1, so together weigh 1/9)."""
    w, tok = population([_sample("addition", 1, 2)] * 7)
    assert len(w) == 81 and sum(w.values()) == pytest.approx(1) and len(set(round(v, 12) for v in w.values())) == 1
    assert tok[("addition", 9, 9)] == ("8", "1")
    d = Sample("p", "q", "1", "1", 3, 3, "division", "t", "equation", answer_token="first")
    w, _ = population([d])
    q1 = [p for p in w if p[1] == p[2]]
    assert sum(w[p] for p in q1) == pytest.approx(1 / 9) and len(q1) == 9


def test_output_heuristics_sees_a_model_that_ignores_an_operand():
    """Protects the heuristics test on the model's outputs: a "model" that writes the last digit of 2·A (it
    ignores B) on every drawn sum is caught — from A and the carried digit its outputs are guessed, from other
    problems only, far more often than the right answers are — and equals a brute force written here; a model
    that computes the sum is guessed no better than the answers."""
    from arithmech.data.floors import output_heuristics
    drawn = [_sample("addition", a, b, f"t{i}") for a in range(1, 10) for b in range(1, 10) for i in range(2)]
    lazy = [str(2 * s.a)[-1] for s in drawn]
    h = output_heuristics(drawn, lazy)

    def brute(values, field):
        right = 0
        for i, s in enumerate(drawn):
            same = [values[j] for j, t in enumerate(drawn) if field(t) == field(s) and (t.a, t.b) != (s.a, s.b)]
            if not same:
                same = [values[j] for j, t in enumerate(drawn) if t.carried == s.carried and (t.a, t.b) != (s.a, s.b)]
            c = Counter(same)
            right += min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] == values[i]
        return right / len(drawn)
    by_a = lambda s: (s.op, s.carried, s.a)
    assert h["output"]["op, carried, a"] == pytest.approx(brute(lazy, by_a))
    assert h["answer"]["op, carried, a"] == pytest.approx(brute([s.answer for s in drawn], by_a))
    assert h["output"]["op, carried, a"] >= 0.9 > 0.3 > h["answer"]["op, carried, a"]
    honest = output_heuristics(drawn, [s.answer for s in drawn])
    assert honest["output"] == honest["answer"] and honest["accuracy"] == 1.0


def test_each_reading_has_the_effective_number_of_the_problems_it_weighs():
    """Protects the control's version 4 (B2): the prompts count weighs each problem by its copies, so its trials are
    Kish's (Σc)² / Σc² (here 4 problems kept 10, 10, 1 and 1 times: 22² / 202 = 2.40), not the 4 problems; the
    problems count weighs each once (4); the population weighs the 81 problems alike (81). Equal copies change
    nothing: 4 problems kept 3 times each are 4 effective problems."""
    from arithmech.data.floors import effective_trials, kish
    kept = [_sample("addition", a, 1, f"t{i}") for a, c in ((1, 10), (2, 10), (3, 1), (4, 1)) for i in range(c)]
    n = effective_trials(kept)
    assert n["prompts"] == pytest.approx(22 ** 2 / 202) and n["problems"] == 4 and n["population"] == pytest.approx(81)
    assert problem_floor(kept)["n_eff"] == n
    same = [_sample("addition", a, 1, f"t{i}") for a in range(1, 5) for i in range(3)]
    assert effective_trials(same)["prompts"] == pytest.approx(4) and kish([0.5, 0.5, 0, 0]) == pytest.approx(2)


def test_a_two_digit_twin_draws_its_population_from_ten_to_ninety_nine():
    """Protects the floor of a knockout drawn on two-digit twins: their population is every (A, B) in 10..99, each
    once, and the floor equals a brute force over those 8,100 problems (the last digit is not guessable from the
    leading digits and one operand, so it stays far below half)."""
    kept = [_sample("addition", a, b, "add-1-2d") for a, b in [(12, 34), (56, 78), (90, 19), (45, 45)]]
    w, tok = population(kept)
    assert len(w) == 90 * 90 and min(p[1] for p in w) == 10 and max(p[2] for p in w) == 99
    assert tok[("addition", 56, 78)] == ("4", "13")
    pop = [(a, b) for a in range(10, 100) for b in range(10, 100)]
    best = 0.0
    for key in (lambda a, b: str(a + b)[:-1], lambda a, b: (str(a + b)[:-1], a), lambda a, b: (str(a + b)[:-1], b)):
        groups = {}
        for a, b in pop:
            groups.setdefault(key(a, b), Counter())[str(a + b)[-1]] += 1
        guess = {k: min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for k, c in groups.items()}
        right = lambda a, b: guess[key(a, b)] == str(a + b)[-1]  # noqa: B023 (used at once)
        dist = {(s.a, s.b) for s in kept}
        best = max(best, sum(right(*p) for p in pop) / len(pop), sum(right(*p) for p in dist) / len(dist),
                   sum(right(s.a, s.b) for s in kept) / len(kept))
    assert problem_floor(kept)["accuracy"] == pytest.approx(best) and best < 0.5
