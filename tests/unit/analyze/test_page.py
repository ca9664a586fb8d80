"""The Analyze chapter's page (``arithmech/analyze/page.py``): the cells that show only what analyze's files hold take
its Result, never a folder, and quote the rule on the run's own baseline and heads."""
from __future__ import annotations

import inspect
from pathlib import Path

from arithmech.analyze import page
from arithmech.analyze.config import Analyze
from arithmech.analyze.result import AnalyzeResult, read
from arithmech.methods import attention

SMOL = Path(__file__).resolve().parents[3] / "results" / "smollm2-135m"


def test_the_file_cells_take_the_result_and_quote_its_rule():
    """Protects the page's one way to its files: the rule's sentences, the band chart and its table read the
    :class:`AnalyzeResult` they are given (the shipped SmolLM2 run: the rule's sentences for its baseline and the
    source of its heads, a skipped first line left out), and no page function takes a folder or a dict."""
    files = read(SMOL, Analyze(model_name="smollm2-135m", results=str(SMOL.parent)))
    lines = attention.verdict_lines(files.baseline, "operand", heads_from=files.summary["heads_from"])
    assert page.verdict_lines(files, "operand") == lines and len(lines) > 1
    assert page.verdicts(files, "operator", skip=1).data == page.verdicts(files, "operator").data.split("\n", 1)[1]
    assert page.verdict_lines(files, "operand")[0].startswith("Rule (`attention-roles`)")     # each role its claim
    assert page.verdict_lines(files, "operator")[0].startswith("Rule (`attention-reads-operator`)")
    assert page.band_chart(files).to_dict() and page.baseline_view(files).to_html()
    for name, fn in inspect.getmembers(page, inspect.isfunction):
        if fn.__module__ == page.__name__:
            hints = {p.annotation for p in inspect.signature(fn).parameters.values()}
            assert not hints & {"dict", "str | Path", "Path"}, name
    assert inspect.signature(page.band_chart).parameters["files"].annotation == AnalyzeResult.__name__
