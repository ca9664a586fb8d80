"""The book: papermill runner (order, parameters, atomic replacement, errors) and offline HTML.

Two books are built here. A *toy book* (two tiny notebooks, the real ``_config.yml``) exercises
the runner end to end in ~30 s, independent of the chapters. The *real book* (``built_book`` in
conftest) is rendered once from the committed notebooks; headless Chromium then opens each page
from ``file://`` with the network cut and checks that its charts are drawn, that no request
leaves the machine and that nothing logs an error.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from arithmech.report import book

from arithmech.report import offline
from browser import Browser

REPO = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------------- toy book
def _notebook(path: Path, params: str, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    p = nbformat.v4.new_code_cell(params)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {path.stem}\n\nMath: $x^2$."), p]
    nb.cells += [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


CHECK = ("from arithmech.report.book import setup\nfrom arithmech.report.params import check_params\nsetup()\n"
         "P = check_params(globals(), {'n': (int, lambda v: v > 0, 'a positive integer'), 'seed': int})")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A two-chapter book built by the runner: ``one`` writes results/toy/n.txt, ``two`` reads it."""
    root = tmp_path_factory.mktemp("toy")
    (root / "book").mkdir()
    shutil.copy2(REPO / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: Toy\n    chapters:\n"
                                   "      - file: book/one\n      - file: book/two\n")
    (root / "book" / "book.yml").write_text("global: {seed: 3, model: unused}\nchapters:\n  one: {n: 3}\n")
    (root / "book" / "intro.md").write_text("# Toy\n\nDisplay math:\n\n$$\\sum_i x_i$$\n\n"
                                            "<!-- parameters:start -->\n<!-- parameters:end -->\n")
    _notebook(root / "book" / "one.ipynb", "n = 2  # how many bars\nseed = 0", [
        CHECK,
        "import altair as alt, pandas as pd\n"
        "alt.Chart(pd.DataFrame({'x': range(n), 'y': range(n)})).mark_bar().encode(x='x:O', y='y:Q')",
        "import os\nos.makedirs('results/toy', exist_ok=True)\nopen('results/toy/n.txt', 'w').write(f'{n},{seed}')"])
    _notebook(root / "book" / "two.ipynb", "seed = 0", [
        "from arithmech.report.book import setup\nsetup()",
        "import altair as alt, pandas as pd\n"
        "pick = alt.param(bind=alt.binding_select(options=['a', 'b'], name='group '), value='a')\n"
        "df = pd.DataFrame({'g': list('aabb'), 'x': [1, 2, 3, 4], 'y': [1, 3, 2, 4]})\n"
        "alt.Chart(df).mark_point().encode(x='x', y='y').add_params(pick).transform_filter(alt.datum.g == pick)",
        "print('read:', open('results/toy/n.txt').read())"])
    times = book.build(root)
    return root, times


def _outputs_text(nb_path: Path) -> str:
    nb = nbformat.read(nb_path, as_version=4)
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_toy_chapters_run_in_toc_order_with_their_parameters(toy):
    """book.yml's per-chapter and global values reach the chapters, which run from the root in toc
    order: ``two`` reads the file ``one`` wrote, with n=3 (book.yml) and seed=3 (global)."""
    root, times = toy
    assert list(times)[:2] == ["one", "two"]
    assert (root / "results" / "toy" / "n.txt").read_text() == "3,3"
    assert "read: 3,3" in _outputs_text(root / "book" / "two.ipynb")
    nb = nbformat.read(root / "book" / "one.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "n = 3" in injected[0].source and "seed = 3" in injected[0].source
    assert "model" not in injected[0].source          # global values go only where declared


def test_toy_intro_lists_parameters_from_the_notebooks(toy):
    """The intro's parameters table is generated from the parameters cells (name, default, type, help)."""
    root, _ = toy
    text = (root / "book" / "intro.md").read_text()
    assert "**[one](one.ipynb)**\n\n| parameter | default | type | help |" in text
    assert "| `n` | `2` | int | how many bars |" in text
    assert "**[two](two.ipynb)**" in text and "| `seed` | `0` | int |  |" in text


def test_wrong_parameter_fails_in_check_cell_and_keeps_notebook(toy):
    """A wrong-type or wrong-value parameter stops the chapter in its check cell with a message naming
    the chapter, the cell and the parameter; the notebook on disk stays byte for byte as it was."""
    root, _ = toy
    nb = root / "book" / "one.ipynb"
    before = nb.read_bytes()
    with pytest.raises(book.BookError) as e:
        book.build(root, only="one", sets=["one.n=many"], html=False)
    msg = str(e.value)
    assert "chapter 'one'" in msg and "cell 4" in msg and "ParameterError" in msg and "n='many'" in msg
    assert "from arithmech.report.book import setup" in msg          # the failing cell's first line
    assert nb.read_bytes() == before
    assert (root / "_build" / "failed" / "one.ipynb").exists()
    with pytest.raises(book.BookError, match="expected a positive integer"):
        book.build(root, only="one", sets=["one.n=-1"], html=False)
    assert nb.read_bytes() == before


def test_successful_run_replaces_notebook(toy):
    """A chapter that succeeds replaces its notebook (new injected values) and leaves no temporary file."""
    root, _ = toy
    book.build(root, only="one", sets=["one.n=4"], html=False)
    nb = nbformat.read(root / "book" / "one.ipynb", as_version=4)
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "n = 4" in injected.source
    assert not (root / "_build" / ".papermill" / "one.ipynb").exists()
    assert (root / "results" / "toy" / "n.txt").read_text() == "4,3"


def test_unknown_parameter_and_chapter_are_errors(toy):
    """A per-chapter value the chapter does not declare, or an unknown chapter, is an error that lists
    what exists (a typo must not be silently ignored)."""
    root, _ = toy
    cfg = book.load_config(root)
    with pytest.raises(book.BookError, match=r"no parameter nn; its parameters cell declares: n, seed"):
        book.plan(root, cfg, ["one.nn=1"])
    with pytest.raises(book.BookError, match="chapters: one, two"):
        book.plan(root, cfg, ["three.n=1"])
    with pytest.raises(book.BookError, match="chapters: one, two"):
        book.build(root, only="three", html=False)


def test_parse_sets_reads_yaml_values():
    """``--set`` values are typed like YAML; ``chapter.key`` targets one chapter."""
    g, per = book.parse_sets(["n=8", "model=meta-llama/Llama-2-7b-hf", "identify.tasks=[addition, division]",
                              "x=0.5", "flag=true"])
    assert g == {"n": 8, "model": "meta-llama/Llama-2-7b-hf", "x": 0.5, "flag": True}
    assert per == {"identify": {"tasks": ["addition", "division"]}}


def test_toy_pages_draw_offline(toy):
    """Each toy page, opened from file:// with the network cut, draws every chart (the dropdown one
    too) and its math, sends no request off the machine, and logs no error."""
    root, _ = toy
    html = root / "_build" / "html" / "book"
    with Browser() as b:
        for page, charts in (("intro.html", 0), ("one.html", 1), ("two.html", 1)):
            r = b.open(html / page)
            assert r.requests == [] and r.errors == [], (page, r.requests, r.errors)
            assert r.counts["charts"] == charts and r.counts["drawn"] == charts, (page, r.counts)
            assert r.counts["math"] > 0 and r.counts["mathjax"] > 0, (page, r.counts)


def test_browser_check_sees_network_requests(tmp_path):
    """Negative control for the browser harness: a page that loads a remote script and image is
    reported (so an empty request list in the other tests means something)."""
    page = tmp_path / "remote.html"
    page.write_text('<html><body><script src="https://cdn.example.invalid/x.js"></script>'
                    '<img src="http://example.invalid/a.png"></body></html>')
    with Browser() as b:
        r = b.open(page, settle=5)
    assert any("cdn.example.invalid" in u for u in r.requests)
    assert any("example.invalid/a.png" in u for u in r.requests)


# ------------------------------------------------------------------------------ offline pieces
def test_external_references_finds_loads_not_links(tmp_path):
    """The self-containment check flags scripts, stylesheets, images, frames and CSS urls from
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
    """A chart's spec survives the inline script byte for byte, even data containing ``</script>``."""
    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v6.4.1.json", "mark": "text",
            "data": {"values": [{"t": "</script><script>alert(1)</script>"}]}}
    html = offline.chart_html(spec)
    assert html.count("</script>") == 1 and html.endswith("</script>")
    payload = re.search(r"vegaEmbed\(el, (\{.*\}), \{", html).group(1)
    assert json.loads(payload.replace("<\\/", "</")) == spec


def test_renderer_gives_jupyter_mimetype_and_book_html():
    """``setup()`` makes altair emit the vega-lite JSON mimetype (Jupyter) and the offline HTML (book),
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


# ----------------------------------------------------------------------------------- real book
def _chapters() -> list[Path]:
    return book.toc_files(REPO)


def test_every_chapter_calls_setup_in_its_check_cell():
    """Every chapter's second cell (after the parameters) calls arithmech.report.book.setup() and
    check_params: the theme, the offline charts and parameter checking are never forgotten."""
    for p in _chapters():
        if p.suffix != ".ipynb":
            continue
        nb = nbformat.read(REPO / p, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]
        assert "parameters" in code[0].metadata.get("tags", []), p
        assert "setup()" in code[1].source and "check_params(" in code[1].source, p


def test_papermill_parses_every_parameter_of_every_chapter():
    """Every name assigned in a chapter's parameters cell is one papermill can override. papermill
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


def test_intro_parameters_table_matches_notebooks(tmp_path):
    """The committed introduction lists exactly the parameters the chapters declare."""
    text = (REPO / book.INTRO).read_text()
    assert book.parameters_table(REPO) in text, "run `python -m arithmech book --skip-execute` to refresh it"


def test_every_toc_page_is_built(built_book):
    """Every file of _toc.yml has its HTML page, and the build loads nothing from outside itself."""
    _, html = built_book
    for p in _chapters():
        assert (html / p.with_suffix(".html")).exists(), p
    assert offline.external_references(html) == []


def test_chapter_pages_draw_all_charts_offline(built_book):
    """Each chapter page, opened from file:// in Chromium with the network cut, draws as many charts
    as its notebook has altair outputs, renders its math, sends nothing off the machine and logs
    no console error."""
    root, html = built_book
    failures = []
    with Browser() as b:
        for p in _chapters():
            expected = vega_outputs = 0
            if p.suffix == ".ipynb":
                nb = nbformat.read(root / p, as_version=4)
                outs = [o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
                expected = sum(offline.CHART_CLASS in "".join(d.get("text/html", "")) for d in outs)
                vega_outputs = sum(any(k.startswith("application/vnd.vegalite") for k in d) for d in outs)
            if vega_outputs != expected:       # an altair output without the offline HTML: setup() missing
                failures.append((str(p), f"{vega_outputs} altair outputs, {expected} with offline HTML"))
            r = b.open(html / p.with_suffix(".html"), settle=60)
            c = r.counts
            if r.requests or r.errors or c["charts"] != expected or c["drawn"] != expected \
                    or (c["math"] and not c["mathjax"]):
                failures.append((str(p), c, r.requests[:3], r.errors[:3]))
    assert failures == []
