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
from arithmech.core import results as R
from arithmech.finetune import runner
from arithmech.steps import identify as identify_step
from arithmech.steps.config import Identify as IdentifyConfig
from arithmech.paper import SFT
from dataclasses import asdict
from arithmech.core.models import load_model
from arithmech.core import records
import tempfile
import time
from arithmech.finetune.data import tokenize_pairs
import torch
from arithmech.finetune.data import train_pairs
from arithmech.core.models import resolve
from arithmech.steps.identify import ranking
from arithmech.evals.benchmarks import BENCHMARKS
from arithmech.evals.benchmarks import TOY
from arithmech.core.results import model_folder
from arithmech.evals import benchmarks as evals
from arithmech.core.inputs import common_arguments
from arithmech.core.inputs import NON_NEGATIVE
from arithmech.core.inputs import POSITIVE

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


# ------------------------------------------------------------------------------ key components
def ranked_components(folder: str | Path, geometry=None) -> tuple[list[tuple[int, int]], list[int]]:
    """Heads ``(layer, head)`` and MLP layers of a model's results ``folder``, best first: the ranked key
    heads of ``key_heads.json`` (written by ``arithmech identify``), extended by the rest of that task's
    ``effects.csv`` ranking (most negative effect first) so that ``top-k`` may exceed the number of key
    heads. Both files are read through the results contract and checked for shape
    (:func:`arithmech.finetune.checks.read_ranking`; with ``geometry``, ``effects.csv`` must hold every
    head of the model)."""
    return read_ranking(folder, geometry)


def ensure_ranking(model: str, results: str | Path = "results", n_samples: int = 64, seed: int = 0,
                   device: str = "cpu", dtype: str = "float32") -> tuple[list[tuple[int, int]], list[int]]:
    """:func:`ranked_components`, running identify (path patching only, ``n_samples`` pairs per task)
    first when the model's folder has no ``key_heads.json`` (a chapter recomputes what is missing)."""
    folder = R.model_folder(results, model)
    if not R.exists(folder, "key_heads.json"):
        identify_step.run(IdentifyConfig(model_name=model, n_samples=n_samples, seed=seed, results=str(folder),
                                         device=device, dtype=dtype, knockout=False, transfer=False))
    return ranked_components(folder)


def parse_heads(arg: str, ranking: list[tuple[int, int]] | None) -> list[tuple[int, int]]:
    """``top-32`` → the 32 best-ranked heads; ``12.22,13.11`` → those heads (syntax:
    :func:`arithmech.finetune.checks.parse_heads_arg`)."""
    want = parse_heads_arg(arg)
    if isinstance(want, int):
        if ranking is None or len(ranking) < want:
            raise ValueError(f"--heads {arg}: only {0 if ranking is None else len(ranking)} ranked heads available")
        return ranking[:want]
    return want


# ------------------------------------------------------------------------------------- runner
def run_finetune(model: str = "embedded", mode: str = "precise", heads: str = "top-8", mlps: int = 0,
                 train_data: str = "embedded", results: str | Path = "results", benchmarks: Sequence[str] = ("toy",),
                 epochs: float = SFT["epochs"], max_steps: int = -1, lr: float = SFT["lr"],
                 batch_size: int = SFT["batch_size"], micro_batch_size: int = 8, warmup: float = SFT["warmup"],
                 weight_decay: float = SFT["weight_decay"], seed: int = 0, device: str = "cpu",
                 dtype: str = "float32", bf16: bool = False, kv_policy: str = "any", rescale: bool = True,
                 limit: int | None = None, data_dir=None, n_train: int | None = None, tag: str | None = None,
                 save_adapter: bool = False, fsdp: bool = False, before: dict | None = None,
                 threads: int | None = None, overwrite: bool = False, command: str | None = None) -> dict:
    """Evaluate, fine-tune (precise or full), evaluate again; write ``results/<model>/finetune/<mode>[-tag].json``.

    Every argument and input file is checked first (:func:`arithmech.finetune.checks.validate_finetune_args`),
    before any model is loaded or evaluated.

    ``benchmarks``: names from :data:`arithmech.evals.benchmarks.BENCHMARKS` / ``TOY``, or ``toy`` / ``paper``.
    ``before``: the base model's accuracies (benchmark → accuracy) or an earlier record's ``base``
    (benchmark → measure) on the same benchmarks: skips the first evaluation.
    ``results``: the results root or the model's folder; an existing record is replaced only with
    ``overwrite``. The record has the one fine-tune format of :func:`arithmech.core.results.finetune_record`.
    ``threads``: torch intra-op threads during the run (restored after); tiny models on a shared CPU
    run faster with 1 than with threads that spin against other processes.
    """
    spec = validate_finetune_args(**{k: v for k, v in locals().items() if k != "before"})
    if threads:
        kw = {**locals(), "threads": None}
        kw.pop("spec")
        n = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return run_finetune(**kw)
        finally:
            torch.set_num_threads(n)
    folder = R.model_folder(results, model)
    records.check_finetune_writable(records.finetune_path(folder, mode, tag), overwrite)
    t0 = time.time()
    torch.manual_seed(seed)
    net, tok, geo = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")
    total = sum(p.numel() for p in net.parameters())
    bench = [b for x in benchmarks for b in ({"toy": evals.TOY, "paper": evals.BENCHMARKS}.get(x, (x,)))]
    ev = lambda m: evals.evaluate(m, tok, bench, root=data_dir, limit=limit, seed=seed)
    before = ({k: v["value"] if isinstance(v, dict) else v for k, v in before.items()} if before is not None
              else ev(net))
    rows = tokenize_pairs(tok, train_pairs(train_data, seed, n_train, data_dir))
    out_dir = folder / "finetune"
    stem = mode + (f"-{tag}" if tag else "")
    with tempfile.TemporaryDirectory(prefix="arithmech-trainer-") as tmp:    # removed on any exit, failures too
        args = runner.training_args(tmp, lr=lr, batch_size=batch_size, micro_batch_size=micro_batch_size,
                             epochs=epochs, max_steps=max_steps, warmup=warmup, weight_decay=weight_decay, seed=seed,
                             device=device, bf16=bf16, logging_steps=max(1, (max_steps if max_steps > 0 else 100) // 20),
                             fsdp_layer=next(iter(net._no_split_modules or [None])) if fsdp else None)
        net.train()
        trainer = runner.make_trainer(net, mode, args, rows, tok, spec)
        tuned = sum(p.numel() for p in net.parameters() if p.requires_grad)
        train = runner.train_measured(trainer, device)
    net.eval()
    if save_adapter and mode == "precise":
        A.save_adapter(net, spec, out_dir / f"{stem}-adapter", base=model)
    after = ev(net)
    record = records.finetune_record(
        model=R.folder_name(model), mode=mode, tag=tag, command=command, seed=seed, device=device, dtype=dtype,
        heads=[list(h) for h in spec.heads] if spec else "all", mlps=list(spec.mlps) if spec else "all",
        tuned_parameters=tuned, total_parameters=total,
        parameters=dict(lr=lr, batch_size=batch_size, micro_batch_size=micro_batch_size, epochs=epochs,
                        max_steps=max_steps, warmup=warmup, weight_decay=weight_decay, bf16=bf16, rescale=rescale,
                        limit=limit, benchmarks=bench, kv_policy=kv_policy if spec else None, geometry=asdict(geo)),
        train={**train, "train_data": train_data, "n_train": len(rows)},
        results={k: records.measure(v) for k, v in after.items()},
        base={k: records.measure(v) for k, v in before.items()},
        delta={k: {"delta": round(after[k] - before[k], 4), "ci": None} for k in after if k in before},
        versions=R.versions(),
        wall_s=round(time.time() - t0, 2))
    records.write_finetune(folder, record, inputs=("key_heads.json", "effects.csv") if spec else ())
    return record


def _cli(a) -> None:
    import shlex
    r = run_finetune(model=a.model, mode=a.mode, heads=a.heads, mlps=a.mlps, train_data=a.train_data,
                     results=a.results, benchmarks=a.benchmarks.split(","), epochs=a.epochs, max_steps=a.max_steps,
                     lr=a.lr, batch_size=a.batch_size, micro_batch_size=a.micro_batch_size, warmup=a.warmup,
                     weight_decay=a.weight_decay, seed=a.seed, device=a.device, dtype=a.dtype, bf16=a.bf16,
                     kv_policy=a.kv_policy, rescale=not a.no_rescale, limit=a.limit, data_dir=a.data_dir,
                     n_train=a.n_train, tag=a.tag, save_adapter=a.save_adapter, fsdp=a.fsdp,
                     threads=a.threads, overwrite=a.overwrite,
                     command="python -m arithmech " + " ".join(shlex.quote(x) for x in a.argv))
    for k, v in r["results"].items():
        print(f"{k:>14}: base {r['base'][k]['value']:.3f} → {v['value']:.3f} ({r['delta'][k]['delta']:+.3f})")
    print(f"{r['mode']}: {r['tuned_parameters']:,} tuned parameters; train samples/s: {r['train']['samples_per_second']}, "
          f"peak memory: {r['train']['peak_memory'].get('peak_bytes', 0) / 2**20:.1f} MiB")


def add_cli(subparsers, name: str = "finetune") -> None:
    s = subparsers.add_parser("finetune", help="one fine-tune arm: precise SFT of key heads or full SFT; "
                              "accuracy before/after (Tables 1, 2, 5)")
    common_arguments(s)
    s.add_argument("--mode", choices=("precise", "full"), default="precise")
    s.add_argument("--heads", default="top-32", help="top-K (ranked in the model's results folder) or L.H,L.H")
    s.add_argument("--mlps", type=NON_NEGATIVE, default=0, help="also train the top-M MLP layers")
    s.add_argument("--kv-policy", choices=A.KV_POLICIES, default="any", help="GQA: see arithmech.finetune.adapter")
    s.add_argument("--no-rescale", action="store_true", help="do not rescale head gradients by H/h")
    s.add_argument("--train-data", default="embedded", help="embedded | math | file.jsonl ({prompt, completion})")
    s.add_argument("--n-train", type=POSITIVE, default=None, help="seeded sample of the training data")
    s.add_argument("--benchmarks", default="toy", help="toy | paper | comma list of gsm8k,addsub,singleeq,svamp,mmlu,csqa")
    s.add_argument("--limit", type=POSITIVE, default=None, help="evaluate a seeded sample of this many rows per benchmark")
    s.add_argument("--data-dir", default=None, help="benchmark folder (default $ARITHMECH_DATA or ../shared/data)")
    s.add_argument("--tag", default=None, help="file name suffix: finetune/<mode>-<tag>.json")
    s.add_argument("--epochs", type=float, default=SFT["epochs"])
    s.add_argument("--max-steps", type=int, default=-1)
    s.add_argument("--lr", type=float, default=SFT["lr"])
    s.add_argument("--batch-size", type=POSITIVE, default=SFT["batch_size"])
    s.add_argument("--micro-batch-size", type=POSITIVE, default=8)
    s.add_argument("--warmup", type=float, default=SFT["warmup"])
    s.add_argument("--weight-decay", type=float, default=SFT["weight_decay"])
    s.add_argument("--bf16", action="store_true", help="bf16 autocast (trainable slices stay fp32)")
    s.add_argument("--fsdp", action="store_true", help="full SFT: FSDP through TrainingArguments")
    s.add_argument("--save-adapter", action="store_true")
    s.add_argument("--threads", type=POSITIVE, default=None, help="torch intra-op threads (default: torch's)")
    s.set_defaults(func=_cli)
