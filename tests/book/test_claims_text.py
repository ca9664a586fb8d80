"""What the executed book says agrees with the claims tables it was built from.

``make book`` writes, from :func:`arithmech.claims.decide.claims` on ``results/<model>/``, the
introduction's claims table per model (``book/_generated/findings.md``, which ``book/intro.md`` includes)
and each chapter's "What this run found" lines (glued as ``findings`` in its executed copy,
``_build/executed/<name>.ipynb``). Both are build outputs, so these checks run on the built book
(``built_book``): every claim line a chapter shows must be the same claim, verdict and numbers as the
row of its model's table in the introduction — a chapter executed on other results than the box fails.
For every model whose ``results/<model>/`` exists, the table is also recomputed from the files and
compared. Marked ``slow``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from arithmech.accounts import page as accounts_page
from arithmech.accounts import result as accounts_result
from arithmech.accounts.config import Chapter
from arithmech.claims.evidence import Context
from arithmech.core import results
from arithmech.identify.result import Ranking
from arithmech.report.build import execute, generate
from arithmech.report.charts import pipeline
from arithmech.report.views import findings, pages
from arithmech.report.views.scope import MODEL, scope_box

REPO = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^\* (?P<claim>.+?): \*\*(?P<verdict>holds|does not hold|inconclusive|not testable)\*\* \((?P<here>.*)\)$")
MODELS = [("embedded", "The embedded model"), ("smollm2-135m", "SmolLM2-135M")]

pytestmark = pytest.mark.slow


def _model(nb: dict) -> str | None:
    """The model a chapter ran on: the injected parameter, else the parameters cell's default."""
    model = None
    for c in nb["cells"]:
        tags = c.get("metadata", {}).get("tags", [])
        if c["cell_type"] == "code" and ("parameters" in tags or "injected-parameters" in tags):
            m = re.search(r'^model_name\s*=\s*"([^"]+)"', "".join(c["source"]), flags=re.M)
            model = m.group(1) if m else model
    return model


def _finding_lines(nb: dict) -> list[tuple[str | None, re.Match]]:
    """``(model, line)`` of a chapter's findings box: lines under the real model's header (``**SmolLM2-135M**``,
    :func:`arithmech.report.views.pages.findings_markdown`) are that model's, the others (``None``) the page's."""
    out = []
    for c in nb["cells"]:
        for o in c.get("outputs", []):
            md = o.get("data", {}).get("application/papermill.record/text/markdown")
            if md and o.get("metadata", {}).get("scrapbook", {}).get("name") == "findings":
                section = None
                for line in "".join(md).splitlines():
                    if line.startswith("**"):
                        section = pages.REAL[0] if line.startswith(f"**{pages.REAL[1]}**") else None
                    m = LINE.match(line)
                    out += [(section, m)] if m else []
    return out


def _table_rows(md: str) -> list[tuple[str, str, str]]:
    """``(claim, this run, verdict)`` of each row of a generated claims table (``claim | paper | this run |
    verdict``, each claim a link to the rules page, verdicts in bold)."""
    out = []
    for line in md.splitlines():
        if line.startswith("| ") and not line.startswith(("| claim", "| ---")):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            out.append((re.sub(r"^\[(.*)\]\([^)]*\)$", r"\1", cells[0]), cells[-2], cells[-1].strip("*")))
    return out


def _answer_rows(nb: dict) -> list[tuple[str, str, str]]:
    """The claims table a chapter shows in its first box (glued as ``answer``: the SmolLM2 appendix)."""
    out = []
    for c in nb["cells"]:
        for o in c.get("outputs", []):
            md = o.get("data", {}).get("application/papermill.record/text/markdown")
            if md and o.get("metadata", {}).get("scrapbook", {}).get("name") == "answer":
                out += _table_rows("".join(md))
    return out


def _findings(root: Path) -> str:
    """The introduction's generated boxes (``book/_generated/findings.md``), included by ``book/intro.md``."""
    assert "```{include} _generated/findings.md" in (REPO / "book" / "intro.md").read_text()
    return (root / generate.FINDINGS).read_text()


def _intro_tables(root: Path) -> dict[str, dict[str, tuple[str, str]]]:
    """model folder name → claim → (here, verdict), parsed from the introduction's generated boxes (the paper's
    claims: ``claim | paper | this run | verdict``, each claim a link to the rules page) and from the rules
    page (every claim, the controls too: ``claim | paper | rule | this run | verdict``)."""
    out, current = {}, None
    rules = (root / generate.RULES).read_text()
    for line in (_findings(root) + "\n" + rules).splitlines():
        box = re.match(r":::\{admonition\} (.+?): \d+ of", line) or re.match(r"## (.+)$", line)
        if box:
            current = next((n for n, label in MODELS if label == box.group(1)), None)
            out.setdefault(current, {})
        elif current:
            for claim, here, verdict in _table_rows(line):
                out[current][claim] = (here, verdict)
    return out


def test_chapter_findings_match_the_intro_claims_table(built_book):
    """Protects: each chapter's generated claim lines, and the claims table a chapter shows in its first box (the
    SmolLM2 appendix), carry the same verdict and numbers as its model's row in the introduction's claims table
    (text and table agree, checked on the built book)."""
    root, _ = built_book
    tables, checked, answered = _intro_tables(root), 0, 0
    assert tables, "the introduction has no generated claims table: build the book (make book)"
    for p in sorted((root / execute.EXECUTED).glob("*.ipynb")):
        nb = json.loads(p.read_text())
        page_model = results.folder_name(_model(nb) or "embedded")
        for section, m in _finding_lines(nb):
            model = section or page_model
            assert model in tables, f"{p.name} shows claims of {model}, which the introduction has no table for"
            assert m["claim"] in tables[model], f"{p.name}: {m['claim']!r} is not a row of the claims table"
            assert (m["here"], m["verdict"]) == tables[model][m["claim"]], f"{p.name}: {m['claim']}"
            checked += 1
        model = page_model
        for claim, here, verdict in _answer_rows(nb):          # the table a first box shows (SmolLM2)
            assert model in tables and claim in tables[model], f"{p.name}'s first box: {claim!r} is not a claims row"
            assert (here, verdict) == tables[model][claim], f"{p.name}'s first box: {claim}"
            answered += 1
    assert checked >= 5, f"only {checked} claim lines in the chapters: findings are not generated from the claims table"
    assert answered >= 5, f"only {answered} rows in the first boxes' claims tables (the SmolLM2 appendix shows one)"


def test_intro_boxes_match_the_results_when_present(built_book):
    """Protects: for every model whose results folder exists (all after make book; on a clean clone the
    shipped SmolLM2 one), the introduction's box is exactly the claims table recomputed from it now."""
    root, _ = built_book
    present = [(n, label) for n, label in MODELS if results.exists(root / "results" / n, "effects.csv")]
    if not present:
        pytest.skip("no results/ here")
    block = _findings(root).split("-->", 1)[1].strip()
    runs = root / "results"
    box = lambda m, part: findings.results_box(Context(runs / m[0]), *m, part=part).strip()
    for model in present:                # the sentences come first, then Fig. 1, then the boxes
        for part in ("sentence", "box"):
            assert box(model, part) in block, f"the introduction's {part} for {model[0]} is stale"
    if len(present) == len(MODELS):
        sentences = [box(m, "sentence") for m in MODELS]
        accounts = lambda m: accounts_result.stored(Chapter(results=str(runs)).to_accounts(m[0]))
        boxes = [x for m in MODELS for x in [box(m, "box"), "\n".join(
                 accounts_page.findings_box(accounts(m), m[1], m[0] not in generate.NO_EVIDENCE)).strip()] if x]
        scope = [x for x in [scope_box(Ranking.made(runs, MODEL, "zero-shot"), Ranking.made(runs, MODEL))] if x]
        fig1 = pipeline.pipeline_markdown(generate.pipeline_stages(root))
        assert block == "\n\n".join([*scope, *sentences, fig1, *boxes])   # the scope box leads
