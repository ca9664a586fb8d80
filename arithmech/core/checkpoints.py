"""Checkpoints of a long step, so that a re-run with the same arguments continues where it stopped.

A step (identify) saves each finished unit of work (a task's samples and patching result, a task's
knockout curves) under ``<model folder>/.checkpoints/<step>-<hash of its arguments>/<unit>.pt``; a
re-run with the *same* arguments finds the folder (same hash) and loads the finished units instead of
recomputing them; different arguments hash to another folder and start afresh. The step removes the
folder once its final files are written (:meth:`Checkpoints.clear`), so a finished run leaves nothing.

Units are stored with ``torch.save`` and read with ``torch.load(weights_only=True)``: tensors, numbers,
strings, lists and dicts only (no pickled code). Each is written to a temporary file and renamed, so a
run killed while saving leaves the previous units intact; an unreadable unit is recomputed, and so is one
that is not a regular file of the folder (a FIFO, a link leading out: :mod:`arithmech.core.safe_read`).

Create them through :func:`arithmech.core.results.checkpoints` (the results folder's owner).

>>> ck = checkpoints(folder, "identify", {"model": "embedded", "task": "all", "n_samples": 256, "seed": 0})
>>> got = ck.load("task-0")                 # None when not done yet
>>> ck.save("task-0", {"logit_p": tensor, "rows": [...]}); ...; ck.clear()
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from arithmech.core import safe_read

DIR = ".checkpoints"


def args_hash(args: dict) -> str:
    """16 hex digits of the sha256 of ``args`` as canonical JSON (sorted keys; values by ``str``)."""
    text = json.dumps(args, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def frame_to_obj(df: pd.DataFrame) -> dict:
    """A DataFrame as plain lists (exact floats) for :meth:`Checkpoints.save`; :func:`obj_to_frame` inverts."""
    return {"columns": list(df.columns), "data": {c: df[c].tolist() for c in df.columns}}


def obj_to_frame(obj: dict) -> pd.DataFrame:
    return pd.DataFrame({c: obj["data"][c] for c in obj["columns"]}, columns=obj["columns"])


class Checkpoints:
    """The checkpoint folder of one ``step`` run with ``args`` in a model's results ``folder``."""

    def __init__(self, folder: str | Path, step: str, args: dict):
        self.root = Path(folder) / DIR
        self.dir = self.root / f"{step}-{args_hash(args)}"
        self.args = args

    def _path(self, unit: str) -> Path:
        return self.dir / f"{unit}.pt"

    def done(self) -> list[str]:
        """The units saved so far (names, sorted)."""
        return sorted(p.stem for p in self.dir.glob("*.pt")) if self.dir.is_dir() else []

    def load(self, unit: str) -> Any | None:
        """The saved ``unit``, or None when absent or unreadable (then it is recomputed)."""
        p = self._path(unit)
        if not os.path.lexists(p):
            return None
        try:  # a regular file of the results folder only (a link out is not read)
            return torch.load(io.BytesIO(safe_read.read_bytes(p, self.root.parent)), weights_only=True)
        except Exception:  # truncated, foreign, a FIFO or a link: recompute it
            p.unlink(missing_ok=True)
            return None

    def save(self, unit: str, obj: Any) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        args = self.dir / "args.json"
        if not args.exists():
            args.write_text(json.dumps(self.args, indent=2, sort_keys=True, default=str) + "\n")
        buf = io.BytesIO()
        torch.save(obj, buf)
        fd, tmp = tempfile.mkstemp(prefix=f".{unit}.", suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(buf.getvalue())
            os.replace(tmp, self._path(unit))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def clear(self) -> None:
        """Remove this run's checkpoints, and ``.checkpoints/`` itself when nothing else is left in it."""
        shutil.rmtree(self.dir, ignore_errors=True)
        try:
            self.root.rmdir()
        except OSError:
            pass
