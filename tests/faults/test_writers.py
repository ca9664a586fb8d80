"""Two writers on one results folder (issue #28, item 3): the second is refused in one line, exit 2, while the
first holds the folder; the first's files are left as they were; once it dies the folder is free again."""
from __future__ import annotations

import os
import subprocess
import sys

from .tools import REPO, cli, refused, snapshot

# A first writer stopped between its check and its write (the window where a second run used to slip in).
FIRST = ("import sys, time; from arithmech.core import results as R; R.check_writable(sys.argv[1], sys.argv[2], True);"
         "print('holding', flush=True); time.sleep(120)")


def _first_writer(folder, step):
    p = subprocess.Popen([sys.executable, "-c", FIRST, str(folder), step], stdout=subprocess.PIPE, text=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.stdout.readline().strip() == "holding"
    return p


def test_a_second_identify_is_refused_while_the_first_writes(tmp_path):
    """Protects one writer per folder (issue #28: two identify runs on one --out both reported success): while
    a first identify holds the folder, a second `identify --out` of another seed is refused before any model
    loads, naming the folder; after the first is killed (SIGKILL) the lock is gone with it."""
    folder = tmp_path / "out"
    first = _first_writer(folder, "identify")
    try:
        (folder / "SENTINEL").write_text("the first run's\n")
        before = snapshot(folder)
        refused(cli("identify", "--model", "embedded", "--out", str(folder), "--seed", "1", "--task", "addition",
                    "--n-samples", "4", "--no-knockout", timeout=60),
                f"results folder '{folder}' is being written by another run")
        assert snapshot(folder) == before
    finally:
        first.kill()
        first.wait()
    from arithmech.core import folderlock
    folderlock.acquire(folder)                   # the killed writer's lock went with it
    folderlock.release(folder)


def test_analyze_is_refused_while_another_analyze_writes(identify_set):
    """Protects the lock for every step that writes a set: a second analyze on a folder another analyze holds
    is refused in one line before its model loads, and the identify set beside it is untouched."""
    first = _first_writer(identify_set, "analyze")
    try:
        before = snapshot(identify_set)
        refused(cli("analyze", "--model", "embedded", "--results", str(identify_set), timeout=60),
                "is being written by another run")
        assert snapshot(identify_set) == before
    finally:
        first.kill()
        first.wait()
