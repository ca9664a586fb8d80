"""The book's sources and pure helpers, no build: ``--set`` parsing, the offline HTML pieces
(arithmech.report.offline), the altair renderer, and the committed chapters' parameters cells."""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

from arithmech.report import book, offline

REPO = Path(__file__).resolve().parents[2]


def test_parse_sets_reads_yaml_values():
    """Protects: ``--set`` values are typed like YAML; ``chapter.key`` targets one chapter."""
    g, per = book.parse_sets(["n=8", "model=meta-llama/Llama-2-7b-hf", "identify.tasks=[addition, division]",
                              "x=0.5", "flag=true"])
    assert g == {"n": 8, "model": "meta-llama/Llama-2-7b-hf", "x": 0.5, "flag": True}
    assert per == {"identify": {"tasks": ["addition", "division"]}}


def test_external_references_finds_loads_not_links(tmp_path):
    """Protects: the self-containment check flags scripts, stylesheets, images, frames and CSS urls from
    http(s) or protocol-relative addresses, and lets plain links and local files pass."""
    (tmp_path / "a.html").write_text(
        '<a href="https://example.org/paper">paper</a><script src="_static/x.js"></script>'
        '<script src="https://cdn.example.org/require.js"></script><link rel="stylesheet" href="//fonts.example/css">'
        '<img src="http://example.org/i.png"><link rel="canonical" href="https://example.org/book/">'
        '<style>@import "https://example.org/s.css";</style>')
    (tmp_path / "s.css").write_text("body { background: url('https://example.org/bg.png') } .x { background: url(bg.png) }")
    bad = offline.external_references(tmp_path)
    assert len(bad) == 5, bad
    assert sum(b.startswith("a.html:") for b in bad) == 4 and sum(b.startswith("s.css:") for b in bad) == 1


def test_chart_html_roundtrips_and_cannot_close_its_script():
    """Protects: a chart's spec survives the inline script byte for byte, even data containing ``</script>``."""
    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v6.4.1.json", "mark": "text",
            "data": {"values": [{"t": "</script><script>alert(1)</script>"}]}}
    html = offline.chart_html(spec)
    assert html.count("</script>") == 1 and html.endswith("</script>")
    payload = re.search(r"vegaEmbed\(el, (\{.*\}), \{", html).group(1)
    assert json.loads(payload.replace("<\\/", "</")) == spec


def test_renderer_gives_jupyter_mimetype_and_book_html():
    """Protects: ``setup()`` makes altair emit the vega-lite JSON mimetype (Jupyter) and the offline HTML (book),
    and the result is a notebook output nbformat accepts."""
    import altair as alt
    import pandas as pd
    book.setup()
    chart = alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_bar().encode(x="x:Q")
    bundle = chart._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert data["application/vnd.vegalite.v6+json"]["mark"]["type"] == "bar"
    assert offline.CHART_CLASS in data["text/html"] and "vegaEmbed" in data["text/html"]
    out = nbformat.v4.new_output("display_data", data=data)
    nbformat.validate(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("", outputs=[out])]))
    assert alt.theme.active == "arithmech"


def _chapters() -> list[Path]:
    return book.toc_files(REPO)


def test_every_chapter_calls_setup_in_its_check_cell():
    """Protects: every chapter's second cell (after the parameters) calls arithmech.report.book.setup() and
    check_params: the theme, the offline charts and parameter checking are never forgotten."""
    for p in _chapters():
        if p.suffix != ".ipynb":
            continue
        nb = nbformat.read(REPO / p, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]
        assert "parameters" in code[0].metadata.get("tags", []), p
        assert "setup()" in code[1].source and "check_params(" in code[1].source, p


def test_papermill_parses_every_parameter_of_every_chapter():
    """Protects: every name assigned in a chapter's parameters cell is one papermill can override. papermill
    skips a line it cannot parse (e.g. a '=' inside the trailing comment) with only a warning; the
    parameter would then silently ignore ``-p`` and be missing from the introduction's table."""
    import ast

    import papermill as pm
    for p in _chapters():
        if p.suffix != ".ipynb":
            continue
        nb = nbformat.read(REPO / p, as_version=4)
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        assigned = [t.id for node in ast.parse(cell.source).body if isinstance(node, ast.Assign)
                    for t in node.targets if isinstance(t, ast.Name)]
        assert assigned and sorted(pm.inspect_notebook(str(REPO / p))) == sorted(assigned), p


def test_appendix_parameters_table_matches_notebooks(tmp_path):
    """Protects: the committed parameters appendix lists exactly the parameters the chapters declare."""
    text = (REPO / book.APPENDIX).read_text()
    assert book.parameters_table(REPO) in text, "run `python -m arithmech book --skip-execute` to refresh it"
