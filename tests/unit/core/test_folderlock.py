"""One writer per results folder (arithmech.core.folderlock): an OS lock on the folder, refused at once to a
second process, re-entrant inside one, dropped by the kernel when its holder dies."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from arithmech.core import folderlock

HOLD = "import sys, time; from arithmech.core import folderlock; folderlock.acquire(sys.argv[1]); print('held', flush=True); time.sleep(60)"


def _holder(folder):
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_a_second_process_is_refused_at_once_and_a_killed_holder_frees_the_folder(tmp_path):
    """Protects one writer per folder: while another process holds the folder, acquire refuses at once with a
    message naming the folder (quoted) and what to do; once that process is killed (SIGKILL: no clean-up runs)
    the folder can be taken."""
    folder = tmp_path / "m"
    p = _holder(folder)
    try:
        t0 = time.monotonic()
        with pytest.raises(folderlock.FolderBusy, match=f"results folder '{folder}' is being written by another run.*--results"):
            folderlock.acquire(folder)
        assert time.monotonic() - t0 < 1 and not folderlock.held(folder)
    finally:
        p.kill()
        p.wait()
    folderlock.acquire(folder)
    assert folderlock.held(folder)
    folderlock.release(folder)


def test_the_lock_is_reentrant_and_an_empty_folder_it_made_is_removed(tmp_path):
    """Protects re-entry and clean-up: a process acquiring twice holds until it released twice; a folder that
    acquiring created is removed when still empty at the last release, one holding files is kept."""
    folder = tmp_path / "new"
    folderlock.acquire(folder)
    folderlock.acquire(folder)
    folderlock.release(folder)
    assert folderlock.held(folder) and folder.is_dir()
    folderlock.release(folder)
    assert not folderlock.held(folder) and not folder.exists()
    folderlock.acquire(folder)
    (folder / "run.json").write_text("{}")
    folderlock.release(folder)
    assert (folder / "run.json").is_file()
