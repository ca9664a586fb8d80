"""Reading a results folder that anyone may have changed: only its own regular files, each of bounded size.

A results folder is written by arithmech but lies on a disk where anything can replace a file: a FIFO
(reading it waits for a writer that never comes), a device or a symlink to one (``/dev/zero`` reads without
end), a symlink leading out of the folder, a file of many gigabytes, bytes that are not UTF-8; and a result
file records other files by name (``run.json``'s and a fine-tune record's ``inputs``), names that an edit can
point anywhere (``/etc/shadow``, ``../../x``). So every read of the folder goes through here:

* :func:`inside` — a name recorded in a result file is a path *inside* the folder (not absolute, no ``..``
  leading out, no symlink leading out), checked before anything is opened;
* :func:`check_file` — before opening, ``os.stat`` says a regular file (``stat.S_ISREG``: no FIFO, device,
  socket or folder) of at most :data:`MAX_FILE_BYTES`, reached without leaving the folder;
* :func:`read_bytes` / :func:`read_text` / :func:`sha256` — open without blocking (``O_NONBLOCK``: a FIFO
  swapped in after the check still cannot hang the reader), check the open file again (``fstat``), read at
  most the cap; a decoding error names the file.

Each refusal is one :class:`ResultsError` naming the file (quoted: :func:`arithmech.core.inputs.quoted`)
and what to do. :mod:`arithmech.core.results`, :mod:`~arithmech.core.records` and
:mod:`~arithmech.core.checkpoints` read through this module.

>>> text = read_text(folder / "run.json", folder)       # ResultsError when it is a FIFO, a link out, …
>>> path = inside(folder, recorded_name, "run.json")     # ResultsError when the name leads out
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from arithmech.core.inputs import quoted

# The largest file a run within the bounds writes (arithmech/pipeline/config_base.py): prompts.jsonl at 4 tasks x 50,000
# prompts x 16 solved examples is ~3.5 KB a row, ~700 MB; no results file or checkpoint unit is larger.
MAX_FILE_BYTES = 1 << 30


class ResultsError(ValueError):
    """A results file is missing, malformed, incomplete, stale or not a file; the message names it and the fix."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def inside(folder: str | Path, name: str, recorded_in: str | Path) -> Path:
    """``folder / name`` for a file ``name`` recorded in the result file ``recorded_in``, refused (without
    opening anything) when ``name`` is absolute or leads out of ``folder`` (``..``, a symlink)."""
    folder = Path(folder)
    root, path = folder.resolve(), (folder / str(name)).resolve()
    if Path(str(name)).is_absolute() or not _within(path, root) or path == root:
        raise ResultsError(
            f"{quoted(recorded_in)} records the input {quoted(name)}, a path outside its results folder: "
            "it was edited; delete it and re-run the step that wrote it"
        )
    return folder / str(name)


def check_file(path: str | Path, folder: str | Path | None = None, cap: int = MAX_FILE_BYTES) -> os.stat_result:
    """The ``os.stat`` of ``path`` once it is known to be a regular file of at most ``cap`` bytes that, where
    ``folder`` is given, lies inside it (a symlink may point only to another file of the folder). Nothing is
    opened. Raises :class:`FileNotFoundError` when it is missing and :class:`ResultsError` otherwise."""
    path = Path(path)
    try:
        os.lstat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{quoted(path)} does not exist") from None
    if folder is not None and not _within(path.resolve(), Path(folder).resolve()):
        raise ResultsError(
            f"{quoted(path)} is a link leading out of its results folder {quoted(folder)}: a results "
            "folder holds only its own files; remove the link and re-run the step that writes it"
        )
    try:
        st = os.stat(path)
    except OSError as e:  # a dangling or looping link
        raise ResultsError(
            f"{quoted(path)} cannot be read ({e.strerror}): remove it and re-run the step that writes it"
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise ResultsError(
            f"{quoted(path)} is {_kind(st.st_mode)}, not a file: a results folder holds only regular "
            "files; remove it and re-run the step that writes it"
        )
    if st.st_size > cap:
        raise ResultsError(
            f"{quoted(path)} has {st.st_size:,} bytes; a results file has at most {cap:,}: it is not "
            "a results file; remove it and re-run the step that writes it"
        )
    return st


def read_bytes(path: str | Path, folder: str | Path | None = None, cap: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path``, after :func:`check_file`; opened without blocking and checked again once open
    (a file swapped for a FIFO or device between the check and the open is refused, not read)."""
    check_file(path, folder, cap)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ResultsError(
                f"{quoted(path)} is {_kind(st.st_mode)}, not a file: remove it and re-run the step that writes it"
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(cap + 1)
    finally:
        os.close(fd)
    if len(data) > cap:
        raise ResultsError(
            f"{quoted(path)} grew past {cap:,} bytes while it was read: remove it and re-run the step that writes it"
        )
    return data


def decode(data: bytes, path: str | Path) -> str:
    """``data`` (the bytes of ``path``) as UTF-8 text; bytes that are not are refused naming ``path``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ResultsError(
            f"{quoted(path)} is not UTF-8 text ({e.reason} at byte {e.start:,}): it is damaged or not "
            "a results file; re-run the step that writes it"
        ) from None


def read_text(path: str | Path, folder: str | Path | None = None, cap: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of ``path`` (:func:`read_bytes`, :func:`decode`)."""
    return decode(read_bytes(path, folder, cap), path)


def sha256(path: str | Path, folder: str | Path | None = None, cap: int = MAX_FILE_BYTES) -> str:
    """The sha256 hex digest of ``path``'s bytes, read as :func:`read_bytes` reads them."""
    return hashlib.sha256(read_bytes(path, folder, cap)).hexdigest()
