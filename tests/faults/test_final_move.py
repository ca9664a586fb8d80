"""A run killed (SIGKILL) during the final move of its results set: the folder holds the old
complete set or the new complete set, never a mix, and the next run writes there as if nothing had happened.

The writer is a subprocess that writes a set through ``arithmech.core.results.write_step`` with ``os.replace``
wrapped to SIGKILL the process at its k-th move: a kill at a chosen point of the move, the same on every run,
with nothing in the package that exists only for tests. The moves of one set: 1 the commit of its stage,
2 ``run.json``, 3.. the step's files.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from .tools import REPO, snapshot

NEW = ("import os, signal, sys\n"
       "import pandas as pd\n"
       "from arithmech.core import results\n"
       "folder, k = sys.argv[1], int(sys.argv[2])\n"
       "real, moves = os.replace, []\n"
       "def replace(a, b):\n"
       "    moves.append(b)\n"
       "    if len(moves) == k:\n"
       "        os.kill(os.getpid(), signal.SIGKILL)\n"
       "    return real(a, b)\n"
       "os.replace = replace\n"
       "results.check_writable(folder, 'identify', True)\n"
       "effects = pd.DataFrame({'task': ['all'] * 2, 'layer': [0, 1], 'head': ['1', 'mlp'], 'effect': [-0.4, 0.2],\n"
       "                        'effect_lo': [-0.41, 0.1], 'effect_hi': [-0.39, 0.3]})\n"
       "results.write_step(folder, 'identify', {'effects.csv': effects,\n"
       "             'key_heads.json': {'task': 'all', 'threshold': -0.05, 'heads': [{'layer': 0, 'head': 1}]},\n"
       "             'prompts.jsonl': [{'clean': '1 + 2 =', 'corrupt': '1 @ 2 =', 'answer': '3', 'template': 't'}]},\n"
       "             {'parameters': {'seed': 1}}, model_name='embedded')\n"
       "print(len(moves))\n")
MOVES = 5           # the commit, run.json, effects.csv, key_heads.json, prompts.jsonl


def _write_new(folder, kill_at: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", NEW, str(folder), str(kill_at)], capture_output=True, text=True,
                          timeout=60, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.fixture
def old_and_new(identify_set, tmp_path):
    """The old set (``identify_set`` plus a knockout.csv the new set does not have) and, for comparison, the
    snapshot of the new set written whole into a copy of it."""
    import pandas as pd

    from arithmech.core import results
    knockout = pd.DataFrame({"task": ["all"], "positions": ["end"], "kind": ["head"], "order": ["effect-rank"],
                             "seed": [0], "k": [0], "accuracy": [1.0], "correct": [4], "n": [4], "ci_low": [0.51],
                             "ci_high": [1.0], "mean_source": ["template 4"]})
    files = results.read_step(identify_set, "identify")
    results.write_step(identify_set, "identify", {"effects.csv": files["effects"], "prompts.jsonl": files["prompts"],
                                            "key_heads.json": files["key_heads"], "knockout.csv": knockout},
                 {"parameters": {"seed": 0}}, model_name="embedded")
    whole = tmp_path / "whole" / "embedded"
    whole.parent.mkdir()
    subprocess.run(["cp", "-a", str(identify_set), str(whole)], check=True)
    p = _write_new(whole, 0)
    assert p.returncode == 0 and p.stdout.strip() == str(MOVES), p     # the count of moves this test relies on
    return snapshot(identify_set), snapshot(whole)


@pytest.mark.parametrize("kill_at", range(1, MOVES + 1))
def test_a_writer_killed_during_the_final_move_leaves_one_complete_set(identify_set, old_and_new, kill_at):
    """Protects set writes against a kill during the final move: a writer SIGKILLed at the commit (move 1)
    leaves the old set; one killed at any later move leaves a set that the next reader finishes. Either way what
    the next reader sees (every file checked against run.json) is byte for byte the old set or the new one, no
    stage is left, and a re-run of the write into the folder succeeds and gives the new set."""
    from arithmech.core import results
    old, new = old_and_new
    p = _write_new(identify_set, kill_at)
    assert p.returncode == -signal.SIGKILL, p                 # it died at that move, not before or after
    got = results.read_step(identify_set, "identify")               # finishes (or drops) what the killed run left
    assert snapshot(identify_set) == (old if kill_at == 1 else new)
    assert ("knockout" in got) == (kill_at == 1)              # the old set's extra file goes with the new set
    assert not list(identify_set.glob(".pending-*"))
    p = _write_new(identify_set, 0)                           # the re-run
    assert p.returncode == 0, p.stderr[-2000:]
    assert snapshot(identify_set) == new


def test_a_kill_after_the_commit_is_finished_by_the_next_writer_too(identify_set, old_and_new):
    """Protects the writer's side of the transaction: after a kill between two moves, the next writer of the
    folder (not a reader) settles the stage first, under its lock, then writes its own set: the folder ends as the
    new set, with no file of the killed run's left half moved."""
    old, new = old_and_new
    assert _write_new(identify_set, 3).returncode == -signal.SIGKILL
    assert list(identify_set.glob(".pending-*"))              # the killed run's committed stage is there
    p = _write_new(identify_set, 0)
    assert p.returncode == 0, p.stderr[-2000:]
    assert snapshot(identify_set) == new
