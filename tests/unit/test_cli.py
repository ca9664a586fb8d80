"""Unit tests of ``arithmech/cli.py``."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from arithmech.core import results


@pytest.mark.parametrize("argv,msg", [(["--receivers", "0"], "below 1"), (["--ig-steps", "x"], "not an integer"),
                                      (["--results", "/nonexistent-arithmech"], "does not exist")])
def test_cli_bad_input_is_one_line_and_exit_2(argv, msg):
    """Protects: bad beyond arguments or a missing identify folder are one line and exit 2, before any model loads."""
    p = subprocess.run([sys.executable, "-m", "arithmech", "beyond", *argv], capture_output=True, text=True)
    assert p.returncode == 2 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


REPO = Path(__file__).resolve().parents[2]


def test_book_cli_bad_set_is_one_line_exit_2(capsys):
    """Protects: ``python -m arithmech book --set modle=x`` ends with exit code 2 and one line on stderr."""
    from arithmech.cli import main
    with pytest.raises(SystemExit) as e:
        main(["book", "--no-html", "--root", str(REPO), "--set", "modle=x"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith("error: --set 'modle'")


@pytest.mark.parametrize("argv,match", [
    (["--sizes", "64,x"], "--sizes: 'x' is not an integer"), (["--kinds", "operator,other"], "kinds"),
    (["--threshold", "0.1"], "threshold 0.1"), (["--task", "nope"], "--task 'nope'")])
def test_bad_stability_arguments_are_one_line_before_any_model_loads(argv, match, capsys, monkeypatch, tmp_path):
    """Protects the input contract of `python -m arithmech stability`: a bad size list, kind, threshold or task
    is one line and exit code 2, before any model loads."""
    from arithmech.cli import main
    from arithmech.core import models
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("a model was loaded"))
    with pytest.raises(SystemExit) as e:
        main(["stability", "--results", str(tmp_path), *argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and match in err, err
    assert not results.exists(tmp_path / "embedded", "stability.csv")


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


@pytest.mark.parametrize("step, cls, values", [
    ("table1", "Table1", dict(model_name="embedded", suite="toy", steps=30, batch_size=32, curve_steps=300, max_extend=2,
                            seeds=(0, 1, 2, 3), overwrite=True, results="/somewhere/else")),
    ("identify", "Identify", dict(n_samples=64, knockout=False, n_boot=200, results="out/r", dtype="bfloat16",
                                  threshold=-5e-05)),
    ("identify", "Identify", dict(threshold=-0.0512345678, seed=7)),
    ("table1", "Table1", dict()),
])
def test_a_recorded_command_builds_the_same_config(step, cls, values):
    """Protects the command a chapter's run records (``core.config.command_line``, e.g. in Table 1's records): parsed
    by the command line, it builds a config with the same files-changing fields (``reuse_key``) as the one that
    ran, so "re-run the recorded command" makes the same files. An absolute results folder is left out (no machine
    path in a record); a relative one is kept."""
    import shlex

    from arithmech.cli import build_parser
    from arithmech.core.config import command_line, fields
    from arithmech.pipeline.registry import STEPS

    klass = STEPS[step].config
    config = klass(**values)
    line = command_line(step, config)
    argv = shlex.split(line)
    assert argv[:4] == ["python", "-m", "arithmech", step] and "/somewhere" not in line
    a = build_parser().parse_args(argv[3:])
    rebuilt = klass(**{name: getattr(a, name) for name, *_ in fields(klass)})
    assert rebuilt.reuse_key() == config.reuse_key(), line
    assert rebuilt.results == (values.get("results", "results") if not values.get("results", "").startswith("/")
                               else "results")
