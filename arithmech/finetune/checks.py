"""Up-front checks of a fine-tune run's arguments and input files: no model is loaded, nothing is trained.

:func:`validate_finetune_args` takes :func:`arithmech.finetune.runner.run_finetune`'s arguments and
raises a ``ValueError`` (or ``FileNotFoundError``) naming the value, what is allowed and what to do,
*before* the base model's benchmark evaluation (which takes hours on a 7B model). It returns the
:class:`~arithmech.finetune.adapter.HeadSpec` to train (``None`` for full SFT). The model's geometry
(layers, heads) is read from its ``config.json`` only (:func:`model_geometry`), which takes milliseconds.

The files identify wrote are checked for shape, not trusted: ``key_heads.json`` must be an object with
a ``task`` and a list of ``heads`` (``{"layer": int, "head": int, ...}``) inside the model, and
``effects.csv``, when the ranking extends beyond the key heads, must hold every head of the model
exactly once for that task (a truncated file would otherwise let other heads be tuned silently).
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Sequence

from arithmech.core.models import Geometry
from arithmech.finetune import adapter as A

_PAIR = re.compile(r"^\s*(\d+)\.(\d+)\s*$")
TRAIN_SOURCES = ("embedded", "two-digit", "negative", "math")
DTYPES = ("float32", "bfloat16", "float16")


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
            raise ValueError(f"{what}: head {l}.{h} is not in the model ({geo.n_layers} layers 0..{geo.n_layers - 1}, "
                             f"{geo.n_heads} heads 0..{geo.n_heads - 1} per layer)")


def model_geometry(model: str) -> Geometry | None:
    """Layers and heads from the model's ``config.json`` (``transformers.AutoConfig``; no weights are read).
    ``None`` when the config cannot be read here (a hub id without network): the ranges are then
    checked when the model loads."""
    from arithmech.core.models import resolve
    source = resolve(model)             # FileNotFoundError for a missing embedded model / .gguf file
    if not (Path(source) / "config.json").is_file():
        return None
    from transformers import AutoConfig
    try:
        return Geometry.from_config(AutoConfig.from_pretrained(source))
    except (OSError, ValueError, AttributeError) as e:
        raise ValueError(f"--model {model}: its config.json cannot be read ({e})") from None


def check_key_heads(kh, path: str | Path, geo: Geometry | None = None) -> tuple[str, list, list]:
    """Shape of a parsed ``key_heads.json``; returns ``(task, heads, mlps)``, best first."""
    bad = lambda msg: ValueError(f"{path}: {msg}; rerun `python -m arithmech identify` to rewrite it")
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
    bad = lambda msg: ValueError(f"{path}: {msg}; the file looks truncated or edited — rerun "
                                 "`python -m arithmech identify` to rewrite it")
    missing = {"task", "layer", "head", "effect"} - set(df.columns)
    if missing:
        raise bad(f"missing column(s) {sorted(missing)}")
    rows = df[df["task"] == task]
    if rows.empty:
        raise bad(f"has no rows for task {task!r} (the task of key_heads.json)")
    heads, mlps = set(), set()
    for l, h, e in zip(rows["layer"], rows["head"].astype(str), rows["effect"]):
        try:
            l, e = int(l), float(e)
        except (TypeError, ValueError):
            raise bad(f"a row has layer {l!r} / effect {e!r}") from None
        if not math.isfinite(e) or l < 0 or not (h == "mlp" or h.isdigit()):
            raise bad(f"row ({l}, {h!r}) has effect {e!r}")
        key = l if h == "mlp" else (l, int(h))
        group = mlps if h == "mlp" else heads
        if key in group:
            raise bad(f"row ({l}, {h}) appears twice for task {task!r}")
        group.add(key)
    if geo is not None:
        want = {(l, h) for l in range(geo.n_layers) for h in range(geo.n_heads)}
        if heads != want:
            raise bad(f"task {task!r} has {len(heads & want)} of the model's {len(want)} heads"
                      + (f" and {len(heads - want)} outside it" if heads - want else ""))
        if mlps and mlps != set(range(geo.n_layers)):
            raise bad(f"task {task!r} has {len(mlps)} of the model's {geo.n_layers} MLP rows")


def read_ranking(folder: str | Path, geo: Geometry | None = None) -> tuple[list, list]:
    """Heads and MLP layers, best first, of a model's results ``folder``: ``key_heads.json`` (checked),
    extended by the rest of that task's ``effects.csv`` ranking (checked), both read through the results
    contract. See :func:`arithmech.finetune.runner.ranked_components`."""
    from arithmech.core import results as R
    from arithmech.methods.identify import ranking
    folder = Path(folder)
    path = folder / "key_heads.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: run `python -m arithmech identify` first (it writes the "
                                "ranked key heads), or pass --heads L.H,L.H")
    try:
        kh = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not valid JSON ({e}); rerun `python -m arithmech identify`") from None
    task, heads, mlps = check_key_heads(kh, path, geo)          # shape first: the most specific message
    R.read(folder, "key_heads.json")                            # then the manifest (edited? incomplete?)
    df = R.read(folder, "effects.csv")
    check_effects(df, task, folder / "effects.csv", geo)
    all_h, all_m = ranking(df, task)
    heads += [h for h in all_h if h not in heads]
    mlps += [m for m in all_m if m not in mlps]
    return heads, mlps


def _positive(name: str, v, integer: bool = False, allow_zero: bool = False) -> None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and (v >= 0 if allow_zero else v > 0)
    if not ok or (integer and int(v) != v):
        raise ValueError(f"{name} {v!r}: must be a {'whole ' if integer else ''}number "
                         f"{'>= 0' if allow_zero else '> 0'}")


def check_device(device: str) -> None:
    """``cpu``, ``cuda[:N]`` (only where CUDA and that GPU exist) or ``mps`` (only where available)."""
    import torch
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"--device {device!r}: use cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"--device {device}: CUDA is not available on this machine; use --device cpu")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"--device {device}: MPS is not available on this machine; use --device cpu")
    elif dev.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"--device {device!r}: use cpu, cuda, cuda:N or mps")


def validate_finetune_args(model: str = "embedded", mode: str = "precise", heads: str = "top-8", mlps: int = 0,
                           train_data: str = "embedded", results: str | Path = "results",
                           benchmarks: Sequence[str] = ("toy",), epochs: float = 2.0, max_steps: int = -1,
                           lr: float = 2e-5, batch_size: int = 128, micro_batch_size: int = 8, warmup: float = 0.02,
                           weight_decay: float = 0.1, kv_policy: str = "any", rescale: bool = True,
                           limit: int | None = None, n_train: int | None = None, device: str = "cpu",
                           dtype: str = "float32", fsdp: bool = False, threads: int | None = None,
                           world_size: int | None = None, tag: str | None = None, **_ignored) -> A.HeadSpec | None:
    """Check every argument of ``run_finetune`` and the files it reads; return the ``HeadSpec`` to train
    (``None`` for full SFT). Raises ``ValueError``/``FileNotFoundError`` with one clear line; loads no model.
    Extra keyword arguments of ``run_finetune`` (``data_dir``, ...) are accepted and ignored."""
    import re

    from arithmech.evals.benchmarks import BENCHMARKS, TOY
    if tag is not None and not re.fullmatch(r"[A-Za-z0-9][\w.-]*", tag):
        raise ValueError(f"--tag {tag!r}: use letters, digits, '_', '-' and '.' only (it names finetune/<mode>-TAG.json)")
    if mode not in ("precise", "full"):
        raise ValueError(f"--mode {mode!r}: use precise or full")
    if kv_policy not in A.KV_POLICIES:
        raise ValueError(f"--kv-policy {kv_policy!r}: use one of {', '.join(A.KV_POLICIES)}")
    if dtype not in DTYPES:
        raise ValueError(f"--dtype {dtype!r}: use one of {', '.join(DTYPES)}")
    _positive("--batch-size", batch_size, integer=True)
    _positive("--micro-batch-size", micro_batch_size, integer=True)
    world = world_size or int(os.environ.get("WORLD_SIZE", 1))
    if batch_size % (micro_batch_size * world):
        raise ValueError(f"--batch-size {batch_size} must be a multiple of --micro-batch-size {micro_batch_size}"
                         + (f" x {world} processes" if world > 1 else ""))
    _positive("--lr", lr)
    _positive("--warmup", warmup, allow_zero=True)
    _positive("--weight-decay", weight_decay, allow_zero=True)
    if not (isinstance(max_steps, int) and (max_steps == -1 or max_steps >= 1)):
        raise ValueError(f"--max-steps {max_steps!r}: use -1 (train for --epochs) or a whole number >= 1")
    if max_steps == -1:
        _positive("--epochs", epochs)
    for name, v in (("--limit", limit), ("--n-train", n_train), ("--threads", threads)):
        if v is not None:
            _positive(name, v, integer=True)
    if isinstance(mlps, bool) or not isinstance(mlps, int) or mlps < 0:
        raise ValueError(f"--mlps {mlps!r}: must be a whole number >= 0 (the top-M MLP layers to train too)")
    if fsdp and mode == "precise":
        raise ValueError("--fsdp is for full SFT only: precise SFT runs on one device (the slices are small)")
    names = [b for x in benchmarks for b in ({"toy": TOY, "paper": BENCHMARKS}.get(x, (x,)))]
    unknown = sorted(set(names) - set(BENCHMARKS) - set(TOY))
    if unknown or not names:
        raise ValueError(f"--benchmarks: unknown {unknown or 'empty list'}; choose from toy, paper, "
                         f"{', '.join(BENCHMARKS + tuple(TOY))}")
    if train_data not in TRAIN_SOURCES and not Path(train_data).is_file():
        raise FileNotFoundError(f"--train-data {train_data!r}: use {', '.join(TRAIN_SOURCES)} or an existing "
                                "JSONL file of {prompt, completion}")
    check_device(device)
    want = parse_heads_arg(heads) if mode == "precise" else None
    geo = model_geometry(model)
    if mode == "full":
        return None
    ranked_h = ranked_m = None
    if isinstance(want, int) or mlps:
        from arithmech.core.results import model_folder
        folder = model_folder(results, model)
        ranked_h, ranked_m = read_ranking(folder, geo)
        if mlps > len(ranked_m):
            raise ValueError(f"--mlps {mlps}: only {len(ranked_m)} ranked MLP layers in {folder}")
    if isinstance(want, int):
        if want > len(ranked_h):
            raise ValueError(f"--heads top-{want}: only {len(ranked_h)} ranked heads available")
        want = ranked_h[:want]
    check_heads_in_model(want, geo)
    return A.HeadSpec(heads=tuple(want), mlps=tuple((ranked_m or [])[:mlps]), kv_policy=kv_policy, rescale=rescale)
