"""Which heads a fine-tune tunes: the ``--heads`` argument, and identify's ranking it is read from.

:func:`parse_heads_arg` and :func:`parse_heads` read ``top-K`` or ``L.H,L.H``; :func:`model_geometry` and
:func:`check_heads_in_model` check the heads against the model's shape; :func:`read_ranking` reads ``key_heads.json``
and ``effects.csv`` through the results contract, checking their shape (:func:`check_key_heads`,
:func:`check_effects`). :func:`arithmech.pipeline.ensure.ensure_ranking` runs identify first where a folder has no
ranking; the fine-tune step itself is :mod:`arithmech.table1.finetune`.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path

from transformers import AutoConfig

from arithmech.core import results as results_io
from arithmech.core import safe_read
from arithmech.core.inputs import quoted
from arithmech.core.models import Geometry, resolve
from arithmech.methods.effects import ranking

_PAIR = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


def parse_heads_arg(arg: str) -> int | list[tuple[int, int]]:
    """Syntax of ``--heads``: ``top-K`` gives ``K`` (an int >= 1); ``12.22,13.11`` gives ``[(12, 22), (13, 11)]``."""
    if not isinstance(arg, str) or not arg.strip():
        raise ValueError(f"--heads {arg!r}: use top-K (K >= 1) or a list of layer.head like 12.22,13.11")
    if arg.startswith("top-"):
        k = arg[4:]
        if not k.isdigit() or int(k) < 1:
            raise ValueError(f"--heads {arg}: K in top-K must be a whole number >= 1, e.g. top-8")
        return int(k)
    out = []
    for part in arg.split(","):
        m = _PAIR.match(part)
        if not m:
            raise ValueError(f"--heads {arg!r}: {part!r} is not layer.head; use top-K or a list like 12.22,13.11")
        out.append((int(m.group(1)), int(m.group(2))))
    return out


def check_heads_in_model(heads: Sequence[tuple[int, int]], geo: Geometry | None, what: str = "--heads") -> None:
    """Every ``(layer, head)`` is inside the model: ``0 <= layer < n_layers``, ``0 <= head < n_heads``."""
    if geo is None:
        return
    for l, h in heads:
        if not (0 <= l < geo.n_layers and 0 <= h < geo.n_heads):
            raise ValueError(
                f"{what}: head {l}.{h} is not in the model ({geo.n_layers} layers 0..{geo.n_layers - 1}, "
                f"{geo.n_heads} heads 0..{geo.n_heads - 1} per layer)"
            )


def model_geometry(model_name: str) -> Geometry | None:
    """Layers and heads from the model's ``config.json`` (``transformers.AutoConfig``; no weights are read).
    ``None`` when the config cannot be read here (a hub id without network): the ranges are then
    checked when the model loads."""
    source = resolve(model_name)  # FileNotFoundError for a missing embedded model / .gguf file
    if not (Path(source) / "config.json").is_file():
        return None
    try:
        return Geometry.from_config(AutoConfig.from_pretrained(source))
    except (OSError, ValueError, AttributeError) as e:
        raise ValueError(f"--model {model_name}: its config.json cannot be read ({e})") from None


def check_key_heads(kh, path: str | Path, geo: Geometry | None = None) -> tuple[str, list, list]:
    """Shape of a parsed ``key_heads.json``; returns ``(task, heads, mlps)``, best first."""
    bad = lambda msg: ValueError(f"{quoted(path)}: {msg}; rerun `python -m arithmech identify` to rewrite it")
    if not isinstance(kh, dict):
        raise bad(f"must be a JSON object with 'task' and 'heads', not {type(kh).__name__}")
    if not isinstance(kh.get("task"), str):
        raise bad("needs a 'task' (a string)")
    rows = {"heads": kh.get("heads"), "mlps": kh.get("mlps", [])}
    for key, val in rows.items():
        if not isinstance(val, list):
            raise bad(f"'{key}' must be a list, not {type(val).__name__}")
        for i, r in enumerate(val):
            need = ("layer", "head") if key == "heads" else ("layer",)
            if not isinstance(r, dict) or any(type(r.get(k)) is not int or r[k] < 0 for k in need):
                raise bad(f"{key}[{i}] must be an object with whole numbers >= 0 for {' and '.join(need)}")
    heads = [(r["layer"], r["head"]) for r in rows["heads"]]
    mlps = [r["layer"] for r in rows["mlps"]]
    try:
        check_heads_in_model(heads, geo, what=str(path))
    except ValueError as e:
        raise bad(str(e).split(": ", 1)[1]) from None
    if geo is not None and any(m >= geo.n_layers for m in mlps):
        raise bad(f"an MLP layer is beyond the model's {geo.n_layers} layers")
    return kh["task"], heads, mlps


def check_effects(df, task: str, path: str | Path, geo: Geometry | None = None) -> None:
    """Shape of ``effects.csv`` for ``task``: the columns, whole-number layers and heads (or ``mlp``), finite
    effects, no duplicate rows, and — with the geometry — every head (and MLP, if any) of the model."""
    bad = lambda msg: ValueError(
        f"{path}: {msg}; the file looks truncated or edited — rerun `python -m arithmech identify` to rewrite it"
    )
    missing = {"task", "layer", "head", "effect"} - set(df.columns)
    if missing:
        raise bad(f"missing column(s) {sorted(missing)}")
    rows = df[df["task"] == task]
    if rows.empty:
        raise bad(f"has no rows for task {task!r} (the task of key_heads.json)")
    heads: set[tuple[int, int]] = set()
    mlps: set[int] = set()
    for l, h, e in zip(rows["layer"], rows["head"].astype(str), rows["effect"]):
        try:
            l, e = int(l), float(e)
        except (TypeError, ValueError):
            raise bad(f"a row has layer {l!r} / effect {e!r}") from None
        if not math.isfinite(e) or l < 0 or not (h == "mlp" or h.isdigit()):
            raise bad(f"row ({l}, {h!r}) has effect {e!r}")
        if (l in mlps) if h == "mlp" else ((l, int(h)) in heads):
            raise bad(f"row ({l}, {h}) appears twice for task {task!r}")
        if h == "mlp":
            mlps.add(l)
        else:
            heads.add((l, int(h)))
    if geo is not None:
        want = {(l, h) for l in range(geo.n_layers) for h in range(geo.n_heads)}
        if heads != want:
            raise bad(
                f"task {task!r} has {len(heads & want)} of the model's {len(want)} heads"
                + (f" and {len(heads - want)} outside it" if heads - want else "")
            )
        if mlps and mlps != set(range(geo.n_layers)):
            raise bad(f"task {task!r} has {len(mlps)} of the model's {geo.n_layers} MLP rows")


def read_ranking(folder: str | Path, geo: Geometry | None = None) -> tuple[list, list]:
    """Heads and MLP layers, best first, of a model's results ``folder``: ``key_heads.json`` (checked),
    extended by the rest of that task's ``effects.csv`` ranking (checked), both read through the results
    contract; with ``geo``, ``effects.csv`` must hold every head of the model."""
    folder = Path(folder)
    path = folder / "key_heads.json"
    if not os.path.lexists(path):
        raise FileNotFoundError(
            f"{quoted(path)} does not exist: run `python -m arithmech identify` first (it writes the "
            "ranked key heads), or pass --heads L.H,L.H"
        )
    try:
        kh = json.loads(safe_read.read_text(path, folder))  # a regular file of the folder, bounded
    except (json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{quoted(path)} is not valid JSON ({e}); rerun `python -m arithmech identify`") from None
    task, heads, mlps = check_key_heads(kh, path, geo)  # shape first: the most specific message
    results_io.read(folder, "key_heads.json")  # then the manifest (edited? incomplete?)
    df = results_io.read(folder, "effects.csv")
    check_effects(df, task, folder / "effects.csv", geo)
    all_h, all_m = ranking(df, task)
    heads += [h for h in all_h if h not in heads]
    mlps += [m for m in all_m if m not in mlps]
    return heads, mlps


def parse_heads(arg: str, ranking: list[tuple[int, int]] | None) -> list[tuple[int, int]]:
    """``top-32`` → the 32 best-ranked heads; ``12.22,13.11`` → those heads (syntax:
    :func:`parse_heads_arg`)."""
    want = parse_heads_arg(arg)
    if isinstance(want, int):
        if ranking is None or len(ranking) < want:
            raise ValueError(f"--heads {arg}: only {0 if ranking is None else len(ranking)} ranked heads available")
        return ranking[:want]
    return want
