"""The papermill book runner (arithmech.report.build.book) end to end on a *toy book*: two tiny chapters kept as
MyST-Markdown notebooks (as the real ones) and the real ``_config.yml``, built by the runner in ~30 s,
independent of the chapters. Checks the order, the parameters, that the sources are never rewritten,
atomic replacement of the executed copies in ``_build/executed/``, errors, the generated includes,
``--skip-execute`` without an executed copy, and that the pages draw offline in headless Chromium.
Marked ``slow`` (a book build): left out by ``make test-fast``."""
from __future__ import annotations

import shutil
from pathlib import Path

import jupytext
import nbformat
import pytest
from browser import Browser, require_browser

from arithmech.report.build import book, execute, generate, plan, render

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _notebook(path: Path, params: str, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    p = nbformat.v4.new_code_cell(params)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {path.stem}\n\nMath: $x^2$."), p]
    nb.cells += [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.write_text(jupytext.writes(nb, fmt="md:myst"))


TOY_CONFIG = '''from dataclasses import dataclass
from arithmech.core.config import option
from arithmech.report.build import chapters


@dataclass(frozen=True)
class One(chapters.Chapter):
    n: int = option(2, "how many bars", low=1)
    seed: int = option(0, "seed of every draw", low=0)


chapters.CHAPTERS["one"] = One
'''
CHECK = TOY_CONFIG + "from arithmech.report.build.book import setup\nsetup()\nP = chapters.check('one', globals())"


@pytest.fixture(scope="module", autouse=True)
def toy_chapter_config():
    """The toy chapter's config, registered for the runner's plan in this process (its check cell registers
    it in the kernel's)."""
    from arithmech.report.build import chapters
    namespace: dict = {}
    exec(TOY_CONFIG, namespace)               # the same source the toy chapter's check cell runs
    yield
    chapters.CHAPTERS.pop("one", None)



@pytest.fixture(scope="module")
def toy_book(tmp_path_factory):
    """A two-chapter book built by the runner: ``one`` writes results/toy/n.txt, ``two`` reads it. Also returns
    the sources' bytes before the build."""
    root = tmp_path_factory.mktemp("toy")
    shutil.copytree(REPO / "book" / "_static", root / "book" / "_static", ignore=shutil.ignore_patterns("vendor"))
    shutil.copy2(REPO / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: Toy\n    chapters:\n"
                                   "      - file: book/one\n      - file: book/two\n      - file: book/appendix_parameters\n")
    (root / "book" / "book.yml").write_text("global: {seed: 3, model: unused}\nchapters:\n  one: {n: 3}\n")
    (root / "book" / "intro.md").write_text("# Toy\n\nDisplay math:\n\n$$\\sum_i x_i$$\n")
    (root / "book" / "appendix_parameters.md").write_text("# Parameters\n\n```{include} _generated/parameters.md\n```\n")
    _notebook(root / "book" / "one.md", "n = 2  # how many bars\nseed = 0", [
        CHECK,
        "import altair as alt, pandas as pd\n"
        "alt.Chart(pd.DataFrame({'x': range(n), 'y': range(n)})).mark_bar().encode(x='x:O', y='y:Q')",
        "import os\nos.makedirs('results/toy', exist_ok=True)\nopen('results/toy/n.txt', 'w').write(f'{n},{seed}')"])
    _notebook(root / "book" / "two.md", "seed = 0", [
        "from arithmech.report.build.book import setup\nsetup()",
        "import altair as alt, pandas as pd\n"
        "pick = alt.param(bind=alt.binding_select(options=['a', 'b'], name='group '), value='a')\n"
        "df = pd.DataFrame({'g': list('aabb'), 'x': [1, 2, 3, 4], 'y': [1, 3, 2, 4]})\n"
        "alt.Chart(df).mark_point().encode(x='x', y='y').add_params(pick).transform_filter(alt.datum.g == pick)",
        "print('read:', open('results/toy/n.txt').read())"])
    sources = {p.name: p.read_bytes() for p in (root / "book").glob("*.md")}
    times = book.build(root)
    return root, times, sources



def _outputs_text(nb_path: Path) -> str:
    nb = nbformat.read(nb_path, as_version=4)
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_toy_chapters_run_in_toc_order_with_their_parameters(toy_book):
    """Protects: book.yml's per-chapter and global values reach the chapters, which run from the root in toc
    order: ``two`` reads the file ``one`` wrote, with n=3 (book.yml) and seed=3 (global). The executed
    copies land in _build/executed/ (the injected cell hidden), the text sources are left byte for byte."""
    root, times, sources = toy_book
    assert list(times)[:2] == ["one", "two"]
    assert (root / "results" / "toy" / "n.txt").read_text() == "3,3"
    assert "read: 3,3" in _outputs_text(execute.executed(root, "two"))
    assert {p.name: p.read_bytes() for p in (root / "book").glob("*.md")} == sources
    assert not list((root / "book").glob("*.ipynb"))
    nb = nbformat.read(execute.executed(root, "one"), as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "n = 3" in injected[0].source and "seed = 3" in injected[0].source
    assert "model" not in injected[0].source          # global values go only where declared
    assert "remove-cell" in injected[0].metadata["tags"]


def test_toy_appendix_lists_parameters_from_the_notebooks(toy_book):
    """Protects: the parameters appendix's table is generated from the chapters' sources (name, default, type,
    help) into book/_generated/parameters.md, which the hand-written page includes: the page is not
    rewritten, and its HTML shows the table with working links to the chapters."""
    root, _, sources = toy_book
    text = (root / generate.PARAMETERS).read_text()
    assert "**[one](one.ipynb)**\n\n| parameter | default | type | help |" in text
    assert "| `n` | `2` | int | how many bars |" in text
    assert "**[two](two.ipynb)**" in text and "| `seed` | `0` | int |  |" in text
    assert (root / "book" / "appendix_parameters.md").read_bytes() == sources["appendix_parameters.md"]
    page = (root / "_build" / "html" / "book" / "appendix_parameters.html").read_text()
    assert "how many bars" in page and 'href="one.html"' in page


def test_wrong_parameter_fails_in_check_cell_and_keeps_notebook(toy_book):
    """Protects: a wrong-type or wrong-value parameter is refused by the runner before the chapter runs (by
    building the chapter's config, as its check cell does), and a chapter run with one anyway (papermill -p)
    stops in its check cell with a message naming the chapter, the cell and the parameter; the notebook on
    disk (the source and its executed copy) stays byte for byte as it was."""
    root, _, _ = toy_book
    src, nb = root / "book" / "one.md", execute.executed(root, "one")
    before, source = nb.read_bytes(), src.read_bytes()
    with pytest.raises(plan.BookArgumentError, match=r"chapter 'one': parameter n='many'"):
        book.build(root, only="one", sets=["one.n=many"], html=False)
    with pytest.raises(plan.BookArgumentError, match=r"parameter n=-1 is below 1"):
        book.build(root, only="one", sets=["one.n=-1"], html=False)
    assert nb.read_bytes() == before
    with pytest.raises(plan.BookError) as e:
        execute.execute_chapter(root, plan.Chapter("one", Path("book/one.md"), {"n": "many"}))
    msg = str(e.value)
    assert "chapter 'one'" in msg and "cell 4" in msg and "ValueError" in msg and "n='many'" in msg
    assert CHECK.splitlines()[0] in msg                               # the failing cell's first line
    assert nb.read_bytes() == before and src.read_bytes() == source
    assert (root / "_build" / "failed" / "one.ipynb").exists()


def test_successful_run_replaces_notebook(toy_book):
    """Protects: a chapter that succeeds replaces its executed copy (new injected values), leaves no temporary
    file and does not touch its source."""
    root, _, sources = toy_book
    book.build(root, only="one", sets=["one.n=4"], html=False)
    assert (root / "book" / "one.md").read_bytes() == sources["one.md"]
    nb = nbformat.read(execute.executed(root, "one"), as_version=4)
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "n = 4" in injected.source
    assert not (root / "_build" / ".papermill" / "one.ipynb").exists()
    assert (root / "results" / "toy" / "n.txt").read_text() == "4,3"


def test_unknown_parameter_and_chapter_are_errors(toy_book):
    """Protects: a per-chapter value the chapter does not declare, or an unknown chapter, is an error that lists
    what exists (a typo must not be silently ignored)."""
    root, _, _ = toy_book
    cfg = plan.load_config(root)
    with pytest.raises(plan.BookError, match=r"no parameter nn; its parameters cell declares: n, seed"):
        plan.plan(root, cfg, ["one.nn=1"])
    with pytest.raises(plan.BookError, match="chapters: one, two"):
        plan.plan(root, cfg, ["three.n=1"])
    with pytest.raises(plan.BookError, match="chapters: one, two"):
        book.build(root, only="three", html=False)


def test_toy_pages_draw_offline(toy_book):
    """Protects: each toy page, opened from file:// with the network cut, draws every chart (the dropdown one
    too) and its math, sends no request off the machine, and logs no error."""
    root, _, _ = toy_book
    html = root / "_build" / "html" / "book"
    require_browser()
    with Browser() as b:
        for page, charts in (("intro.html", 0), ("one.html", 1), ("two.html", 1)):
            r = b.open(html / page)
            assert r.requests == [] and r.errors == [], (page, r.requests, r.errors)
            assert r.counts["charts"] == charts and r.counts["drawn"] == charts, (page, r.counts)
            assert r.counts["math"] > 0 and r.counts["mathjax"] > 0, (page, r.counts)


def test_skip_execute_renders_what_exists_and_names_the_unexecuted(toy_book, tmp_path, capsys):
    """Protects ``--skip-execute``: it renders the executed copies in _build/executed/ as they are, names the
    chapters that have none (rendered from their source, without outputs) and executes nothing; the render
    tree and the HTML hold no tool caches (.pytest_cache, .ipynb_checkpoints)."""
    root, _, _ = toy_book
    copy = tmp_path / "toy"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("html", ".doctrees", "render"))
    (copy / "book" / ".pytest_cache").mkdir()
    (copy / "book" / ".pytest_cache" / "README.md").write_text("cache")
    execute.executed(copy, "two").unlink()
    (copy / "results" / "toy" / "n.txt").unlink()
    book.build(copy, skip_execute=True)
    out = capsys.readouterr().out
    (line,) = [l for l in out.splitlines() if "not executed yet" in l]
    assert "rendered without outputs: two (" in line
    assert not (copy / "results" / "toy" / "n.txt").exists() and not execute.executed(copy, "two").exists()
    html = copy / "_build" / "html" / "book"
    assert "read: 3" not in (html / "two.html").read_text() and (html / "one.html").exists()
    for tree in (copy / "_build" / "html", copy / render.RENDER):
        assert not [p for p in tree.rglob("*") if p.name in (".pytest_cache", ".ipynb_checkpoints")], tree
