"""Progress and an estimate of the time left, on a terminal only.

Long commands (identify on a real model, Table 1, the book build, ``train-embedded``) report where they
are on one rewritten stderr line::

    identify 3/9 (patching: addition), ~41s left

The line is written only when the stream is a terminal (``isatty()``): nothing goes to a log file, a
pipe, a test's captured output, or a chapter's page (a papermill kernel's stderr is not a terminal, and
the book runner also sets ``ARITHMECH_PROGRESS=0`` for its kernels). The estimate is the mean time per
finished unit times the units left. A step announces its estimate of memory and forward passes
(:mod:`arithmech.core.estimate`) once, on its own line, before it starts (:func:`announce`; the same rule)::

    identify: est. peak 582 MiB, ~27,616 forwards

>>> with Progress("table1", total=3) as p:
...     for mode in ("base", "full", "precise"):
...         run(mode); p.advance(note=mode)
>>> for step in progress(range(steps), "train-embedded"): ...
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")
OFF = "ARITHMECH_PROGRESS"  # "0": never show progress (set by the book runner for its kernels)


def _shown(stream: TextIO) -> bool:
    """Whether progress goes to ``stream``: a terminal, and ``ARITHMECH_PROGRESS`` is not ``"0"``."""
    return os.environ.get(OFF, "1") != "0" and bool(getattr(stream, "isatty", lambda: False)())


def announce(label: str, text: str, stream: TextIO | None = None) -> None:
    """``label: text`` on its own line of ``stream`` (default ``sys.stderr``) when progress is shown there
    (a step's estimate, before its progress lines); nothing when ``text`` is empty."""
    stream = stream if stream is not None else sys.stderr
    if text and _shown(stream):
        stream.write(f"{label}: {text}\n")
        stream.flush()


def _duration(s: float) -> str:
    s = max(0, int(round(s)))
    return f"{s}s" if s < 60 else (f"{s // 60}m{s % 60:02d}s" if s < 3600 else f"{s // 3600}h{s % 3600 // 60:02d}m")


class Progress:
    """``label i/total (note), ~Xs left`` on ``stream`` (default ``sys.stderr``) when it is a terminal.

    ``advance(k, note)`` after each finished unit; the line is rewritten at most every ``every``
    seconds (and at the last unit); leaving the block clears it. Silent otherwise."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None, every: float = 0.5):
        self.label, self.total, self.every = label, max(0, int(total)), every
        self.stream = stream if stream is not None else sys.stderr
        self.done, self.note = 0, ""
        self.t0 = self._shown = time.perf_counter()
        self.active = _shown(self.stream)
        self._width = 0

    def line(self) -> str:
        """The text shown now: position, note, and the estimate once a unit has finished."""
        left = ""
        if 0 < self.done < self.total:
            per = (time.perf_counter() - self.t0) / self.done
            left = f", ~{_duration(per * (self.total - self.done))} left"
        note = f" ({self.note})" if self.note else ""
        return f"{self.label} {self.done}/{self.total}{note}{left}"

    def advance(self, k: int = 1, note: str | None = None) -> None:
        self.done = min(self.total, self.done + k)
        if note is not None:
            self.note = note
        now = time.perf_counter()
        if self.active and (now - self._shown >= self.every or self.done >= self.total or self.done == k):
            self._write(self.line())
            self._shown = now

    def _write(self, text: str) -> None:
        pad = max(0, self._width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._width = len(text)

    def __enter__(self) -> Progress:
        if self.active:
            self._write(self.line())
        return self

    def __exit__(self, *exc) -> None:
        if self.active and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()


def progress(items: Iterable[T], label: str, total: int | None = None, stream: TextIO | None = None) -> Iterator[T]:
    """``items``, showing ``label i/n, ~Xs left`` while they are consumed (see :class:`Progress`)."""
    n = total if total is not None else len(items)  # type: ignore[arg-type]
    with Progress(label, n, stream) as p:
        for x in items:
            yield x
            p.advance()
