"""A chapter executed with a valid OMP_NUM_THREADS, no progress lines, into its executed copy
(arithmech.report.build.execute)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from arithmech.report.build import execute, plan

REPO = Path(__file__).resolve().parents[4]


def test_chapter_environment_has_a_valid_omp_num_threads(monkeypatch, tmp_path):
    """Protects: an empty or invalid OMP_NUM_THREADS is replaced for the chapters' kernels (a valid one is kept),
    progress lines are off there, and the runner's own environment is restored after the chapter; torch
    started with the chapter environment prints no libgomp warning, while the raw one does (control)."""
    for bad in ("", " ", "x", "0", "-2"):
        v = execute.chapter_env({"OMP_NUM_THREADS": bad})["OMP_NUM_THREADS"]
        assert v.isdigit() and int(v) >= 1
    assert execute.chapter_env({"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"
    assert "OMP_NUM_THREADS" not in execute.chapter_env({}) and execute.chapter_env({})["ARITHMECH_PROGRESS"] == "0"
    seen = {}

    def fake_execute(nb, out, **kw):
        seen.update(omp=os.environ.get("OMP_NUM_THREADS"), progress=os.environ.get("ARITHMECH_PROGRESS"))
        nbformat.write(nb, out)
    import nbformat
    import papermill as pm
    monkeypatch.setattr(pm, "execute_notebook", fake_execute)
    monkeypatch.setenv("OMP_NUM_THREADS", "")
    (tmp_path / "one.md").write_text((REPO / "book" / "data.md").read_text())
    execute.execute_chapter(tmp_path, plan.Chapter("one", Path("one.md")))
    assert execute.executed(tmp_path, "one").exists() and not list(tmp_path.glob("*.ipynb"))
    assert seen["omp"].isdigit() and seen["progress"] == "0" and os.environ["OMP_NUM_THREADS"] == ""
    code = "import torch; torch.ones(64, 64) @ torch.ones(64, 64)"
    raw = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OMP_NUM_THREADS": ""},
                         capture_output=True, text=True)
    fixed = subprocess.run([sys.executable, "-c", code], env=execute.chapter_env({**os.environ, "OMP_NUM_THREADS": ""}),
                           capture_output=True, text=True)
    assert "libgomp: Invalid value" in raw.stderr                     # the control: the bug is real here
    assert fixed.returncode == 0 and "libgomp" not in fixed.stderr
