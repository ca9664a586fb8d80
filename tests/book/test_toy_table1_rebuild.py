"""The toy Table 1 rebuilt with its recorded command gives the same verdicts.

A hostile reader rebuilt the book on a fresh clone of one commit and saw "the identified heads matter for precise
SFT" flip from *does not hold* to *holds*. This test is that rebuild, on the book this run has just built: the
Fine-tune chapter's arms run (``results/embedded/finetune/``) is made again, by its recorded command, in a fresh
folder.

To fit CI, the fresh folder starts from the build's records *minus* every run Table 1 reads (``table1.json``'s
``runs``: base and the chosen rate of each arm for every seed). Those are trained again from the base model, by
``python -m arithmech table1`` in a process of its own with two torch threads (the chapter's ``threads``), and the
rate is chosen again; of each arm's grid only the chosen row is retrained, the other rows, the learning curve and
identify's files are the build's. So the test covers training and scoring from the base weights, and the choice
among the grid rows; not identify's ranking or the grid's other runs. About 2 minutes on 2 cores; ``slow``.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from arithmech.table1 import verdicts
from arithmech.table1.result import Table1Result

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_toy_table1_runs_retrained_by_the_recorded_command_keep_every_verdict(built_book, tmp_path):
    """Protects the toy Table 1 from the flip a fresh rebuild found: every run Table 1 reads is trained again with the
    command ``table1.json`` records, and each scores exactly what the build recorded (so the verdicts,
    computed from those records, come out the same); the chosen rates are chosen again and agree."""
    built = REPO / "results" / "embedded"
    table = built / "finetune" / "table1.json"
    if not table.exists():
        pytest.skip("the Fine-tune chapter wrote no results/embedded/finetune/table1.json in this build")
    plan = json.loads(table.read_text())
    fresh = tmp_path / "embedded"
    shutil.copytree(built, fresh)
    (fresh / "finetune" / "table1.json").unlink()
    for name in plan["runs"]:
        (fresh / "finetune" / f"{name}.json").unlink()

    argv = shlex.split(plan["command"])
    assert argv[:4] == ["python", "-m", "arithmech", "table1"] and "--results" not in argv, plan["command"]
    env = {**os.environ, "ARITHMECH_PROGRESS": "0", "OMP_NUM_THREADS": "2"}     # as the chapter trains (threads = 2)
    r = subprocess.run([sys.executable, *argv[1:], "--results", str(fresh)], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]

    again = json.loads((fresh / "finetune" / "table1.json").read_text())
    assert again["runs"] == plan["runs"]
    assert {a: v["chosen_lr"] for a, v in again["arms"].items()} == {a: v["chosen_lr"] for a, v in plan["arms"].items()}
    for name in plan["runs"]:
        old = json.loads((built / "finetune" / f"{name}.json").read_text())
        new = json.loads((fresh / "finetune" / f"{name}.json").read_text())
        assert new["results"] == old["results"], f"{name}: retrained, it scores differently"
    cols = ["claim", "estimate", "ci_low", "ci_high", "verdict"]
    pd.testing.assert_frame_equal(verdicts.verdicts(Table1Result.load(fresh))[cols], verdicts.verdicts(Table1Result.load(built))[cols])
