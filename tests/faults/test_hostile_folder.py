"""A results folder turned against its reader: each hostile file is refused in one line,
exit 2, within seconds, naming the file, and the folder is left exactly as it was."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from .tools import REPO, cli, refused, snapshot


def test_a_fifo_in_place_of_prompts_jsonl_is_refused_at_once(identify_set):
    """Protects analyze from hanging (a FIFO once hung it): prompts.jsonl replaced by a FIFO nobody writes
    is refused before the model loads, naming the file and what it is; the folder keeps every entry as it was."""
    (identify_set / "prompts.jsonl").unlink()
    os.mkfifo(identify_set / "prompts.jsonl")
    before = snapshot(identify_set)
    refused(cli("analyze", "--model", "embedded", "--results", str(identify_set), timeout=60),
            "prompts.jsonl' is a FIFO, not a file")
    assert snapshot(identify_set) == before


def test_a_link_to_dev_zero_is_refused_not_read(identify_set):
    """Protects beyond from reading without end (a symlink to a device): effects.csv replaced by a
    symlink to /dev/zero is refused as a link leading out of the folder; the folder is unchanged."""
    (identify_set / "effects.csv").unlink()
    (identify_set / "effects.csv").symlink_to("/dev/zero")
    before = snapshot(identify_set)
    refused(cli("beyond", "--model", "embedded", "--results", str(identify_set), timeout=60),
            "effects.csv' is a link leading out of its results folder")
    assert snapshot(identify_set) == before


def test_undecodable_prompts_are_refused_naming_the_file(identify_set):
    """Protects the decoding message (once refused without naming the file): prompts.jsonl holding bytes
    that are not UTF-8 is refused naming prompts.jsonl and the byte; nothing is written."""
    (identify_set / "prompts.jsonl").write_bytes(b'{"clean": "\xff"}\n')
    before = snapshot(identify_set)
    refused(cli("analyze", "--model", "embedded", "--results", str(identify_set), timeout=60),
            "prompts.jsonl' is not UTF-8 text")
    assert snapshot(identify_set) == before


def test_a_truncated_effects_csv_stops_analyze_before_it_writes(identify_set):
    """Protects "every input checked before anything is written" (a truncated effects.csv once passed
    analyze when a key head made it unneeded, and analyze wrote beside the damaged set): analyze refuses it
    naming effects.csv, and writes no file of its own."""
    text = (identify_set / "effects.csv").read_text()
    (identify_set / "effects.csv").write_text(text[: len(text) // 2])
    before = snapshot(identify_set)
    refused(cli("analyze", "--model", "embedded", "--results", str(identify_set), timeout=60), "effects.csv'")
    assert snapshot(identify_set) == before


def test_a_record_naming_a_fifo_outside_the_folder_is_refused_without_opening_it(tmp_path):
    """Protects recorded paths (table1-arms once opened and hashed a recorded input outside the folder): a
    fine-tune record whose inputs name a FIFO outside the folder is refused naming the record, at once (opening
    the FIFO would block this reader, which the timeout would catch)."""
    folder = tmp_path / "results" / "embedded"
    (folder / "finetune").mkdir(parents=True)
    os.mkfifo(tmp_path / "pipe")
    from arithmech.core import records
    rec = records.finetune_record(model="embedded", mode="base", results={"x": records.measure(0.5)})
    (folder / "finetune" / "base.json").write_text(json.dumps({**rec, "inputs": {str(tmp_path / "pipe"): "0" * 64}}))
    before = snapshot(tmp_path)
    code = ("import sys; from arithmech.core import records\n"
            "try: records.finetune_records(sys.argv[1])\n"
            "except ValueError as e: print(e); sys.exit(2)")
    p = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=30,
                       cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 2 and "base.json' records the input" in p.stdout and "a path outside" in p.stdout, p
    assert snapshot(tmp_path) == before
