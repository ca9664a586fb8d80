"""The book's ``--set`` keys and values checked before any chapter runs, with a chapter environment that has a
valid OMP_NUM_THREADS (arithmech.report.build.book)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arithmech.report.build import book

REPO = Path(__file__).resolve().parents[4]


# ------------------------------------------------------------------------------------ book --set
@pytest.fixture(scope="module")
def cfg():
    return book.load_config(REPO)


BAD_SETS = [
    (["modle=x"], r"--set 'modle': no chapter to run has this parameter; names: .*model"),
    (["identify.n_sample=3"], r"chapter 'identify' has no parameter n_sample; its parameters cell declares: .*n_samples"),
    (["identify.n_samples=-3"], r"chapter 'identify': parameter n_samples=-3 is below 1"),
    (["n_samples=many"], r"parameter n_samples='many': expected an integer"),
    (["seed=1.5"], r"parameter seed=1.5: expected an integer"),
    (["device=tpu"], r"device 'tpu': use one of cpu, cuda, mps"),
    (["identify.stability_sizes=5"], r"parameter stability_sizes=5: expected a list"),
    (["finetune.scale=-2"], r"chapter 'finetune': parameter scale=-2.0 is below 1e-09"),
    (["nokey"], r"expected key=value"),
    (["nochapter.n=1"], r"not an executed chapter"),
]


@pytest.mark.parametrize("sets,match", BAD_SETS, ids=[s[0] for s, _ in BAD_SETS])
def test_book_set_typo_or_bad_value_refused_before_any_chapter(cfg, monkeypatch, sets, match):
    """Protects: a misspelt ``--set`` key (global or per chapter) or a value its chapter's check cell would refuse
    is one BookArgumentError naming the key and what is allowed, raised while planning, before any chapter
    runs (execution is booby-trapped); the same values through the CLI exit 2 with one line."""
    monkeypatch.setattr(book, "execute_chapter", lambda *a, **k: pytest.fail("a chapter ran"))
    with pytest.raises(book.BookArgumentError, match=match) as e:
        book.build(REPO, sets=sets, html=False)
    assert "\n" not in str(e.value)


def test_book_set_valid_values_reach_their_chapters(cfg):
    """Protects the accepting side: valid global and per-chapter values plan without error and reach exactly the
    chapters that declare them; a global key declared only by chapters not run with --only is refused."""
    chapters = {c.name: c.parameters for c in book.plan(REPO, cfg, ["seed=2", "identify.n_samples=32",
                                                                     "finetune.k_heads=[2, 3]"])}
    assert chapters["identify"]["n_samples"] == 32 and chapters["finetune"]["k_heads"] == [2, 3]
    assert all(p["seed"] == 2 for n, p in chapters.items() if n != "appendix_computer_vs_llm")
    with pytest.raises(book.BookArgumentError, match="'top_k'"):
        book.plan(REPO, cfg, ["top_k=3"], only="identify")


# ------------------------------------------------------------------------------ chapter environment
def test_chapter_environment_has_a_valid_omp_num_threads(monkeypatch, tmp_path):
    """Protects: an empty or invalid OMP_NUM_THREADS is replaced for the chapters' kernels (a valid one is kept),
    progress lines are off there, and the runner's own environment is restored after the chapter; torch
    started with the chapter environment prints no libgomp warning, while the raw one does (control)."""
    for bad in ("", " ", "x", "0", "-2"):
        v = book.chapter_env({"OMP_NUM_THREADS": bad})["OMP_NUM_THREADS"]
        assert v.isdigit() and int(v) >= 1
    assert book.chapter_env({"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"
    assert "OMP_NUM_THREADS" not in book.chapter_env({}) and book.chapter_env({})["ARITHMECH_PROGRESS"] == "0"
    seen = {}

    def fake_execute(nb, out, **kw):
        seen.update(omp=os.environ.get("OMP_NUM_THREADS"), progress=os.environ.get("ARITHMECH_PROGRESS"))
        nbformat.write(nb, out)
    import nbformat
    import papermill as pm
    monkeypatch.setattr(pm, "execute_notebook", fake_execute)
    monkeypatch.setenv("OMP_NUM_THREADS", "")
    (tmp_path / "one.md").write_text((REPO / "book" / "data.md").read_text())
    book.execute_chapter(tmp_path, book.Chapter("one", Path("one.md")))
    assert book.executed(tmp_path, "one").exists() and not list(tmp_path.glob("*.ipynb"))
    assert seen["omp"].isdigit() and seen["progress"] == "0" and os.environ["OMP_NUM_THREADS"] == ""
    code = "import torch; torch.ones(64, 64) @ torch.ones(64, 64)"
    raw = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OMP_NUM_THREADS": ""},
                         capture_output=True, text=True)
    fixed = subprocess.run([sys.executable, "-c", code], env=book.chapter_env({**os.environ, "OMP_NUM_THREADS": ""}),
                           capture_output=True, text=True)
    assert "libgomp: Invalid value" in raw.stderr                     # the control: the bug is real here
    assert fixed.returncode == 0 and "libgomp" not in fixed.stderr


# ------------------------------------------------------------------------------ render tree
@pytest.mark.parametrize("rel,skipped", [("_static/arithmech.css", False), ("references.bib", False),
                                         (".pytest_cache/README.md", True), ("_static/.ipynb_checkpoints/a.css", True),
                                         ("__pycache__/x.pyc", True), ("_static/node_modules/m/a.js", True),
                                         (".venv/lib/x.py", True), ("_generated/findings.md", True)])
def test_render_tree_leaves_out_tool_caches(rel, skipped):
    """Protects the HTML from tool caches (issue #27: .pytest_cache reached _build/html): a file of book/ under a
    dot-folder, __pycache__ or node_modules is not copied into the render tree; static files and the
    bibliography are."""
    assert book._skip(Path(rel)) is skipped


def test_renderer_imports_this_arithmech(monkeypatch):
    """Protects the bibliography style: jupyter-book runs with this package first on PYTHONPATH (the
    extension arithmech.report.build.bibstyle that _config.yml names is this checkout's), the caller's path kept."""
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    path = book._renderer_env()["PYTHONPATH"].split(os.pathsep)
    assert path == [str(Path(book.__file__).resolve().parents[3]), "/elsewhere"]
