"""A results set moved into its folder as one transaction: the old complete set or the new one, never a mix.

A step's files and the folder's new ``run.json`` are written to a stage, ``<folder>/.pending-<step>/``
(:func:`fresh`); writing the stage's :data:`COMMIT` (atomically, last; :func:`commit`) is the commit point; then
the staged files are moved in, ``run.json`` first, the files the commit lists as gone are removed, and the stage
is dropped (:func:`finish`). A writer killed (SIGKILL) before its commit leaves the old set and a stage without
a commit; one killed after it leaves a committed stage. The next process that reads or writes the folder settles
either (:func:`settle`, under the folder's lock, and only when no live writer holds it): it drops the first and
finishes the second. :mod:`arithmech.core.results` calls it before every read and write, so what a reader sees is
one complete set. A stage is part of the folder and trusted for nothing: its commit is read bounded, and it may
name only the files of its own step (``names_of``).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from arithmech.core import folderlock, safe_read
from arithmech.core.atomic import atomic_json
from arithmech.core.inputs import quoted
from arithmech.core.safe_read import ResultsError

PENDING = ".pending-"
COMMIT = "COMMIT.json"
RUN = "run.json"  # the folder's manifest: staged beside the files, moved in first
NamesOf = Callable[[str], "list[str] | None"]  # step -> the files its stage may move in or remove (None: unknown)


def fresh(folder: Path, step: str) -> Path:
    """An empty stage for ``step`` in ``folder`` (a stage left by a run that died before its commit is dropped)."""
    stage = folder / f"{PENDING}{step}"
    drop(stage)
    stage.mkdir()
    return stage


def commit(stage: Path, step: str, files: list[str], remove: list[str]) -> None:
    """The commit point: from here the stage's ``files`` (and its run.json) replace the folder's, ``remove`` go."""
    atomic_json(stage / COMMIT, {"step": step, "files": files, "remove": remove})


def drop(stage: Path) -> None:
    """Remove a stage that never reached its commit (the old set stands); a link there is only unlinked."""
    if stage.is_symlink() or (os.path.lexists(stage) and not stage.is_dir()):
        stage.unlink()
    elif stage.is_dir():
        shutil.rmtree(stage)


def finish(folder: Path, stage: Path, names_of: NamesOf) -> None:
    """Move a committed stage's files in (``run.json`` first), remove the files its commit lists, drop the stage.
    Idempotent: a move done already is skipped, so a finish that is interrupted in turn is finished again."""
    where = stage / COMMIT
    try:
        plan = json.loads(safe_read.read_text(where, folder, cap=1 << 20))
    except (ValueError, RecursionError):
        plan = None
    step = stage.name[len(PENDING) :]
    allowed = names_of(step)
    if not (
        isinstance(plan, dict)
        and plan.get("step") == step
        and allowed is not None
        and all(isinstance(plan.get(k), list) and set(plan[k]) <= set(allowed) for k in ("files", "remove"))
    ):
        raise ResultsError(
            f"{quoted(where)} is not the commit of an interrupted {step!r} write of arithmech: delete "
            f"{quoted(stage)} and re-run the step"
        )
    for n in [RUN, *plan["files"]]:
        if os.path.lexists(stage / n):
            (folder / n).parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage / n, folder / n)
    for n in plan["remove"]:
        if n not in plan["files"]:
            (folder / n).unlink(missing_ok=True)
    shutil.rmtree(stage)


def settle(folder: str | Path, names_of: NamesOf) -> None:
    """Finish every committed stage in ``folder`` and drop every uncommitted one, under the folder's lock; nothing
    when there is none, or when another process holds the lock (a live writer finishes its own set). A stage
    that cannot be settled (a read-only folder) is one line naming the folder."""
    folder = Path(folder)
    try:
        stages = [p for p in folder.iterdir() if p.name.startswith(PENDING)]
    except OSError:
        return
    if not stages:
        return
    try:
        folderlock.acquire(folder)
    except folderlock.FolderBusy:
        return
    try:
        for stage in stages:
            if stage.is_dir() and not stage.is_symlink() and os.path.lexists(stage / COMMIT):
                finish(folder, stage, names_of)
            else:
                drop(stage)
    except OSError as e:
        raise ResultsError(
            f"{quoted(folder)} holds a set that a killed run left half moved in and it cannot be "
            f"finished here ({e.strerror}): re-run the step that writes it, where the folder is "
            "writable"
        ) from None
    finally:
        folderlock.release(folder)
