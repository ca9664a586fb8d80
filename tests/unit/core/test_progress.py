"""Unit tests of ``arithmech/core/progress.py``."""
from __future__ import annotations

import io

from arithmech.core import progress


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_count_and_time_left_on_a_terminal_only(monkeypatch):
    """Protects: on a terminal, each unit rewrites one line ``label i/n (note), ~Xs left`` with the estimate
    = mean time per unit x units left (clock faked: 2 s per unit, 3 of 5 done → 4 s left), and the line is
    cleared at the end; on a non-terminal stream (a log, a pipe, a page) and with ARITHMECH_PROGRESS=0
    nothing at all is written."""
    clock = iter(float(x) for x in range(0, 100, 2))
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    monkeypatch.delenv(progress.OFF, raising=False)
    tty = FakeTTY()
    with progress.Progress("identify", 5, stream=tty, every=0) as bar:   # t0 = 0
        for i in range(3):
            bar.advance(note=f"task {i}")                          # t = 2, 4, 6 (one clock read each)
    out = tty.getvalue()
    assert "\ridentify 0/5" in out and "\ridentify 1/5 (task 0), ~" in out
    assert "identify 3/5 (task 2), ~" in out
    assert out.endswith("\r") and out.count("\r") >= 5
    assert progress._duration(4) == "4s" and progress._duration(125) == "2m05s" and progress._duration(3700) == "1h01m"
    plain = io.StringIO()
    assert list(progress.progress(range(4), "train-embedded", stream=plain)) == [0, 1, 2, 3] and plain.getvalue() == ""
    monkeypatch.setenv(progress.OFF, "0")
    quiet = FakeTTY()
    assert list(progress.progress(range(2), "book", stream=quiet)) == [0, 1] and quiet.getvalue() == ""


def test_progress_estimate_is_time_per_unit_times_units_left(monkeypatch):
    """Protects the estimate itself: 3 units done in 6 s of 5 → ``~4s left`` (reference: 6/3 x 2)."""
    t = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: t[0])
    bar = progress.Progress("x", 5, stream=io.StringIO())
    bar.done, t[0] = 3, 6.0
    assert bar.line() == "x 3/5, ~4s left"


def test_announce_writes_the_estimate_once_on_its_own_line_on_a_terminal_only(monkeypatch):
    """Protects: a step's estimate (:func:`arithmech.core.progress.announce`) is one line ``label: text`` on a
    terminal, before and apart from the progress lines (which no longer carry it); nothing on a non-terminal
    stream, with ARITHMECH_PROGRESS=0, or for an empty estimate (a step that made none)."""
    monkeypatch.delenv(progress.OFF, raising=False)
    tty, plain = FakeTTY(), io.StringIO()
    progress.announce("identify", "est. peak 500 MiB, ~1,000 forwards", stream=tty)
    progress.announce("identify", "est. peak 500 MiB, ~1,000 forwards", stream=plain)
    progress.announce("identify", "", stream=tty)
    assert tty.getvalue() == "identify: est. peak 500 MiB, ~1,000 forwards\n" and plain.getvalue() == ""
    with progress.Progress("identify", 2, stream=tty, every=0) as bar:
        bar.advance(note="a")
        assert bar.line().startswith("identify 1/2 (a)") and "est." not in bar.line()
    monkeypatch.setenv(progress.OFF, "0")
    quiet = FakeTTY()
    progress.announce("identify", "est. peak 500 MiB", stream=quiet)
    assert quiet.getvalue() == ""
