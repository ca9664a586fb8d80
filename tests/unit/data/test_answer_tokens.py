"""The answer-token table (arithmech.data.answer_tokens): counts per template and the file it is written to."""

from __future__ import annotations

import pandas as pd
import pytest

from arithmech.data import pairs as D
from arithmech.data.answer_tokens import answer_token_table, template_summary


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
