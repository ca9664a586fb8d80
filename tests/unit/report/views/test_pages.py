"""The sentence a page prints under a table or view of answer tokens (arithmech.report.views.pages.answer_token_sentence)
and its last line (the footer)."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[4]

import pytest

from arithmech.core.inputs import ANSWER_TOKENS
from arithmech.report.build.chapters import Identify
from arithmech.report.views.pages import ANSWER_TOKEN_RULES, _footer, answer_token_sentence


def test_answer_token_sentence_names_the_recorded_rule():
    """Protects the pages' one sentence on the answer token: every rule a step can record has a
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


def test_footer_names_the_model_once_and_every_other_parameter():
    """Protects a page's last line: the model it ran on is named once, in bold (the chapter's ``model_name`` is
    not repeated among the parameters), and every other parameter appears with the name ``--set`` takes."""
    line = _footer("embedded", Identify())
    assert "**embedded**" in line and "model_name=" not in line
    assert "`results='results'`" in line and "`stability_sizes=[64, 128, 256, 512]`" in line


def test_findings_box_leads_with_the_model_that_can_test_the_claims(tmp_path):
    """Protects a chapter's first box: SmolLM2's lines (decided on its shipped files) come first under its name, the
    build's model's follow, labelled as checks of the machinery; with no shipped results, or on SmolLM2 itself, the
    box is the page's own lines only."""
    from arithmech.report.views import pages

    md = pages.findings_markdown(["toy a"], "embedded", ["real b", "real c"])
    assert md.index("**SmolLM2-135M**") < md.index("* real b") < md.index("* real c") < md.index("**embedded**")
    assert md.index("**embedded**") < md.index("* toy a")
    assert pages.findings_markdown(["toy a"], "embedded", []) == "* toy a"
    assert pages.findings_markdown(["x"], "smollm2-135m", ["y"]) == "* x"
    from arithmech.claims.evidence import Context
    assert pages.shipped_lines(Context(tmp_path / pages.REAL[0]), ["key-heads-exist"]) == []
    lines = pages.shipped_lines(Context(REPO / "results" / pages.REAL[0]), ["key-heads-exist", "answer-token-floor"])
    assert len(lines) == 2 and lines[0].startswith("Some heads pass the key-head threshold: **")
