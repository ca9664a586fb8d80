"""Two writers on one results folder: the second is refused in one line, exit 2, while the
first holds the folder; the first's files are left as they were; once it dies the folder is free again."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .tools import REPO, cli, refused, snapshot

# A first writer stopped between its check and its write (the window where a second run used to slip in).
FIRST = ("import sys, time; from arithmech.core import results; results.check_writable(sys.argv[1], sys.argv[2], True);"
         "print('holding', flush=True); time.sleep(120)")


def _first_writer(folder, step):
    p = subprocess.Popen([sys.executable, "-c", FIRST, str(folder), step], stdout=subprocess.PIPE, text=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.stdout.readline().strip() == "holding"
    return p


def test_a_second_identify_is_refused_while_the_first_writes(tmp_path):
    """Protects one writer per folder (two identify runs on one --out once both reported success): while
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


# A first table1 / finetune run, stopped after it took the folder (its records are written under this hold).
FIRST_RECORDS = ("import sys, time; from arithmech.core import records; h = records.holding(sys.argv[1]); h.__enter__();"
                 "print('holding', flush=True); time.sleep(120)")


def _first_records_writer(folder):
    p = subprocess.Popen([sys.executable, "-c", FIRST_RECORDS, str(folder)], stdout=subprocess.PIPE, text=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.stdout.readline().strip() == "holding"
    return p


@pytest.mark.parametrize("argv", [
    ("table1", "--suite", "toy", "--steps", "1", "--seeds", "0,1", "--draws", "1"),
    ("finetune", "--mode", "full", "--max-steps", "1", "--benchmarks", "toy")])
def test_a_second_arms_or_finetune_run_is_refused_while_the_first_writes_records(identify_set, argv):
    """Protects the per-run records of the arms runner and of finetune (they were once written without the
    folder's lock, so two runs on one folder replaced each other's records): while a first run holds the folder,
    a second `table1` / `finetune` on it is refused in one line, exit 2, before any model loads, and the folder is
    left as it was."""
    first = _first_records_writer(identify_set)
    try:
        before = snapshot(identify_set)
        refused(cli(*argv, "--model", "embedded", "--results", str(identify_set), timeout=60),
                f"results folder '{identify_set}' is being written by another run")
        assert snapshot(identify_set) == before
    finally:
        first.kill()
        first.wait()


def test_a_record_write_is_refused_while_another_process_holds_the_folder(identify_set):
    """Protects records.write_finetune itself (the one place a fine-tune record is written): with the folder held
    by another process, writing a record raises FolderBusy and writes nothing; once that process is killed, the
    same write succeeds."""
    from arithmech.core import folderlock, records
    rec = records.finetune_record(model="embedded", mode="base", results={"x": records.measure(0.5)})
    first = _first_records_writer(identify_set)
    try:
        before = snapshot(identify_set)
        with pytest.raises(folderlock.FolderBusy, match="is being written by another run"):
            records.write_finetune(identify_set, rec)
        assert snapshot(identify_set) == before
    finally:
        first.kill()
        first.wait()
    records.write_finetune(identify_set, rec)
    assert records.read_finetune(identify_set, "base")["results"]["x"]["value"] == 0.5
