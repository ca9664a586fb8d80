"""Unit tests of ``arithmech/report/charts/pipeline.py``: Fig. 1 on the introduction's first screen."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from arithmech.claims.evidence import Context
from arithmech.report.build import generate
from arithmech.report.charts import pipeline
from arithmech.report.views import findings

REPO = Path(__file__).resolve().parents[4]


def _book(tmp_path: Path, identify: str = "Identify: which heads do the arithmetic?") -> Path:
    b = tmp_path / "book"
    b.mkdir()
    for ch, title in (("identify", identify), ("analyze", "Analyze: what they read"), ("finetune", "Fine-tune: tune them")):
        (b / f"{ch}.md").write_text(f"---\nkernelspec: x\n---\n\n# {title}\n\ntext\n")
    return b


def test_stages_are_the_chapters_named_by_their_titles(tmp_path):
    """Protects "the chapter names as the stages": each stage's name and question are read from its chapter's
    title line (a renamed chapter renames its stage), in the paper's order, and each box links to its chapter."""
    _book(tmp_path, identify="Find: where it happens")
    st = generate.pipeline_stages(tmp_path)
    assert [(s.chapter, s.name, s.question) for s in st] == [("identify", "Find", "where it happens"),
                                                           ("analyze", "Analyze", "what they read"),
                                                           ("finetune", "Fine-tune", "tune them")]
    svg = pipeline.pipeline_svg(st)
    root = ET.fromstring(svg)                                # well-formed: renders as is, no script, nothing fetched
    ns = "{http://www.w3.org/2000/svg}"
    assert [a.get("href") for a in root.iter(f"{ns}a")] == ["identify.html", "analyze.html", "finetune.html"]
    assert "Find" in svg and "http" not in svg.replace("http://www.w3.org/2000/svg", "")


def test_the_shipped_chapters_give_the_paper_s_three_stages():
    """Protects the figure against the real chapter sources: three stages, each named by its chapter, the markdown
    block one raw-HTML paragraph (no blank line, which would end MyST's HTML block and print the SVG as text)."""
    st = generate.pipeline_stages(REPO)
    md = pipeline.pipeline_markdown(st)
    assert [s.name for s in st] == ["Identify", "Analyze", "Fine-tune"]
    assert md.startswith("<figure") and md.endswith("</figure>") and "\n\n" not in md and "Fig. 1" in md


def test_findings_put_every_sentence_then_fig1_then_the_boxes(tmp_path, monkeypatch):
    """Protects the introduction's first screen: ``findings.md`` holds each model's answer sentence, then Fig. 1,
    then the findings boxes (the table under the figure), and Fig. 1 even when no model has results."""
    _book(tmp_path)
    monkeypatch.setattr(generate, "parameters_table", lambda root: "")
    monkeypatch.setattr(findings, "rules_page", lambda runs: "")
    monkeypatch.setattr(findings, "results_box", lambda ctx, name, label, part="all": f"{part} of {name}")
    generate.write_generated(tmp_path)
    text = (tmp_path / generate.FINDINGS).read_text()
    at = [text.index(s) for s in ("sentence of embedded", "sentence of smollm2-135m", "<figure", "box of embedded",
                                  "box of smollm2-135m")]
    assert at == sorted(at), text[:300]
    monkeypatch.setattr(findings, "results_box", lambda ctx, name, label, part="all": None)
    generate.write_generated(tmp_path)
    text = (tmp_path / generate.FINDINGS).read_text()
    assert "<figure" in text and generate.NO_RESULTS in text


def test_results_box_parts_split_the_sentence_from_the_box():
    """Protects ``results_box(part=...)``: the sentence part is the answer sentence alone, the box part everything
    else, and together they are the whole box (``part="all"``, what the other callers use)."""
    folder = REPO / "results"
    name = next((p.name for p in sorted(folder.iterdir()) if (p / "effects.csv").exists()), None) if folder.exists() else None
    if name is None:
        import pytest
        pytest.skip("no results folder with identify's files in this checkout")
    ctx = Context(folder / name)
    whole = findings.results_box(ctx, name, name)
    sentence = findings.results_box(ctx, name, name, part="sentence")
    box = findings.results_box(ctx, name, name, part="box")
    assert sentence.startswith(f"**{name}**") and ":::" not in sentence and box.startswith(":::{admonition}")
    assert whole == f"{sentence}\n\n{box}"
