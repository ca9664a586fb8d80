"""The book's typed prose states no finding: findings come from the claims table.

A finding typed into a markdown cell goes stale the moment a rerun changes the numbers, and the
issues found several that overstated the run. Typed prose may describe the method and quote the
paper; verdicts and "as in the paper" comparisons are generated (``arithmech.claims.rules``,
shown by ``arithmech.report.pages``). Generated blocks (between ``findings:start`` / ``findings:end``
markers) are exempt.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Phrases that state or compare a finding; each was once typed and wrong (issue #13).
TYPED_FINDING = [
    r"\bas in the paper\b",
    r"\bhardly any head\b",
    r"\bsame ranking\b",
    r"\bhelps more than tuning everything\b",
    r"\*\*(holds|does not hold|inconclusive)\*\*",      # a verdict in bold is the claims table's format
    r"held-out\s*(accuracy)?\s*(≥|>=)\s*99",
]
GENERATED = re.compile(r"<!-- findings:start -->.*?<!-- findings:end -->", re.S)


def _prose() -> list[tuple[str, str]]:
    out = []
    from arithmech.report.plan import is_notebook, read_notebook
    pages = sorted((REPO / "book").glob("*.md"))
    for p in [q for q in pages if is_notebook(q)]:                 # chapters: their markdown cells
        for i, c in enumerate(read_notebook(p).cells):
            if c.cell_type == "markdown":
                out.append((f"{p.name} cell {i}", c.source))
    for p in [*(q for q in pages if not is_notebook(q)), REPO / "README.md"]:
        out.append((p.name, GENERATED.sub("", p.read_text())))
    return out


@pytest.mark.parametrize("pattern", TYPED_FINDING)
def test_no_typed_findings_in_prose(pattern):
    """Protects: no markdown cell, book page or README paragraph types a finding (#13 item 5); findings
    reach the reader only through the claims table and the lines generated from it."""
    hits = [f"{where}: …{m.group(0)}…" for where, text in _prose()
            for m in re.finditer(pattern, text, flags=re.I)]
    assert not hits, "typed finding(s); generate them from arithmech.claims.rules instead:\n" + "\n".join(hits)


def test_the_lint_sees_a_typed_finding():
    """Protects the test above from passing vacuously: a planted typed verdict is found."""
    planted = "As in the paper, few heads pass: **holds**."
    assert all(re.search(p, planted, flags=re.I) for p in TYPED_FINDING[:1] + TYPED_FINDING[4:5])
    assert _prose(), "no prose found: the paths above are wrong"
