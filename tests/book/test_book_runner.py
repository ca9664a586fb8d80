"""The papermill book runner (arithmech.report.book) end to end on a *toy book*: two tiny notebooks and
the real ``_config.yml``, built by the runner in ~30 s, independent of the chapters. Checks the order,
the parameters, atomic replacement, errors, and that the pages draw offline in headless Chromium.
Marked ``slow`` (a book build): left out by ``make test-fast``."""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from browser import Browser, require_browser

from arithmech.report import book

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


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
def toy_book(tmp_path_factory):
    """A two-chapter book built by the runner: ``one`` writes results/toy/n.txt, ``two`` reads it."""
    root = tmp_path_factory.mktemp("toy")
    shutil.copytree(REPO / "book" / "_static", root / "book" / "_static", ignore=shutil.ignore_patterns("vendor"))
    shutil.copy2(REPO / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: Toy\n    chapters:\n"
                                   "      - file: book/one\n      - file: book/two\n")
    (root / "book" / "book.yml").write_text("global: {seed: 3, model: unused}\nchapters:\n  one: {n: 3}\n")
    (root / "book" / "intro.md").write_text("# Toy\n\nDisplay math:\n\n$$\\sum_i x_i$$\n")
    (root / "book" / "appendix_parameters.md").write_text("# Parameters\n\n"
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


def test_toy_chapters_run_in_toc_order_with_their_parameters(toy_book):
    """Protects: book.yml's per-chapter and global values reach the chapters, which run from the root in toc
    order: ``two`` reads the file ``one`` wrote, with n=3 (book.yml) and seed=3 (global)."""
    root, times = toy_book
    assert list(times)[:2] == ["one", "two"]
    assert (root / "results" / "toy" / "n.txt").read_text() == "3,3"
    assert "read: 3,3" in _outputs_text(root / "book" / "two.ipynb")
    nb = nbformat.read(root / "book" / "one.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "n = 3" in injected[0].source and "seed = 3" in injected[0].source
    assert "model" not in injected[0].source          # global values go only where declared


def test_toy_appendix_lists_parameters_from_the_notebooks(toy_book):
    """Protects: the parameters appendix's table is generated from the parameters cells (name, default, type, help)."""
    root, _ = toy_book
    text = (root / "book" / "appendix_parameters.md").read_text()
    assert "**[one](one.ipynb)**\n\n| parameter | default | type | help |" in text
    assert "| `n` | `2` | int | how many bars |" in text
    assert "**[two](two.ipynb)**" in text and "| `seed` | `0` | int |  |" in text


def test_wrong_parameter_fails_in_check_cell_and_keeps_notebook(toy_book):
    """Protects: a wrong-type or wrong-value parameter is refused by the runner before the chapter runs (the
    chapter's own check-cell rules, read from its source), and a chapter run with one anyway (papermill -p)
    stops in its check cell with a message naming the chapter, the cell and the parameter; the notebook on
    disk stays byte for byte as it was."""
    root, _ = toy_book
    nb = root / "book" / "one.ipynb"
    before = nb.read_bytes()
    with pytest.raises(book.BookArgumentError, match=r"chapter 'one': parameter n='many'"):
        book.build(root, only="one", sets=["one.n=many"], html=False)
    with pytest.raises(book.BookArgumentError, match="expected a positive integer"):
        book.build(root, only="one", sets=["one.n=-1"], html=False)
    assert nb.read_bytes() == before
    with pytest.raises(book.BookError) as e:
        book.execute_chapter(root, book.Chapter("one", Path("book/one.ipynb"), {"n": "many"}))
    msg = str(e.value)
    assert "chapter 'one'" in msg and "cell 4" in msg and "ParameterError" in msg and "n='many'" in msg
    assert "from arithmech.report.book import setup" in msg          # the failing cell's first line
    assert nb.read_bytes() == before
    assert (root / "_build" / "failed" / "one.ipynb").exists()


def test_successful_run_replaces_notebook(toy_book):
    """Protects: a chapter that succeeds replaces its notebook (new injected values) and leaves no temporary file."""
    root, _ = toy_book
    book.build(root, only="one", sets=["one.n=4"], html=False)
    nb = nbformat.read(root / "book" / "one.ipynb", as_version=4)
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "n = 4" in injected.source
    assert not (root / "_build" / ".papermill" / "one.ipynb").exists()
    assert (root / "results" / "toy" / "n.txt").read_text() == "4,3"


def test_unknown_parameter_and_chapter_are_errors(toy_book):
    """Protects: a per-chapter value the chapter does not declare, or an unknown chapter, is an error that lists
    what exists (a typo must not be silently ignored)."""
    root, _ = toy_book
    cfg = book.load_config(root)
    with pytest.raises(book.BookError, match=r"no parameter nn; its parameters cell declares: n, seed"):
        book.plan(root, cfg, ["one.nn=1"])
    with pytest.raises(book.BookError, match="chapters: one, two"):
        book.plan(root, cfg, ["three.n=1"])
    with pytest.raises(book.BookError, match="chapters: one, two"):
        book.build(root, only="three", html=False)


def test_toy_pages_draw_offline(toy_book):
    """Protects: each toy page, opened from file:// with the network cut, draws every chart (the dropdown one
    too) and its math, sends no request off the machine, and logs no error."""
    root, _ = toy_book
    html = root / "_build" / "html" / "book"
    require_browser()
    with Browser() as b:
        for page, charts in (("intro.html", 0), ("one.html", 1), ("two.html", 1)):
            r = b.open(html / page)
            assert r.requests == [] and r.errors == [], (page, r.requests, r.errors)
            assert r.counts["charts"] == charts and r.counts["drawn"] == charts, (page, r.counts)
            assert r.counts["math"] > 0 and r.counts["mathjax"] > 0, (page, r.counts)
