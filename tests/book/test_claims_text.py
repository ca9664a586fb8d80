"""What the executed book says agrees with the claims table computed from the results it ran on.

After ``make book`` (CI executes the book before the tests) every chapter's "What this run found"
lines and the introduction's boxes were generated from :func:`arithmech.experiments.claims.claims`.
These tests recompute the table from ``results/<model>/`` now and compare: a chapter executed on other
results than those in the folder, or a line edited by hand, fails here. Marked ``slow``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from arithmech.core import results as R
from arithmech.experiments.claims import claims
from arithmech.report import pages

REPO = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^\* (?P<claim>.+?): \*\*(?P<verdict>holds|does not hold|inconclusive)\*\* \((?P<here>.*)\)$")

pytestmark = pytest.mark.slow


def _model(nb: dict) -> str | None:
    """The model a chapter ran on: the injected parameter, else the parameters cell's default."""
    model = None
    for c in nb["cells"]:
        tags = c.get("metadata", {}).get("tags", [])
        if c["cell_type"] == "code" and ("parameters" in tags or "injected-parameters" in tags):
            m = re.search(r'^model\s*=\s*"([^"]+)"', "".join(c["source"]), flags=re.M)
            model = m.group(1) if m else model
    return model


def _finding_lines(nb: dict) -> list[str]:
    out = []
    for c in nb["cells"]:
        for o in c.get("outputs", []):
            md = o.get("data", {}).get("application/papermill.record/text/markdown")
            if md and o.get("metadata", {}).get("scrapbook", {}).get("name") == "findings":
                out += "".join(md).splitlines()
    return out


def _chapters():
    for p in sorted((REPO / "book").glob("*.ipynb")):
        nb = json.loads(p.read_text())
        lines = [m for m in map(LINE.match, _finding_lines(nb)) if m]
        if lines:
            yield p.name, _model(nb), lines


def test_chapter_findings_match_the_claims_table():
    """Protects: each chapter's generated claim lines carry the verdict and numbers the claims table
    computes from the same results folder now (#13 item 5: text and table agree)."""
    checked = 0
    for name, model, lines in _chapters():
        folder = R.model_folder(REPO / "results", model)
        if not R.exists(folder, "effects.csv"):
            pytest.fail(f"{name} shows claims of {model} but {folder} has no results: execute the book first")
        table = claims(folder).set_index("claim")
        for m in lines:
            row = table.loc[m["claim"]]
            assert m["verdict"] == pages.verdict(row.holds), f"{name}: {m['claim']}"
            assert m["here"] == row.here, f"{name}: {m['claim']}"
            checked += 1
    assert checked, "no chapter shows a claim line: the findings boxes are not generated from the claims table"


def test_intro_boxes_match_the_claims_table():
    """Protects: the introduction's results boxes are the claims tables of the current results."""
    text = (REPO / "book" / "intro.md").read_text()
    block = text.split("<!-- findings:start -->")[1].split("<!-- findings:end -->")[0].strip()
    expected = pages.results_box(REPO, [("embedded", "The embedded model"), ("smollm2-135m", "SmolLM2-135M")])
    assert expected is not None, "no results: execute the book first"
    assert block == expected.strip()
