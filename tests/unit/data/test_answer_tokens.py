"""The answer-token table (arithmech.data.answer_tokens): counts per template and the file it is written to."""

from __future__ import annotations

import random
from collections import Counter

import pandas as pd
import pytest

from arithmech.data import pairs
from arithmech.data.answer_tokens import FLOOR_GROUPS, answer_token_table, conditioned_floor, template_summary


def test_answer_token_table_counts():
    """Protects answer_tokens.csv against a hand count: per-template and "all" rows, X_r = answer token right
    *and* whole answer right (a token-right prompt with a wrong whole answer is neither checked nor kept), the
    most frequent answer token among kept prompts (ties broken by text), its share (the floor), pass rates and
    accuracies."""
    mk = lambda tid, ans: pairs.Sample("p", "q", ans, ans, 1, 1, "addition", tid, "equation", answer_token="first")
    samples = [mk("t1", "1"), mk("t1", "1"), mk("t1", "2"), mk("t1", "3"), mk("t2", "5"), mk("t2", "4"), mk("t2", "4")]
    correct = [True, True, True, False, True, True, True]
    exact = [True, False, True, False, True, True, False]
    passed = [True, None, False, None, True, True, None]
    info = {"addition": {"answer_token": "last-digit", "templates": template_summary(samples, correct, exact, passed)},
            "other": {"answer_token": "first", "templates": template_summary(samples[:2], correct[:2], exact[:2],
                                                                            passed[:2])}}
    t = answer_token_table(info).set_index(["task", "template"])
    r = t.loc[("addition", "t1")]
    assert (r.n_drawn, r.correct, r.exact, r.exact_correct, r.xc_checked, r.xc_passed, r.n) == (4, 3, 2, 2, 2, 1, 1)
    assert r.top_token == "1" and r.top_share == 1.0 and r.xc_pass_rate == pytest.approx(1 / 2)
    r = t.loc[("addition", "t2")]
    assert (r.exact_correct, r.n, r.top_token, r.top_share) == (2, 2, "4", 0.5)         # "4" < "5"
    r = t.loc[("addition", "all")]
    assert (r.n, r.top_token, r.top_share, r.accuracy, r.exact_match) == (3, "1", 1 / 3, 6 / 7, 4 / 7)
    r = t.loc[("all", "all")]
    assert (r.n, r.top_token, r.top_share, r.answer_token) == (4, "1", 2 / 4, "first/last-digit")
    tie = answer_token_table({"x": {"answer_token": "first", "templates": template_summary(samples[4:6], [True] * 2, [True] * 2, [True] * 2)}})
    assert tie.iloc[0].top_token == "4" and tie.iloc[0].top_share == 0.5            # "4" < "5"
    assert list(answer_token_table({}).columns)[:3] == ["task", "template", "answer_token"]


def test_an_info_without_template_counts_is_an_error_not_a_silent_gap():
    """Protects the end of the backward-compatibility branches: every prepare() info has its per-template
    counts with exact_correct (ready-made samples included), so an info without them (the sample lists of runs made
    before the table) is a KeyError, not a task silently left out of answer_tokens.csv, nor ``correct`` counted as
    ``exact_correct``."""
    with pytest.raises(KeyError, match="templates"):
        answer_token_table({"gsm8k": {"answer_token": "first", "n_kept": 3}})
    old = {"t1": {"n_drawn": 1, "correct": 1, "exact": 1, "xc_checked": 0, "xc_passed": 0, "answers": {"1": 1}}}
    with pytest.raises(KeyError, match="exact_correct"):
        answer_token_table({"addition": {"answer_token": "first", "templates": old}})


def test_answer_tokens_file_roundtrip(tmp_path):
    """Protects the results contract of answer_tokens.csv: written and read through core/results, the answer
    tokens stay text ("0" is not the number 0) and every declared column is there."""
    from arithmech.core import results
    mk = lambda ans: pairs.Sample("p", "q", ans, "1" + ans, 1, 9, "addition", "add-1", "equation", answer_token="first")
    samples = [mk("0"), mk("0"), mk("7")]
    info = {"addition": {"answer_token": "last-digit", "templates": template_summary(samples, [True] * 3, [True] * 3,
                                                                                   [True] * 3)}}
    effects = pd.DataFrame({"task": ["addition"], "layer": [0], "head": ["0"], "effect": [0.0], "effect_lo": [0.0],
                            "effect_hi": [0.0]})
    results.write_step(tmp_path, "identify", {"answer_tokens.csv": answer_token_table(info), "effects.csv": effects}, {})
    back = results.read(tmp_path, "answer_tokens.csv")
    assert list(back.top_token) == ["0", "0"] and back.top_share.tolist() == pytest.approx([2 / 3] * 2)


def _literal_floor(samples, fields):
    """The leave-one-out group-majority floor as a literal loop: for each prompt, the other prompts of its group
    (the coarser group when none), their most frequent answer (smallest text among equals)."""
    right = 0
    for i, s in enumerate(samples):
        for k in range(len(fields), -1, -1):
            others = [o.answer for j, o in enumerate(samples)
                      if j != i and all(getattr(o, f) == getattr(s, f) for f in fields[:k])]
            if others:
                c = Counter(others)
                right += min(c, key=lambda t: (-c[t], t)) == s.answer
                break
    return right


def test_conditioned_floor_is_leave_one_out():
    """Protects the conditioned floor against a literal loop: each grouping's count equals the leave-one-out
    majority of the other prompts of the group (coarser group for a group of one); the floor is the best
    grouping; a prompt alone in its group does not predict itself; multiplication's tens digit and operand A
    pin the last digit (8 × 7 = 5|6: the prompt carries "5" and A = 8, so "6")."""
    mk = lambda op, a, b, c: pairs.Sample("p", "q", str(c)[-1], str(c), a, b, op, "t", "equation", answer_token="last-digit", carried=str(c)[:-1])
    hand = [mk("multiplication", 8, 7, 56), mk("multiplication", 8, 7, 56), mk("multiplication", 8, 3, 24),
            mk("multiplication", 7, 8, 56), mk("addition", 3, 4, 7), mk("addition", 5, 2, 7), mk("addition", 1, 1, 2),
            mk("division", 8, 4, 2)]
    f = conditioned_floor(hand)
    want = {", ".join(g): _literal_floor(hand, g) for g in FLOOR_GROUPS}
    assert f["by_group"] == want
    assert f["correct"] == max(want.values()) and f["n"] == 8 and f["accuracy"] == f["correct"] / 8
    # by hand: the three 5|6 products are right under every grouping (alone under (mult, 5, 7) -> (mult, 5): "6");
    # 2|4, 8 / 4 and the sums are not (the sums' group (addition, "") ties "2" and "7" -> "2")
    assert want == {"op, carried": 3, "op, carried, a": 3, "op, carried, b": 3} and f["by"] == "op, carried"
    assert conditioned_floor(hand[:1])["correct"] == 0                   # alone: no other prompt to copy
    rng = random.Random(0)
    many = [mk(rng.choice(["addition", "multiplication"]), a, b, a * b if rng.random() < .5 else a + b)
            for a, b in ((rng.randint(1, 9), rng.randint(1, 9)) for _ in range(300))]
    got = conditioned_floor(many)
    assert got["by_group"] == {", ".join(g): _literal_floor(many, g) for g in FLOOR_GROUPS}
    assert got["correct"] == max(got["by_group"].values())
