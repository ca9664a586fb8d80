"""One writer per results folder: an OS lock on the folder itself, dropped by the kernel when its holder ends.

Two runs writing one results folder at once would each report success while the one that finishes last
silently replaces the other's set. So a step that writes a set holds its folder's lock from the check before
any work (:func:`arithmech.core.results.check_writable`) until its files are moved in
(:func:`arithmech.core.results.write_step`), and a second writer started meanwhile is refused at once, in
one line naming the folder (:class:`FolderBusy`, a :class:`ValueError`: exit code 2 on the command line).

The lock is ``flock(2)`` on the folder's own directory descriptor, not on a lock file: it leaves nothing in
the folder, there is no stale lock file to clean up, and the kernel drops it when the process ends, however
it ends (SIGKILL, a crash): a killed run never blocks the next one. Inside one process it is re-entrant (a
step's check, its checkpoints and its write; a chapter's several steps): :func:`acquire` counts, and the
lock goes when :func:`release` has been called as often. A folder that acquiring had to create and that is
still empty at release (or when the process exits) is removed again, so a run refused later leaves no folder.
Where the platform has no ``fcntl`` (Windows) there is no lock and writers are not serialised.

>>> acquire(folder)          # FolderBusy when another process holds it
>>> ...                      # write
>>> release(folder)
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path

from arithmech.core.inputs import quoted

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None  # type: ignore[assignment]

# resolved folder -> [directory descriptor, how many holds this process has, whether acquire created it]
_HELD: dict[str, list] = {}


class FolderBusy(ValueError):
    """Another process is writing the results folder now."""


def _key(folder: Path) -> str:
    return os.path.realpath(folder)


def held(folder: str | Path) -> bool:
    """Whether this process holds ``folder``'s lock."""
    return _key(Path(folder)) in _HELD


def acquire(folder: str | Path) -> None:
    """Take ``folder``'s lock (creating the folder when it does not exist), or count one more hold when this
    process has it already. Raises :class:`FolderBusy` at once, without waiting, when another process holds it."""
    folder = Path(folder)
    if (h := _HELD.get(_key(folder))) is not None:
        h[1] += 1
        return
    created = not folder.is_dir()
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FolderBusy(
                f"results folder {quoted(folder)} is being written by another run right now: wait until "
                "it ends, or give this run another --results (identify: --out)"
            ) from None
        except OSError as e:
            os.close(fd)
            raise FolderBusy(
                f"results folder {quoted(folder)} cannot be locked ({e.strerror}): its file system has no "
                "file locks; give --results a folder on a local disk"
            ) from None
    _HELD[_key(folder)] = [fd, 1, created, str(folder)]


def release(folder: str | Path) -> None:
    """Give back one hold of ``folder``'s lock; the last one drops it (and removes the folder when acquiring
    created it and it is still empty). Releasing a folder this process does not hold does nothing."""
    key = _key(Path(folder))
    h = _HELD.get(key)
    if h is None:
        return
    h[1] -= 1
    if h[1] <= 0:
        _drop(key)


def _drop(key: str) -> None:
    fd, _, created, path = _HELD.pop(key)
    if created:
        try:
            os.rmdir(path)  # only when empty: under the lock still, so no writer is inside
        except OSError:
            pass
    os.close(fd)  # closing the descriptor drops the lock


@atexit.register
def _release_all() -> None:
    """At exit (a refused or failed run too): drop every hold left, removing the empty folders acquiring made.
    A killed process skips this; the kernel drops its locks all the same."""
    for key in list(_HELD):
        _drop(key)
