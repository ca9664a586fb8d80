"""Progress lines on a terminal only (arithmech.core.progress), and the book's ``--set`` keys and values checked
before any chapter runs, with a chapter environment that has a valid OMP_NUM_THREADS (arithmech.report.book)."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arithmech.core import progress as P
from arithmech.report import book, plan

REPO = Path(__file__).resolve().parents[2]


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_count_and_time_left_on_a_terminal_only(monkeypatch):
    """Protects: on a terminal, each unit rewrites one line ``label i/n (note), ~Xs left`` with the estimate
    = mean time per unit x units left (clock faked: 2 s per unit, 3 of 5 done → 4 s left), and the line is
    cleared at the end; on a non-terminal stream (a log, a pipe, a page) and with ARITHMECH_PROGRESS=0
    nothing at all is written."""
    clock = iter(float(x) for x in range(0, 100, 2))
    monkeypatch.setattr(P.time, "perf_counter", lambda: next(clock))
    monkeypatch.delenv(P.OFF, raising=False)
    tty = FakeTTY()
    with P.Progress("identify", 5, stream=tty, every=0) as bar:   # t0 = 0
        for i in range(3):
            bar.advance(note=f"task {i}")                          # t = 2, 4, 6 (one clock read each)
    out = tty.getvalue()
    assert "\ridentify 0/5" in out and "\ridentify 1/5 (task 0), ~" in out
    assert "identify 3/5 (task 2), ~" in out
    assert out.endswith("\r") and out.count("\r") >= 5
    assert P._duration(4) == "4s" and P._duration(125) == "2m05s" and P._duration(3700) == "1h01m"
    plain = io.StringIO()
    assert list(P.progress(range(4), "train-embedded", stream=plain)) == [0, 1, 2, 3] and plain.getvalue() == ""
    monkeypatch.setenv(P.OFF, "0")
    quiet = FakeTTY()
    assert list(P.progress(range(2), "book", stream=quiet)) == [0, 1] and quiet.getvalue() == ""


def test_progress_estimate_is_time_per_unit_times_units_left(monkeypatch):
    """Protects the estimate itself: 3 units done in 6 s of 5 → ``~4s left`` (reference: 6/3 x 2)."""
    t = [0.0]
    monkeypatch.setattr(P.time, "perf_counter", lambda: t[0])
    bar = P.Progress("x", 5, stream=io.StringIO())
    bar.done, t[0] = 3, 6.0
    assert bar.line() == "x 3/5, ~4s left"


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


def test_book_cli_bad_set_is_one_line_exit_2(capsys):
    """Protects: ``python -m arithmech book --set modle=x`` ends with exit code 2 and one line on stderr."""
    from arithmech.cli import main
    with pytest.raises(SystemExit) as e:
        main(["book", "--no-html", "--root", str(REPO), "--set", "modle=x"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith("error: --set 'modle'")


@pytest.mark.parametrize("sets", [["n_sampels=16"], ["data.n_per_template=0"]])
def test_book_set_is_checked_even_without_executing(sets, capsys, tmp_path):
    """Protects "every parameter checked, always": ``book --only data --set … --skip-execute`` (render only) still
    checks the keys and values against the chapter's config, exits 2 with one line, and writes nothing (no
    generated page, no _build)."""
    import shutil
    from arithmech.cli import main
    root = tmp_path / "book-root"
    shutil.copytree(REPO / "book", root / "book", ignore=shutil.ignore_patterns("_generated", "_static"))
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy2(REPO / name, root / name)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    with pytest.raises(SystemExit) as e:
        main(["book", "--only", "data", "--skip-execute", "--root", str(root), *[x for s in sets for x in ("--set", s)]])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith("error: ")
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


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
