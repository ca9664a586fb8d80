"""How a table reads in the book (arithmech.report.views.table_display): flags as words, numbers rounded."""
from __future__ import annotations


def test_flags_read_as_words_in_every_table():
    """Protects the tables a reader sees (no True/False/None in verdict columns): a column of
    True/False/None reads holds / does not hold / inconclusive when it is a verdict ("holds", "verdict"), yes / no
    / — otherwise, numpy's booleans too, in plain frames (table_html) and in tables a chapter styles itself
    (styler_html, its own formats kept and its object unchanged); other columns are left alone."""
    import re

    import numpy as np
    import pandas as pd

    from arithmech.report.views import table_display
    df = pd.DataFrame({"claim": ["a", "b", "c"], "holds": [True, False, None], "interior": [np.True_, False, True],
                       "share": [0.5, 1.0, None], "note": ["True story", "x", "y"]})
    assert list(table_display.readable(df).holds) == ["holds", "does not hold", "inconclusive"]
    assert list(table_display.readable(df).interior) == ["yes", "no", "yes"] and list(table_display.readable(df).note) == list(df.note)
    styled = df.style.format({"share": "{:.1%}"}, na_rep="—").hide(axis="index")
    before = styled.to_html()
    for html in (table_display.table_html(df), table_display.styler_html(styled)):
        cells = [c.strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", html, flags=re.S)]
        assert not {"True", "False", "None", "nan"} & set(cells), cells
        assert {"does not hold", "inconclusive", "yes", "no", "True story"} <= set(cells), cells
    assert "50.0%" in table_display.styler_html(styled) and styled.to_html() == before


def test_a_claim_ruled_out_here_reads_not_testable_in_every_row_that_shows_it():
    """Protects the *not testable* verdict (a hostile reading: the toy's findings box printed "**inconclusive** (not
    testable: ...)"): an undecided claim whose account says the test is ruled out reads *not testable* in the
    chapter's lines, the rules table, the findings table and the controls table; an undecided claim without that
    account stays *inconclusive*, and a decided one keeps its verdict whatever its account says."""
    import pandas as pd

    from arithmech.report.views import findings
    from arithmech.report.views.pages import claim_lines
    from arithmech.report.views.table_display import claim_verdict
    why = "not testable: full SFT does not learn the skill either (best validation math accuracy 3.0%)"
    assert claim_verdict(None, why) == "not testable" and claim_verdict(float("nan"), why) == "not testable"
    assert claim_verdict(None, "intervals that do not decide") == "inconclusive"
    assert claim_verdict(True, why) == "holds"
    c = pd.DataFrame({"id": ["precise-matches-full", "selection-matters"],
                      "claim": ["precise matches full", "the selection matters (control)"],
                      "paper (LLaMA2-7B)": ["-", "-"], "rule": ["r", "r"], "here": [why, "open"], "holds": [None, None]})
    assert claim_lines(c, ["precise-matches-full", "selection-matters"]) == [
        f"precise matches full: **not testable** ({why})",
        "the selection matters (control): **inconclusive** (open)"]
    assert f"| {why} | **not testable** |" in findings.claims_table(c)
    assert f"| {why} | **not testable** |" in findings.findings_table(c)
    assert "| open | **inconclusive** |" in findings.controls_table(c)
    assert "| not testable: x | **not testable** |" in findings.controls_table(c.assign(here=[why, "not testable: x"]))
