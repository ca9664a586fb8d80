"""Ctrl-C in the book build: wherever it lands while a chapter starts, one line and exit 130.

``python -m arithmech book --only data --no-html`` runs in its own process group and gets SIGINT at four points
of the chapter's start, as a terminal's Ctrl-C reaches every process of the group: while the runner imports,
right when it announces the chapter (the kernel starting), and 1 s and 3 s later (the kernel starting and running
its first cells; the chapter, its results already made, takes several seconds more). Each time the command prints one line on stderr and no traceback (nbclient's "Kernel died …" log and
asyncio's "Task exception was never retrieved" were the ones seen), exits 130, and leaves the chapter's source,
its executed copy and the checkout's git status as they were.
"""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CHAPTER = "data"
POINTS = ("importing", "announced", "announced+1s", "announced+3s")


def _digest(p: Path) -> str | None:
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None


def _state() -> tuple:
    status = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout
    return status, _digest(REPO / "book" / f"{CHAPTER}.md"), _digest(REPO / "_build" / "executed" / f"{CHAPTER}.ipynb")


def _interrupt(point: str) -> subprocess.CompletedProcess:
    """Start the chapter, send SIGINT to its process group at ``point``, return what it printed and its code."""
    p = subprocess.Popen(
        [sys.executable, "-m", "arithmech", "book", "--only", CHAPTER, "--no-html"], cwd=REPO, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background CI shell ignores SIGINT
    )
    out = ""
    if point == "importing":
        time.sleep(0.5)
    else:  # the runner prints "[1/1] data (…)" just before it starts the chapter's kernel
        assert p.stdout is not None
        out = p.stdout.readline()
        assert out.startswith(f"[1/1] {CHAPTER}"), out
        time.sleep(float(point.partition("+")[2].rstrip("s") or 0))
    assert p.poll() is None, f"the chapter ended before the interrupt at {point}: the point is too late"
    os.killpg(p.pid, signal.SIGINT)
    rest, err = p.communicate(timeout=180)
    return subprocess.CompletedProcess(p.args, p.returncode, out + rest, err)


@pytest.mark.parametrize("point", POINTS)
def test_ctrl_c_during_a_chapters_start_is_one_line_and_exit_130(point):
    """Protects the book runner's interrupt contract (one line, exit 130, no traceback, nothing touched)."""
    before = _state()
    r = _interrupt(point)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert r.returncode == 130, (point, r.returncode, r.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("interrupted:"), (point, r.stderr[-2000:])
    assert "Traceback" not in r.stdout + r.stderr
    assert _state() == before, point
