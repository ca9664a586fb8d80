"""The results folder ``results/<model>/``: the one contract between commands and chapters.

Every file a step writes is declared once in :data:`FILES` (:mod:`arithmech.core.result_files`: its step, format,
required columns or keys, and the files it is computed from). This module alone writes and reads them:

* **one model, one folder** — :func:`folder_name` turns a model spec into the folder's name and
  :func:`model_folder` resolves ``--results``, which may name the results *root*
  (``results`` → ``results/<model>``) or the model's folder itself (``results/embedded``), in every
  command;
* **a step's files are one set** — :func:`write_step` stages them with the new ``run.json`` manifest
  (``steps.<step>.files``: name → sha256) in ``<folder>/.pending-<step>/``, commits the stage, then moves
  them in; a run killed during the move leaves a committed stage that the next reader or writer finishes
  (:func:`finish_interrupted`), so the folder holds the old complete set or the new one, never a mix. A reader
  that finds a file whose hash differs from the manifest knows the set was edited, and says so;
* **derived files know their inputs** — a step records the sha256 of each input it read
  (``steps.<step>.inputs``); :func:`read` refuses a file whose inputs changed since (e.g. analyze's
  CSVs after identify was re-run), naming the step to re-run;
* **malformed files are named** — missing columns, no rows, unparsable: one :class:`ResultsError`;
* **never overwrite another run silently** — :func:`check_writable` refuses a step whose files exist
  unless ``overwrite`` is given, and never touches files of other steps;
* **one writer at a time** — a step holds the folder's lock (:mod:`arithmech.core.folderlock`, an OS lock
  the kernel drops when the process ends) from :func:`check_writable` (or, for a folder not made yet, from
  its :func:`checkpoints` or its write) until :func:`write_step` has moved its files in: a second writer is
  refused in one line, and :func:`write_step` checks again under the lock, at the final move, that no set of
  the step appeared meanwhile unless the step was allowed to replace it;
* **the reader trusts nothing in the folder** — every file is read through :mod:`arithmech.core.safe_read`:
  only regular files inside the folder, each at most ``MAX_FILE_BYTES``, checked before they are opened (a
  FIFO or ``/dev/zero`` behind a link is refused, not read); a name recorded in ``run.json`` is opened only
  inside the folder; undecodable bytes are refused naming the file.

Fine-tune records (``finetune/<arm>.json``) have one format for every model and runner:
:mod:`arithmech.core.records`.

Example::

    >>> folder = model_folder("results", "embedded")            # results/embedded
    >>> write_step(folder, "identify", {"effects.csv": df, ...}, record={"parameters": {...}})
    >>> effects = read(folder, "effects.csv")
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from arithmech.core import folderlock, safe_read, staging
from arithmech.core.atomic import dumps, sha256
from arithmech.core.checkpoints import Checkpoints
from arithmech.core.inputs import quoted
from arithmech.core.result_files import FILES, STEPS, STR_COLUMNS, WRITTEN_BY
from arithmech.core.safe_read import ResultsError

SCHEMA_VERSION = 1
RUN = "run.json"


# ----------------------------------------------------------------------------------- locations
def folder_name(model_name: str) -> str:
    """The results-folder name of a model spec: the alias itself, the hub id's or folder's last part
    (dots kept: ``Qwen/Qwen2.5-0.5B`` → ``Qwen2.5-0.5B``), or a ``.gguf`` file's name without it.
    A spec with no name of its own (``.``, ``/``) is resolved to the folder it points at."""
    p = Path(str(model_name).rstrip("/") or "/")
    name = p.name or p.resolve().name
    name = name[: -len(".gguf")] if name.endswith(".gguf") else name
    if not name or name in (".", ".."):
        raise ValueError(f"--model {model_name!r} gives no results-folder name: name the model's folder or alias")
    return name


def model_folder(results: str | Path, model_name: str) -> Path:
    """``--results`` as every command reads it: the model's folder when its last part is the model's
    folder name or it already holds a ``run.json``, else the results root (→ ``results/<name>``).
    A folder whose ``run.json`` belongs to another model is refused (no model's files beside another's)."""
    p = Path(results)
    folder = p if p.name == folder_name(model_name) or (p / RUN).is_file() else p / folder_name(model_name)
    owner = read_run(folder).get("model") if (folder / RUN).is_file() else None
    if owner is not None and folder_name(owner) != folder_name(model_name):
        raise ValueError(
            f"{quoted(folder)} holds the results of model {owner!r}, not {model_name!r}: give --results the "
            "results root or this model's own folder"
        )
    return folder


def _serialise(name: str, obj: Any) -> str:
    kind = FILES[name].kind if name in FILES else Path(name).suffix.lstrip(".")
    if kind == "csv":
        if not isinstance(obj, pd.DataFrame):
            raise TypeError(f"{name}: expected a DataFrame, got {type(obj).__name__}")
        return obj.to_csv(index=False, float_format="%.8g")
    if kind == "jsonl":
        rows = [r if isinstance(r, dict) else r.to_json() for r in obj]
        return "".join(json.dumps(r) + "\n" for r in rows)
    return dumps(obj)


# ------------------------------------------------------------------------------------ manifest
def read_run(folder: str | Path) -> dict:
    """``run.json``: ``{"schema_version", "model", "steps": {step: record}}`` (empty when absent)."""
    p = Path(folder) / RUN
    if not os.path.lexists(p):
        return {"schema_version": SCHEMA_VERSION, "steps": {}}
    try:
        obj = json.loads(safe_read.read_text(p, folder))
    except json.JSONDecodeError as e:
        raise ResultsError(
            f"{quoted(p)} is not valid JSON ({e.msg}, line {e.lineno}): delete it and re-run the steps"
        ) from None
    except RecursionError:
        raise ResultsError(
            f"{quoted(p)} nests JSON too deeply to be a run.json: delete it and re-run the steps"
        ) from None
    if (
        not isinstance(obj, dict)
        or obj.get("schema_version") != SCHEMA_VERSION
        or not isinstance(obj.get("steps"), dict)
    ):
        raise ResultsError(
            f"{quoted(p)} is not a run.json of schema version {SCHEMA_VERSION} (written by an older "
            "arithmech?): re-run the steps into a new results folder"
        )
    return obj


def step_files(step: str) -> list[str]:
    return [n for n, s in FILES.items() if s.step == step]


# The steps this process is writing: (resolved folder, step) -> {"overwrite": whether the step may replace its
# files, "held": whether it holds the folder's lock}. Set by check_writable, ended by write_step.
_WRITING: dict[tuple[str, str], dict] = {}


def _writing_key(folder: Path, step: str) -> tuple[str, str]:
    return os.path.realpath(folder), step


def _hold(folder: Path, step: str) -> None:
    """Hold ``folder``'s writer lock for ``step`` (taken once, kept until :func:`write_step` ends) and check
    under it that no file of ``step`` is there, unless the step's :func:`check_writable` allowed replacing
    them (a write without a check replaces: a chapter's ``ensure``). On a refusal nothing stays held."""
    s = _WRITING.setdefault(_writing_key(folder, step), {"overwrite": True, "held": False})
    try:
        if not s["held"]:
            folderlock.acquire(folder)  # FolderBusy: another process writes here now
            s["held"] = True
        finish_interrupted(folder)  # a set a killed writer left half moved in
        present = [n for n in step_files(step) if os.path.lexists(folder / n)]
        if present and not s["overwrite"]:
            raise ValueError(
                f"{quoted(folder)} already holds {step} results ({', '.join(present[:3])}…): pass "
                "--overwrite to replace them (only that step's files are replaced) or choose another --results"
            )
    except BaseException:
        _let_go(folder, step)
        raise


def _let_go(folder: Path, step: str) -> None:
    s = _WRITING.pop(_writing_key(folder, step), None)
    if s is not None and s["held"]:
        folderlock.release(folder)


def end_writes() -> None:
    """Let go of every folder lock this process still holds for a step that never reached its
    :func:`write_step` (it failed or was refused on the way): the command line calls it when a command ends,
    so a refused run leaves no hold, and no empty folder that its check made."""
    for folder, step in list(_WRITING):
        _let_go(Path(folder), step)


def check_writable(folder: str | Path, step: str, overwrite: bool = False) -> None:
    """Refuse (before any work) to write ``step`` into ``folder`` when that step's files are already
    there, unless ``overwrite``; refuse a ``folder`` that is, or lies under, an existing file; and refuse
    a folder another run is writing now (:class:`arithmech.core.folderlock.FolderBusy`).

    From here the step holds the folder's lock until its :func:`write_step` ends (or the process does): where
    the folder or its parent exists (a folder made here and left empty is removed again at release or exit);
    a folder deeper down is locked by the step's :func:`checkpoints` or :func:`write_step`, which make it."""
    folder = Path(folder)
    for p in (folder, *folder.parents):
        if p.exists() and not p.is_dir():
            raise ValueError(
                f"results folder {quoted(folder)}: {quoted(p)} is an existing file; choose another --results"
            )
    _WRITING.setdefault(_writing_key(folder, step), {"held": False})["overwrite"] = overwrite
    if folder.is_dir() or folder.parent.is_dir():
        _hold(folder, step)


def write_step(
    folder: str | Path, step: str, files: dict[str, Any], record: dict, model_name: str | None = None
) -> Path:
    """Write one step's ``files`` (name → DataFrame / dict / list of rows) into ``folder`` as one set.

    The files and the new ``run.json`` (the step's ``record``, the sha256 of each new file and of each declared
    input as read now) are staged in ``<folder>/.pending-<step>/`` and committed there before they are moved in
    (:func:`_move_in`): a run killed at any point of the move leaves the old complete set or, finished by the
    next reader or writer, the new one, never a mix. A file of this step that this run does not write (e.g.
    ``knockout.csv`` after ``identify --no-knockout``) is removed, so no file of an earlier run stays beside the new
    set. Files of other steps are never touched.
    """
    folder = Path(folder)
    unknown = [n for n in files if n not in FILES or FILES[n].step != step]
    if unknown:
        raise ValueError(f"{unknown} are not files of step {step!r} (see arithmech.core.results.FILES)")
    try:
        texts = {n: _serialise(n, obj) for n, obj in files.items()}
        for n, t in texts.items():
            _validate(n, t, folder / n)
        _hold(folder, step)  # the lock (made here when the folder is new) and the final check
        _move_in(folder, step, texts, record, model_name)
    finally:
        _let_go(folder, step)
    return folder


def _move_in(folder: Path, step: str, texts: dict[str, str], record: dict, model_name: str | None) -> None:
    """:func:`write_step`'s moves, under the folder's lock, as one transaction (:mod:`arithmech.core.staging`): the
    new files and the new ``run.json`` are staged in ``<folder>/.pending-<step>/`` and committed there, then moved
    in, this step's files of an earlier run that this run does not have removed. A run killed before the commit
    leaves the old set; one killed after it leaves a stage the next reader or writer finishes
    (:func:`finish_interrupted`): the folder holds the old complete set or the new one, never a mix."""
    inputs = sorted({i for n in texts for i in FILES[n].inputs if i not in texts})
    in_hashes = {i: safe_read.sha256(folder / i, folder) for i in inputs if os.path.lexists(folder / i)}
    stage = staging.fresh(folder, step)
    for n, t in texts.items():
        (stage / n).parent.mkdir(parents=True, exist_ok=True)  # finetune/table1.json
        (stage / n).write_text(t)
    hashes = {n: sha256(stage / n) for n in texts}
    run = read_run(folder)
    if model_name is not None:
        run["model"] = model_name
    formats = {n: FILES[n].version for n in texts}
    run["steps"][step] = {**record, "files": hashes, "inputs": in_hashes, "formats": formats}
    (stage / RUN).write_text(dumps(run))
    staging.commit(stage, step, sorted(texts), [n for n in step_files(step) if n not in texts])
    staging.finish(folder, stage, _step_names)


def _step_names(step: str) -> list[str] | None:
    """The files a stage of ``step`` may move in or remove (None: no such step)."""
    return step_files(step) if step in STEPS else None


def finish_interrupted(folder: str | Path) -> None:
    """Settle the sets a killed writer left on their way in: finish a committed one, drop one that never reached
    its commit (:func:`arithmech.core.staging.settle`, under the folder's lock, only when no other process holds
    it). Every read and every write of the folder calls it first, so what they see is one complete set."""
    staging.settle(folder, _step_names)


def checkpoints(folder: str | Path, step: str, args: dict):
    """The checkpoints of ``step`` run with ``args`` in ``folder``: ``folder/.checkpoints/<step>-<hash>/``
    (:class:`arithmech.core.checkpoints.Checkpoints`; a re-run with the same ``args`` resumes there).
    Makes ``folder`` when it is new and holds its lock for ``step`` from here (:func:`check_writable`)."""
    _hold(Path(folder), step)
    return Checkpoints(folder, step, args)


# --------------------------------------------------------------------------------------- reads
def _validate(name: str, text: str, path: Path) -> Any:
    spec = FILES.get(name)
    kind = spec.kind if spec else path.suffix.lstrip(".")
    try:
        if kind == "csv":
            obj = pd.read_csv(io.StringIO(text), dtype=STR_COLUMNS.get(name))
            have = set(obj.columns)
            n_rows = len(obj)
        elif kind == "jsonl":
            obj = [json.loads(line) for line in text.splitlines() if line.strip()]
            have = set.intersection(*(set(r) for r in obj)) if obj else set()
            n_rows = len(obj)
        else:
            obj = json.loads(text)
            have, n_rows = (set(obj) if isinstance(obj, dict) else set()), 1
    except (ValueError, RecursionError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        why = (str(e).splitlines() or [type(e).__name__])[0]
        raise ResultsError(
            f"{quoted(path)} cannot be parsed as {kind} ({why}): it is truncated or "
            "not a results file; re-run the step that writes it"
        ) from None
    missing = [c for c in (spec.required if spec else ()) if c not in have]
    if missing or (kind != "json" and n_rows == 0):
        what = f"lacks {missing}" if missing else "has no rows"
        raise ResultsError(
            f"{quoted(path)} {what}: it is truncated or from another tool; re-run "
            f"{WRITTEN_BY.get(spec.step if spec else '', 'the step that writes it')}"
        )
    return obj


def read(folder: str | Path, name: str, check_inputs: bool = True) -> Any:
    """Read and check one results file: a DataFrame (csv), a dict (json) or a list of dicts (jsonl).

    Raises :class:`FileNotFoundError` when it is missing (naming the command that writes it) and
    :class:`ResultsError` when it is malformed, differs from what its step recorded, or was computed
    from inputs that have changed since.
    """
    folder = Path(folder)
    finish_interrupted(folder)  # a set a killed writer left half moved in
    path = folder / name
    spec = FILES.get(name)
    if not os.path.lexists(path):
        cmd = WRITTEN_BY.get(spec.step, "") if spec else ""
        raise FileNotFoundError(f"{quoted(path)} does not exist" + (f": run `{cmd}` first" if cmd else ""))
    data = safe_read.read_bytes(path, folder)  # a regular file of the folder, of bounded size
    obj = _validate(name, safe_read.decode(data, path), path)
    if spec is None:
        return obj
    rec = read_run(folder)["steps"].get(spec.step)
    if rec is not None:
        want = rec.get("files", {}).get(name)
        if want is not None and want != hashlib.sha256(data).hexdigest():
            raise ResultsError(
                f"{quoted(path)} differs from what {spec.step} wrote (run.json): the folder holds an "
                f"incomplete or edited run; re-run {WRITTEN_BY[spec.step]}"
            )
        if (got := rec.get("formats", {}).get(name, 1)) != spec.version:
            raise ResultsError(
                f"{quoted(path)} is format version {got} and this arithmech reads version {spec.version} "
                f"of it: re-run {WRITTEN_BY[spec.step]} --overwrite"
            )
        if check_inputs:
            for inp, h in rec.get("inputs", {}).items():
                if inp in spec.inputs and os.path.lexists(folder / inp) and safe_read.sha256(folder / inp, folder) != h:
                    raise ResultsError(
                        f"{quoted(path)} was computed from another {inp} than the one now in {quoted(folder)} "
                        f"(re-run since?): re-run {WRITTEN_BY[spec.step]} --overwrite"
                    )
    return obj


def exists(folder: str | Path, name: str) -> bool:
    """Whether ``folder`` has an entry ``name`` (a link, a FIFO too: :func:`read` then refuses it, by name)."""
    finish_interrupted(folder)
    return os.path.lexists(Path(folder) / name)


def made_with(folder: str | Path, step: str, want: dict) -> bool:
    """True when ``folder`` holds ``step``'s files, its ``run.json`` record has every parameter of ``want`` as
    given, the inputs it recorded are unchanged (their sha256) and every file it wrote is of the format version
    this arithmech reads (an older format is recomputed, not refused later by :func:`read`): a chapter's check
    before it reuses a step. A record without a parameter of ``want`` was not made with it (the shipped records were
    migrated once: no value is assumed for an absent parameter)."""
    finish_interrupted(folder)
    rec = read_run(folder)["steps"].get(step, {}) if exists(folder, RUN) else {}
    p, folder = rec.get("parameters", {}), Path(folder)
    recorded = [(safe_read.inside(folder, f, folder / RUN), h) for f, h in rec.get("inputs", {}).items()]
    fresh = all(not os.path.lexists(f) or safe_read.sha256(f, folder) == h for f, h in recorded)
    same = all(k in p and p[k] == v for k, v in want.items())
    current = all(rec.get("formats", {}).get(n, 1) == FILES[n].version for n in rec.get("files", {}) if n in FILES)
    return exists(folder, step_files(step)[0]) and bool(p) and same and fresh and current


def read_step(folder: str | Path, step: str) -> dict[str, Any]:
    """Every file of ``step`` present in ``folder``, checked, keyed by the name without extension."""
    return {n.rsplit(".", 1)[0]: read(folder, n) for n in step_files(step) if exists(folder, n)}


class Files:
    """One step's files in a folder, read back without the config that made them: each file read and checked
    (:func:`read`) on its first use and kept, ``None`` where the folder has none, and the step's ``run.json`` record
    (:meth:`record`). A wing's result module names its step's files as typed properties of a subclass (identify's
    :class:`arithmech.identify.result.IdentifyFiles`, ...): what the claims' deciders read, through
    :class:`arithmech.claims.evidence.Context`, which says which file is missing."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._files: dict[str, Any] = {}

    def file(self, name: str, required: bool = False) -> Any:
        """``name`` of the folder, read and checked once; ``None`` where the folder has none (``required``: the
        :class:`FileNotFoundError` of :func:`read`, naming the file and the command that writes it)."""
        if self._files.get(name) is None and (required or name not in self._files):
            self._files[name] = read(self.folder, name) if required or exists(self.folder, name) else None
        return self._files[name]

    def record(self, step: str) -> dict | None:
        """``step``'s record of ``run.json`` (read once), ``None`` where it has none."""
        if RUN not in self._files:
            self._files[RUN] = read_run(self.folder)
        return self._files[RUN]["steps"].get(step)
