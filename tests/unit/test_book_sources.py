"""The book's sources and pure helpers, no build: ``--set`` parsing, the offline HTML pieces
(arithmech.report.build.offline), the altair renderer, and the chapters' text sources (MyST-Markdown notebooks
without outputs, their parameters cells, the generated includes the pages pull in)."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import nbformat

from arithmech.report.build import book, generate, offline, plan

REPO = Path(__file__).resolve().parents[2]


def test_parse_sets_reads_yaml_values():
    """Protects: ``--set`` values are typed like YAML; ``chapter.key`` targets one chapter."""
    g, per = plan.parse_sets(["n=8", "model=meta-llama/Llama-2-7b-hf", "identify.tasks=[addition, division]",
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
    return plan.chapters(REPO)


def test_chapters_are_text_notebooks_of_the_toc():
    """Protects the layout the runner relies on: every executed chapter of _toc.yml is a MyST-Markdown notebook
    ``book/<name>.md`` (jupytext header, python3 kernel), and the hand-written pages are plain Markdown."""
    names = [p.stem for p in _chapters()]
    assert len(names) >= 10 and {"data", "identify", "analyze", "explorer", "beyond", "finetune"} <= set(names)
    for p in _chapters():
        assert p.suffix == ".md", p
        nb = plan.read_notebook(REPO / p)
        assert nb.metadata["kernelspec"]["name"] == "python3", p
    plain = [p.stem for p in plan.toc_files(REPO) if not plan.is_notebook(REPO / p)]
    assert {"intro", "appendix_models", "appendix_parameters", "references"} <= set(plain)


def _tracked(pattern: str) -> list[str] | None:
    r = subprocess.run(["git", "ls-files", "--", pattern], cwd=REPO, capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else None


def test_chapter_sources_hold_no_outputs():
    """Protects: chapter sources are text without outputs. No ``book/*.ipynb`` is tracked (executed copies live
    in _build/executed/), none lies in book/ at all, and every chapter source read as a notebook has no
    output and no execution count in any code cell (a source with outputs would make every build rewrite it)."""
    tracked = _tracked("book/*.ipynb")
    assert tracked in ([], None), f"tracked executed notebooks: {tracked}"
    found = sorted((REPO / "book").glob("*.ipynb"))
    sources = _chapters() + [p.relative_to(REPO) for p in found]
    for p in sources:
        nb = plan.read_notebook(REPO / p)
        for i, c in enumerate(nb.cells):
            if c.cell_type == "code":
                assert c.get("outputs", []) == [] and c.get("execution_count") is None, f"{p} cell {i}"
    assert found == [], f"notebooks in book/ (run the book; its executed copies go to _build/): {found}"


def test_the_output_check_sees_outputs(tmp_path):
    """Protects the check above from passing vacuously: a chapter ``.ipynb`` with an output and an execution
    count is read with both, and an ``.md`` notebook is recognised as a chapter while a plain page is not."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1", execution_count=1, outputs=[
        nbformat.v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=1)])])
    nbformat.write(nb, tmp_path / "x.ipynb")
    (c,) = plan.read_notebook(tmp_path / "x.ipynb").cells
    assert c.outputs and c.execution_count == 1
    (tmp_path / "page.md").write_text("# A page\n\n---\n\ntext\n")
    assert plan.is_notebook(REPO / "book" / "identify.md") and not plan.is_notebook(tmp_path / "page.md")


def test_every_chapter_calls_setup_in_its_check_cell():
    """Protects: every chapter's second cell (after the parameters) calls arithmech.report.build.book.setup() and
    builds the chapter's config (``chapters.check``): the theme, the offline charts and parameter checking are
    never forgotten."""
    for p in _chapters():
        nb = plan.read_notebook(REPO / p)
        code = [c for c in nb.cells if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]
        assert "parameters" in code[0].metadata.get("tags", []), p
        assert "setup()" in code[1].source and f'chapters.check("{p.stem}", globals())' in code[1].source, p


def test_papermill_parses_every_parameter_of_every_chapter():
    """Protects: every name assigned in a chapter's parameters cell is one papermill can override. papermill
    skips a line it cannot parse (e.g. a '=' inside the trailing comment) with only a warning; the
    parameter would then silently ignore ``-p`` and be missing from the introduction's table."""
    import ast
    for p in _chapters():
        nb = plan.read_notebook(REPO / p)
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        assigned = [t.id for node in ast.parse(cell.source).body if isinstance(node, ast.Assign)
                    for t in node.targets if isinstance(t, ast.Name)]
        assert assigned and sorted(plan.declared_parameters(REPO / p)) == sorted(assigned), p


def test_parameters_table_lists_every_chapters_parameters():
    """Protects the parameters appendix: the generated table has one block per chapter, in toc order, with one
    row per parameter its source declares (name, default, help)."""
    table = generate.parameters_table(REPO)
    blocks = re.findall(r"^\*\*\[(\w+)\]\((\w+)\.ipynb\)\*\*$", table, flags=re.M)
    assert [a for a, _ in blocks] == [p.stem for p in _chapters()] and all(a == b for a, b in blocks)
    for p in _chapters():
        for name in plan.declared_parameters(REPO / p):
            assert f"| `{name}` |" in table, (p, name)
    assert "| `n_samples` | `256` | int | pairs drawn per task; X_r keeps those the model answers right |" in table


def test_generated_text_is_included_never_written_into_pages():
    """Protects the hand-written pages from the build: the introduction and the parameters appendix pull the
    generated text in with MyST ``{include}`` from book/_generated/ (git-ignored), and carry no generated
    block of their own (the old marker comments, a claims table)."""
    for page, inc in (("intro.md", generate.FINDINGS), ("appendix_parameters.md", generate.PARAMETERS),
                      ("claims_rules.md", generate.RULES)):
        text = (REPO / "book" / page).read_text()
        assert f"```{{include}} {inc.relative_to('book').as_posix()}\n```" in text, page
        assert "<!-- findings:start -->" not in text and "<!-- parameters:start -->" not in text, page
        assert "| claim | paper" not in text and "| parameter | default" not in text, page
    ignored = subprocess.run(["git", "check-ignore", "-q", str(generate.FINDINGS)], cwd=REPO)
    assert ignored.returncode in (0, 128), "book/_generated/ must be git-ignored"


def test_every_chapter_parameters_cell_matches_its_config():
    """Protects one default per parameter: each chapter's parameters cell (what papermill overrides) names
    exactly the fields of its config in :mod:`arithmech.report.build.chapters`, with the same defaults, so the
    book plan and the check cell judge the values the chapter actually runs with."""
    import ast
    from dataclasses import fields

    from arithmech.report.build.chapters import CHAPTERS
    names = []
    for p in _chapters():
        cell = next(c for c in plan.read_notebook(REPO / p).cells if "parameters" in c.metadata.get("tags", []))
        values = {n.targets[0].id: ast.literal_eval(n.value) for n in ast.parse(cell.source).body
                  if isinstance(n, ast.Assign)}
        config = CHAPTERS[p.stem]
        assert set(values) == {f.name for f in fields(config)}, p
        built = config(**values)
        assert built == config(), (p, built)
        names.append(p.stem)
    assert sorted(names) == sorted(CHAPTERS)
