"""The exponentiation appendix's findings box (arithmech.report.views.exponentiation_page.Page.findings_lines)."""
from __future__ import annotations

from types import SimpleNamespace

from arithmech.report.views.exponentiation_page import Page


def _run(kept: int, heads: list[str]):
    return SimpleNamespace(info={"t": {"n_kept": kept}}, tasks={"t": []},
                           key_heads={"heads": [{"name": h} for h in heads]})


def test_the_box_names_no_key_heads_from_too_few_problems():
    """Protects the box from a finding on noise (a review found "key heads: head 2.0, head 3.3, head 0.3" in it from
    4 X_r prompts of 1 problem, the table's status "insufficient"): a template whose status is not "ok" gets its
    status and the heads past the threshold named as no more than that; an ok one names its key heads."""
    page = Page.__new__(Page)
    page.rows = [{"template": "pow-1", "status": "insufficient: 4 X_r from 1 problem < 20"},
                 {"template": "pow-2", "status": "ok"}]
    page.runs = {"pow-1": _run(4, ["2.0", "3.3"]), "pow-2": _run(40, ["1.1"])}
    one, two = page.findings_lines()
    assert one == ("template pow-1: 4 $X_r$ prompts; insufficient: 4 X_r from 1 problem < 20: too few to name key "
                   "heads (past the threshold on them: head 2.0, head 3.3)")
    assert two == "template pow-2: 40 $X_r$ prompts; key heads: head 1.1"
    page.runs = {}
    assert page.findings_lines() == ["No template had $X_r$ prompts: this model does not answer exponentiation."]
