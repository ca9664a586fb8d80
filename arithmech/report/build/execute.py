"""The book's first phase: each chapter executed with papermill into its executed copy, atomically.

A chapter runs into ``_build/.papermill/<name>.ipynb`` (:func:`execute_chapter`) and replaces its executed copy
``_build/executed/<name>.ipynb`` (:func:`executed`) only when every cell succeeded; a failure stops the build
with the chapter, the cell and the error, and leaves the previous executed copy untouched (the failed run is
kept in ``_build/failed/``). The kernel runs with :func:`chapter_env` (valid ``OMP_NUM_THREADS``, no progress
bars, this checkout first on ``PYTHONPATH``); papermill's injected-parameters cell is tagged ``remove-cell``
(:func:`hide_injected`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

from arithmech.core.inputs import quoted, thread_env
from arithmech.core.progress import OFF
from arithmech.report.build.plan import BookError, Chapter, read_notebook


def chapter_env(environ=None) -> dict:
    """The environment a chapter's kernel runs with: ``environ`` (default ``os.environ``) with a valid
    ``OMP_NUM_THREADS`` (:func:`arithmech.core.inputs.thread_env`: an empty or invalid value made every
    chapter print ``libgomp: Invalid value ...``), no progress bars (``TQDM_DISABLE``) and no progress
    lines (``ARITHMECH_PROGRESS=0``, :mod:`arithmech.core.progress`). When the runner's ``arithmech`` comes from a
    source checkout, that checkout leads ``PYTHONPATH``: the chapters import the code the runner runs, even
    from a book root elsewhere (a test's temporary book) with another checkout installed in the venv."""
    env = thread_env(os.environ if environ is None else environ)
    env.pop("ARITHMECH_LAB", None)  # a book built from a `make lab` terminal: no lab-only outputs
    env.setdefault("TQDM_DISABLE", "1")
    env[OFF] = "0"
    src = Path(__file__).resolve().parents[3]  # the arithmech checkout this runner runs from
    if (src / "pyproject.toml").exists():
        env["PYTHONPATH"] = os.pathsep.join([str(src)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


BUILD = Path("_build")


EXECUTED = BUILD / "executed"  # the executed chapters, <name>.ipynb


def executed(root: Path, chapter: str | Path) -> Path:
    """Where the executed copy of a chapter (a name or its source path) lives: ``_build/executed/<name>.ipynb``."""
    return Path(root) / EXECUTED / f"{Path(chapter).stem}.ipynb"


def hide_injected(nb_path: Path) -> bool:
    """Tag papermill's ``injected-parameters`` cell of ``nb_path`` ``remove-cell``; True if it changed."""
    nb = json.loads(Path(nb_path).read_text())
    changed = False
    for cell in nb.get("cells", []):
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
            changed = True
    if changed:
        Path(nb_path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return changed


def execute_chapter(root: Path, chapter: Chapter, timeout: int | None = None, kernel: str | None = None) -> float:
    """Convert one chapter's source with jupytext, run it with papermill into a temporary file and move it
    over its executed copy (:func:`executed`) on success; its injected-parameters cell is tagged
    ``remove-cell`` (:func:`arithmech.report.build.execute.hide_injected`).

    Returns the wall time in seconds. On failure raises :class:`BookError` naming the chapter,
    the cell and the error; neither the source nor the previous executed copy is touched.
    """
    import papermill as pm  # lazy: the book extra
    from papermill.exceptions import PapermillExecutionError  # lazy: the book extra

    src = root / chapter.path
    work = root / BUILD / ".papermill"
    work.mkdir(parents=True, exist_ok=True)
    tmp = work / f"{chapter.name}.ipynb"
    dest = executed(root, chapter.name)
    kept = f"{quoted(chapter.path)} and {quoted(dest.relative_to(root))} were left as they were"
    t0 = time.perf_counter()
    try:
        nb = read_notebook(src)
    except Exception as e:  # unreadable source
        raise BookError(
            f"chapter {chapter.name!r} ({quoted(chapter.path)}) could not be read: {type(e).__name__}: {e}"
        ) from None
    saved = dict(os.environ)
    quiet = logging.getLogger("papermill")  # its client logs "Kernel died …" on an interrupt; failures raise below
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    os.environ.clear()
    os.environ.update(chapter_env(saved))  # the kernel inherits it (see chapter_env)
    try:
        pm.execute_notebook(
            nb,
            str(tmp),
            parameters=chapter.parameters,
            cwd=str(root),
            kernel_name=kernel,
            execution_timeout=timeout,
            progress_bar=False,
            log_output=False,
            request_save_on_cell_execute=False,
            # the kernel's own log is noise here (transport warnings, the interrupt
            # at shutdown); cell errors are in the notebook and in our message
            extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
        )
    except PapermillExecutionError as e:
        failed = root / BUILD / "failed" / f"{chapter.name}.ipynb"
        failed.parent.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.move(str(tmp), failed)
        first = next((l for l in (e.source or "").splitlines() if l.strip()), "")
        raise BookError(
            f"chapter {chapter.name!r} ({quoted(chapter.path)}) failed in cell {e.cell_index + 1} "
            f"(counting the injected-parameters cell), whose code starts with:\n    {first}\n"
            f"  {e.ename}: {e.evalue}\n"
            f"{kept}; the failed run is in {quoted(failed.relative_to(root))}"
        ) from None
    except Exception as e:  # kernel died, timeout, ...
        if tmp.exists():
            tmp.unlink()
        raise BookError(
            f"chapter {chapter.name!r} ({quoted(chapter.path)}) could not be executed: {type(e).__name__}: {e}\n{kept}"
        ) from None
    finally:
        os.environ.clear()
        os.environ.update(saved)
        quiet.setLevel(level)
    hide_injected(tmp)
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, dest)
    return time.perf_counter() - t0
