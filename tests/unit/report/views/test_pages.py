"""The sentence a page prints under a table or view of answer tokens (arithmech.report.views.pages.answer_token_sentence)."""
from __future__ import annotations

import pytest

from arithmech.core.inputs import ANSWER_TOKENS
from arithmech.report.views.pages import ANSWER_TOKEN_RULES, answer_token_sentence


def test_answer_token_sentence_names_the_recorded_rule():
    """Protects the pages' one sentence on the answer token (#22 item 7): every rule a step can record has a
    description, the sentence names the rule it is given and says whether it is identify's (the files' rule
    when given, else identify's default), and an unknown rule is refused rather than described wrongly."""
    assert set(ANSWER_TOKEN_RULES) == set(ANSWER_TOKENS)
    for rule in ANSWER_TOKENS:
        s = answer_token_sentence(rule)
        assert s.startswith(f'Scored under `answer_token = "{rule}"`: ') and s.count(". ") == 0
    assert answer_token_sentence("last-digit").endswith("; identify's default rule.")
    assert answer_token_sentence("first").endswith("; identify's default is `last-digit`.")
    assert answer_token_sentence("first", "first").endswith("; the rule identify's files here were measured with.")
    assert answer_token_sentence("last-digit", "first").endswith("; identify's files here were measured with `first`.")
    with pytest.raises(ValueError, match="answer token 'last'"):
        answer_token_sentence("last")


def test_flags_read_as_words_in_every_table():
    """Protects the tables a reader sees (issue #27: True/False/None in verdict columns): a column of
    True/False/None reads holds / does not hold / inconclusive when it is a verdict ("holds", "verdict"), yes / no
    / — otherwise, numpy's booleans too, in plain frames (table_html) and in tables a chapter styles itself
    (styler_html, its own formats kept and its object unchanged); other columns are left alone."""
    import re

    import numpy as np
    import pandas as pd

    from arithmech.report.views import pages as P
    df = pd.DataFrame({"claim": ["a", "b", "c"], "holds": [True, False, None], "interior": [np.True_, False, True],
                       "share": [0.5, 1.0, None], "note": ["True story", "x", "y"]})
    assert list(P.readable(df).holds) == ["holds", "does not hold", "inconclusive"]
    assert list(P.readable(df).interior) == ["yes", "no", "yes"] and list(P.readable(df).note) == list(df.note)
    styled = df.style.format({"share": "{:.1%}"}, na_rep="—").hide(axis="index")
    before = styled.to_html()
    for html in (P.table_html(df), P.styler_html(styled)):
        cells = [c.strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", html, flags=re.S)]
        assert not {"True", "False", "None", "nan"} & set(cells), cells
        assert {"does not hold", "inconclusive", "yes", "no", "True story"} <= set(cells), cells
    assert "50.0%" in P.styler_html(styled) and styled.to_html() == before


def test_the_answer_sentence_and_findings_table_follow_the_verdicts():
    """Protects issue #27 item 1: the introduction's sentence per model is computed from the verdicts of the
    paper's claims (controls apart), names the claims under each verdict, and its summary word follows them;
    the compact table has one row per claim with its verdict and a link to the rules page."""
    import pandas as pd

    from arithmech.report.views import pages
    c = pd.DataFrame({"id": ["a", "b", "c", "d"], "claim": ["Heads exist", "MLPs act late", "Few heads", "Floor (control)"],
                      "paper (LLaMA2-7B)": ["x"] * 4, "rule": ["r"] * 4, "here": ["h"] * 4,
                      "holds": [True, None, False, True]})
    s = pages.answer_sentence("Model", c)
    assert s.startswith("**Model**: 1 of the paper's 3 claims hold; 1 do not (few heads); 1 are undecided")
    assert "MLPs act late" not in s and "holds only in part" in s and "Floor" not in s
    assert pages.is_control(pd.DataFrame({"claim": ["X (beyond the paper: a control)", "Y (control)", "Z"]})).tolist() \
        == [True, True, False]
    assert "the paper's picture holds." in pages.answer_sentence("M", c.assign(holds=True))
    assert "does not appear" in pages.answer_sentence("M", c.assign(holds=False))
    t = pages.findings_table(c[~pages.is_control(c)])
    assert t.count("\n") == 4 and t.count(f"]({pages.RULES_PAGE})") == 3 and "**inconclusive**" in t
