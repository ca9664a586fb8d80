"""Fine-tune records (``results/<model>/finetune/<arm>.json``): one format for every model and runner.

:func:`finetune_record` builds one, :func:`write_finetune` / :func:`read_finetune` store and check it
(its format, and that the results files it was computed from are unchanged); the folder around it is
:mod:`arithmech.core.results`'s. A record is read as every results file is (:mod:`arithmech.core.safe_read`:
a regular file of the folder, of bounded size), and the inputs it records by name are hashed only when the
name is a file inside the folder: an edited record naming ``/etc/shadow`` is refused before anything is opened.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arithmech.core import folderlock, safe_read
from arithmech.core.atomic import atomic_json
from arithmech.core.inputs import quoted
from arithmech.core.results import SCHEMA_VERSION
from arithmech.core.safe_read import ResultsError
from arithmech.core.stats import paired_bootstrap

# ------------------------------------------------------------------------------ fine-tune records
FINETUNE_KEYS = (
    "schema_version",
    "model",
    "mode",
    "tag",
    "command",
    "seed",
    "device",
    "dtype",
    "heads",
    "mlps",
    "tuned_parameters",
    "total_parameters",
    "parameters",
    "train",
    "results",
    "base",
    "delta",
    "data",
    "versions",
    "wall_s",
)


MODES = ("base", "full", "precise")


def measure(value: float, n: int | None = None, ci: Iterable[float] | None = None, items: list | None = None) -> dict:
    """One measurement of a fine-tune record: ``value`` with its sample size, 95% interval and, where
    kept, the per-item scores (for paired intervals)."""
    out = {
        "value": float(value),
        "n": None if n is None else int(n),
        "ci": None if ci is None else [float(c) for c in ci],
    }
    if items is not None:
        out["items"] = items
    return out


def paired_deltas(base: dict, results: dict, seed: int) -> dict:
    """Each measure's change from base, ``{name: {"delta", "ci"}}``: the mean per-item change and its 95% paired
    bootstrap interval over the items (:func:`arithmech.core.stats.paired_bootstrap`, resampled with ``seed``), for
    the measures whose base and result keep item scores of the same length — the same items in the same order, as
    one scorer with one seed gives them; the others are left out."""
    out = {}
    for k, v in results.items():
        b = base.get(k) or {}
        if b.get("items") is not None and v.get("items") is not None and len(b["items"]) == len(v["items"]):
            d, lo, hi = paired_bootstrap(b["items"], v["items"], seed=seed)
            out[k] = {"delta": d, "ci": [lo, hi]}
    return out


def finetune_record(**fields: Any) -> dict:
    """A fine-tune record of schema :data:`SCHEMA_VERSION`: every key of :data:`FINETUNE_KEYS`
    (absent ones are ``None``). ``results`` / ``base``: measure → :func:`measure`; ``delta``: measure →
    ``{"delta", "ci"}`` (arm − base, paired where the items are kept)."""
    unknown = set(fields) - set(FINETUNE_KEYS)
    if unknown:
        raise ValueError(f"unknown fine-tune record fields {sorted(unknown)}")
    rec = {k: fields.get(k) for k in FINETUNE_KEYS}
    rec["schema_version"] = SCHEMA_VERSION
    if rec["mode"] not in MODES:
        raise ValueError(f"mode {rec['mode']!r}: use one of {MODES}")
    return rec


def _well_formed(m: Any) -> bool:
    """A measure of :func:`measure`'s shape: a value; its n, where it keeps items, their number; its interval, where
    it has one, two ordered numbers (a page shows the stored interval as it is)."""
    if not isinstance(m, dict) or not isinstance(m.get("value"), (int, float)):
        return False
    items, ci = m.get("items"), m.get("ci")
    if items is not None and (not isinstance(items, list) or (m.get("n") is not None and m["n"] != len(items))):
        return False
    return ci is None or (
        isinstance(ci, list) and len(ci) == 2 and all(isinstance(c, (int, float)) for c in ci) and ci[0] <= ci[1]
    )


def _check_finetune(path: Path, rec: Any) -> dict:
    if not isinstance(rec, dict) or rec.get("schema_version") != SCHEMA_VERSION:
        raise ResultsError(f"{quoted(path)} is not a fine-tune record of schema version {SCHEMA_VERSION}: re-run it")
    missing = [k for k in FINETUNE_KEYS if k not in rec]
    measures = [*((rec.get("results") or {}).items()), *((rec.get("base") or {}).items())]
    bad = sorted({k for k, v in measures if not _well_formed(v)})
    if missing or bad or not rec.get("results"):
        raise ResultsError(
            f"{quoted(path)} is a malformed fine-tune record (missing {missing or 'results'}"
            f"{', bad measures ' + str(bad) if bad else ''}): re-run it"
        )
    return rec


def check_record_file(path: str | Path, folder: str | Path) -> dict:
    """The fine-tune record at ``path`` parsed and its format checked (not whether its inputs are still fresh):
    a regular file of ``folder``, bounded, valid JSON, every key of the format; else one line naming it."""
    path = Path(path)
    return _check_finetune(path, _parse(path, folder, "re-run it, or move it away", "move it away"))


def _parse(path: Path, folder: str | Path, fix_truncated: str, fix_deep: str):
    """The JSON of the fine-tune record at ``path`` (a regular, bounded file of ``folder``); one line naming it,
    with what to do, when it does not parse."""
    try:
        return json.loads(safe_read.read_text(path, folder))
    except json.JSONDecodeError as e:
        raise ResultsError(f"{quoted(path)} is not valid JSON ({e.msg}): truncated? {fix_truncated}") from None
    except RecursionError:
        raise ResultsError(f"{quoted(path)} nests JSON too deeply to be a fine-tune record: {fix_deep}") from None


def finetune_path(folder: str | Path, mode: str, tag: str | None = None) -> Path:
    return Path(folder) / "finetune" / f"{mode}{'-' + tag if tag else ''}.json"


def check_finetune_writable(path: str | Path, overwrite: bool = False) -> None:
    """Refuse (before any work) to replace an existing fine-tune record unless ``overwrite``; never
    replace a file that is not a fine-tune record of this format, even then."""
    path = Path(path)
    if not os.path.lexists(path):
        return
    if not overwrite:
        raise ValueError(
            f"{quoted(path)} exists (a previous run): pass --overwrite to replace it (finetune: or --tag "
            "NAME to write finetune/<mode>-NAME.json beside it)"
        )
    try:
        _check_finetune(path, json.loads(safe_read.read_text(path, path.parent.parent)))
    except (ValueError, RecursionError, ResultsError):
        raise ValueError(
            f"{quoted(path)} exists and is not a fine-tune record of this format: it is not ours to "
            "replace; move it away or choose another --results"
        ) from None


def write_finetune(folder: str | Path, record: dict, inputs: tuple[str, ...] = ()) -> Path:
    """Store ``record`` as ``finetune/<mode>[-tag].json`` under the folder's writer lock
    (:mod:`arithmech.core.folderlock`: a second process writing the folder is refused in one line); ``inputs``:
    the results files it was computed from (precise SFT's ranking: ``key_heads.json``, ``effects.csv``), whose
    sha256 it then records. A runner that writes many records holds the lock for its whole run (:func:`holding`)."""
    folder = Path(folder)
    path = finetune_path(folder, record["mode"], record.get("tag"))
    _check_finetune(path, record)
    folderlock.acquire(folder)  # one writer per folder (FolderBusy); re-entrant for a runner that holds it
    try:
        if inputs:
            record = {
                **record,
                "inputs": {n: safe_read.sha256(folder / n, folder) for n in inputs if os.path.lexists(folder / n)},
            }
        return atomic_json(path, record)
    finally:
        folderlock.release(folder)


@contextmanager
def holding(folder: str | Path):
    """Hold ``folder``'s writer lock for a whole run that writes fine-tune records (arms, finetune), from before
    any work: a second writer of the folder is refused at once, in one line, not after hours of training."""
    folderlock.acquire(folder)
    try:
        yield Path(folder)
    finally:
        folderlock.release(folder)


def read_finetune(folder: str | Path, mode: str, tag: str | None = None) -> dict:
    """A fine-tune record, checked: its format, and that the files it was computed from are unchanged."""
    path = finetune_path(folder, mode, tag)
    if not os.path.lexists(path):
        raise FileNotFoundError(
            f"{quoted(path)} does not exist: run `python -m arithmech finetune` or `python -m arithmech table1` first"
        )
    rec = _parse(path, folder, "re-run it", "re-run it")
    inputs = rec.get("inputs") if isinstance(rec, dict) else None
    if inputs is not None and not isinstance(inputs, dict):
        raise ResultsError(f"{quoted(path)}: 'inputs' is not a table of file names and hashes: re-run it")
    recorded = [(safe_read.inside(folder, n, path), h) for n, h in (inputs or {}).items()]  # all checked first
    for f, h in recorded:
        if os.path.lexists(f) and safe_read.sha256(f, folder) != h:
            raise ResultsError(
                f"{quoted(path)} was computed from another {f.name} than the one now in {quoted(folder)} "
                "(identify re-run since?): re-run it with --overwrite"
            )
    return _check_finetune(path, rec)


def read_tag(folder: str | Path, tag: str) -> dict:
    """The record a run tag names (``"base"``, ``"full-s0-lr1e-04"``, ``"precise-key-s1-lr3e-03"``): mode, then tag."""
    mode, _, rest = tag.partition("-")
    return read_finetune(folder, mode, rest or None)


def finetune_records(folder: str | Path) -> dict[str, dict]:
    """Every fine-tune record of ``folder`` (stem → record), base first, then the arms by name."""
    d = Path(folder) / "finetune"
    stems = sorted(
        (p.stem for p in d.glob("*.json") if p.stem not in ("table1", "curve")), key=lambda s: (s != "base", s)
    )
    return {s: read_finetune(folder, *s.split("-", 1)) if "-" in s else read_finetune(folder, s) for s in stems}
