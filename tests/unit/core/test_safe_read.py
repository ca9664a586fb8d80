"""Reading a results folder anyone may have changed (arithmech.core.safe_read): regular files of the folder
only, each of bounded size, recorded names kept inside the folder, decoding errors named."""
from __future__ import annotations

import os
import time

import pytest

from arithmech.core import safe_read


def test_a_fifo_a_device_and_a_folder_are_refused_before_they_are_opened(tmp_path):
    """Protects readers from hanging or reading without end: a FIFO in place of a results file (no writer ever
    comes), /dev/zero and a folder are each refused at once, naming the path and what it is."""
    os.mkfifo(tmp_path / "effects.csv")
    (tmp_path / "sub").mkdir()
    t0 = time.monotonic()
    for path, kind in ((tmp_path / "effects.csv", "a FIFO"), ("/dev/zero", "a character device"), (tmp_path / "sub", "a folder")):
        with pytest.raises(safe_read.ResultsError, match=f"is {kind}, not a file"):
            safe_read.read_bytes(path)
    assert time.monotonic() - t0 < 2


def test_links_leading_out_of_the_folder_are_refused_and_links_inside_are_read(tmp_path):
    """Protects "only the folder's own files": a symlink to /dev/zero or to a file outside the folder is refused
    before it is opened; a symlink to another file of the folder is read."""
    folder = tmp_path / "m"
    folder.mkdir()
    (tmp_path / "secret.txt").write_text("not yours")
    (folder / "a.json").write_text("{}")
    (folder / "zero.json").symlink_to("/dev/zero")
    (folder / "out.json").symlink_to(tmp_path / "secret.txt")
    (folder / "same.json").symlink_to(folder / "a.json")
    for name in ("zero.json", "out.json"):
        with pytest.raises(safe_read.ResultsError, match="link leading out of its results folder"):
            safe_read.read_text(folder / name, folder)
    assert safe_read.read_text(folder / "same.json", folder) == "{}"


def test_a_file_past_the_cap_is_refused_and_undecodable_bytes_name_the_file(tmp_path):
    """Protects the size cap and the decoding message: a file one byte past the cap is refused with its size
    and the cap; bytes that are not UTF-8 are refused naming the file and the byte, not a bare UnicodeDecodeError."""
    (tmp_path / "big.csv").write_bytes(b"x" * 11)
    with pytest.raises(safe_read.ResultsError, match="has 11 bytes; a results file has at most 10"):
        safe_read.read_bytes(tmp_path / "big.csv", tmp_path, cap=10)
    assert safe_read.read_bytes(tmp_path / "big.csv", tmp_path, cap=11) == b"x" * 11
    (tmp_path / "prompts.jsonl").write_bytes(b'{"clean": "\xff\xfe"}\n')
    with pytest.raises(safe_read.ResultsError, match=r"prompts.jsonl' is not UTF-8 text \(invalid start byte at byte 11\)"):
        safe_read.read_text(tmp_path / "prompts.jsonl", tmp_path)


@pytest.mark.parametrize("name", ["/etc/passwd", "../secret.txt", "sub/../../secret.txt", "link/x.csv"])
def test_recorded_names_leading_out_of_the_folder_are_refused(tmp_path, name):
    """Protects recorded inputs (run.json's, a fine-tune record's): an absolute name, a ``..`` path or a path
    through a symlink leading out is refused naming the result file that records it; an inner name is kept."""
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "link").symlink_to(tmp_path)
    with pytest.raises(safe_read.ResultsError, match=r"'run.json' records the input .* a path outside its results folder"):
        safe_read.inside(folder, name, "run.json")
    assert safe_read.inside(folder, "effects.csv", "run.json") == folder / "effects.csv"
