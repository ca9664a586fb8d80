"""The sentence a page prints under a table or view of answer tokens (arithmech.report.views.pages.answer_token_sentence)
and its last line (the footer)."""
from __future__ import annotations

import pytest

from arithmech.core.inputs import ANSWER_TOKENS
from arithmech.report.build.chapters import Identify
from arithmech.report.views.pages import ANSWER_TOKEN_RULES, _footer, answer_token_sentence


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


def test_footer_names_the_model_once_and_every_other_parameter():
    """Protects a page's last line: the model it ran on is named once, in bold (the chapter's ``model_name`` is
    not repeated among the parameters), and every other parameter appears with the name ``--set`` takes."""
    line = _footer("embedded", Identify())
    assert "**embedded**" in line and "model_name=" not in line
    assert "`results='results'`" in line and "`stability_sizes=[64, 128, 256, 512]`" in line
