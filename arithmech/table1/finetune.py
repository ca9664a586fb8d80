"""Fine-tune one arm (``python -m arithmech finetune``): precise SFT of the key heads or full SFT, accuracy
before and after, one record in ``finetune/<mode>[-tag].json``.

:func:`run` takes a :class:`arithmech.steps.config_training.Finetune`; :func:`validate_finetune_args` checks
it against the files first and raises a ``ValueError`` (or ``FileNotFoundError``) naming the value, what is
allowed and what to do, *before* the base model's benchmark evaluation (which takes hours on a 7B model). It
returns the :class:`~arithmech.finetune.adapter.HeadSpec` to train (``None`` for full SFT). The model's
geometry (layers, heads) is read from its ``config.json`` only (:func:`model_geometry`), which takes
milliseconds.

The files identify wrote are checked for shape, not trusted: ``key_heads.json`` must be an object with
a ``task`` and a list of ``heads`` (``{"layer": int, "head": int, ...}``) inside the model, and
``effects.csv``, when the ranking extends beyond the key heads, must hold every head of the model
exactly once for that task (a truncated file would otherwise let other heads be tuned silently). Those checks and
the ranking's reader are identify's Result's (:func:`arithmech.identify.result.read_ranking`); the ``--heads`` syntax
is in :mod:`arithmech.finetune.heads`.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from arithmech.core import admission, provenance, records
from arithmech.core import results as results_io
from arithmech.core.inputs import check_device, quoted
from arithmech.core.models import load_model
from arithmech.core.progress import Progress, announce
from arithmech.core.results import model_folder
from arithmech.evals import benchmarks as evals
from arithmech.evals.benchmarks import BENCHMARKS, TOY
from arithmech.evals.measures import accuracy_measure
from arithmech.finetune import adapter, runner
from arithmech.finetune.data import tokenize_pairs, train_pairs
from arithmech.finetune.heads import check_heads_in_model, model_geometry, parse_heads_arg
from arithmech.identify.result import read_ranking
from arithmech.steps.config_training import Finetune as Config

TRAIN_SOURCES = ("embedded", "two-digit", "negative", "math")


def _positive(name: str, v, integer: bool = False, allow_zero: bool = False) -> None:
    ok = (
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(v)
        and (v >= 0 if allow_zero else v > 0)
    )
    if not ok or (integer and int(v) != v):
        raise ValueError(
            f"{name} {v!r}: must be a {'whole ' if integer else ''}number {'>= 0' if allow_zero else '> 0'}"
        )


def validate_finetune_args(config: Config, world_size: int | None = None) -> adapter.HeadSpec | None:
    """Check every argument of ``run`` and the files it reads; return the ``HeadSpec`` to train
    (``None`` for full SFT). Raises ``ValueError``/``FileNotFoundError`` with one clear line; loads no model.
    The fields' own types and bounds were checked when ``config`` was built (:class:`Config`); these are the
    rules between fields and against the files."""
    _check_training(config, world_size)
    _check_sources(config)
    return _head_spec(config)


def _check_training(c: Config, world_size: int | None) -> None:
    """The training settings: the tag, the mode and the KV policy by name; the batch sizes (the batch a multiple of
    the micro-batch times the processes), the rates and the step budget; the limits; the MLP count; FSDP."""
    mode, mlps, epochs, max_steps, lr, batch_size = c.mode, c.mlps, c.epochs, c.max_steps, c.lr, c.batch_size
    micro_batch_size, warmup, weight_decay, kv_policy = c.micro_batch_size, c.warmup, c.weight_decay, c.kv_policy
    limit, n_train, fsdp, threads, tag = c.limit, c.n_train, c.fsdp, c.threads, c.tag
    if tag is not None and not re.fullmatch(r"[A-Za-z0-9][\w.-]*", tag):
        raise ValueError(
            f"--tag {tag!r}: use letters, digits, '_', '-' and '.' only (it names finetune/<mode>-TAG.json)"
        )
    if mode not in ("precise", "full"):
        raise ValueError(f"--mode {mode!r}: use precise or full")
    if kv_policy not in adapter.KV_POLICIES:
        raise ValueError(f"--kv-policy {kv_policy!r}: use one of {', '.join(adapter.KV_POLICIES)}")
    _positive("--batch-size", batch_size, integer=True)
    _positive("--micro-batch-size", micro_batch_size, integer=True)
    world = world_size or int(os.environ.get("WORLD_SIZE", 1))
    if batch_size % (micro_batch_size * world):
        raise ValueError(
            f"--batch-size {batch_size} must be a multiple of --micro-batch-size {micro_batch_size}"
            + (f" x {world} processes" if world > 1 else "")
        )
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


def _check_sources(c: Config) -> None:
    """What the run reads and where it runs: the benchmarks by name (``toy`` and ``paper`` stand for their lists),
    the training data (a known source or an existing JSONL file) and the device."""
    names = [b for x in c.benchmarks for b in ({"toy": TOY, "paper": BENCHMARKS}.get(x, (x,)))]
    unknown = sorted(set(names) - set(BENCHMARKS) - set(TOY))
    if unknown or not names:
        raise ValueError(
            f"--benchmarks: unknown {unknown or 'empty list'}; choose from toy, paper, "
            f"{', '.join(BENCHMARKS + tuple(TOY))}"
        )
    if c.train_data not in TRAIN_SOURCES and not Path(c.train_data).is_file():
        raise FileNotFoundError(
            f"--train-data {c.train_data!r}: use {', '.join(TRAIN_SOURCES)} or an existing "
            "JSONL file of {prompt, completion}"
        )
    check_device(c.device)


def _head_spec(c: Config) -> adapter.HeadSpec | None:
    """The heads (and MLPs) precise SFT trains: ``--heads`` as given, or its top-N read from identify's ranking
    with the top-M MLPs, each checked against the ranking and the model; ``None`` for full SFT."""
    mode, mlps = c.mode, c.mlps
    want = parse_heads_arg(c.heads) if mode == "precise" else None
    geo = model_geometry(c.model_name)
    if mode == "full" or want is None:  # want is None only outside precise mode
        return None
    ranked_h: list = []
    ranked_m: list = []
    if isinstance(want, int) or mlps:
        folder = model_folder(c.results, c.model_name)
        ranked_h, ranked_m = read_ranking(folder, geo)
        if mlps > len(ranked_m):
            raise ValueError(f"--mlps {mlps}: only {len(ranked_m)} ranked MLP layers in {quoted(folder)}")
    if isinstance(want, int):
        if want > len(ranked_h):
            raise ValueError(f"--heads top-{want}: only {len(ranked_h)} ranked heads available")
        want = ranked_h[:want]
    check_heads_in_model(want, geo)
    return adapter.HeadSpec(heads=tuple(want), mlps=tuple(ranked_m[:mlps]), kv_policy=c.kv_policy, rescale=c.rescale)


def benchmark_names(benchmarks) -> list[str]:
    """``--benchmarks`` expanded: ``toy`` and ``paper`` to their benchmarks, any other name as it is."""
    return [b for x in benchmarks for b in ({"toy": evals.TOY, "paper": evals.BENCHMARKS}.get(x, (x,)))]


def base_from(before: dict | None, config: Config) -> dict | None:
    """``before=`` of :func:`run` as the record's ``base`` (benchmark → measure), checked before any model loads.

    An earlier record of this step (it has ``base`` and ``parameters``) gives its ``base``, whose item scores are
    paired with this run's by position — so it must have been scored the same way: the same model, ``seed`` and
    ``limit``, and its base must hold every benchmark of this run (the data folder is not recorded: the caller keeps
    it). Bare accuracies (benchmark → number) give measures without items: changes without an interval. A bare
    ``base`` (benchmark → measure) is refused: nothing says how its items were drawn."""
    if before is None:
        return None
    if "base" in before and "parameters" in before:
        p, want = before["parameters"] or {}, benchmark_names(config.benchmarks)
        seen = {"model": before.get("model"), "seed": before.get("seed"), "limit": p.get("limit")}
        asked = {"model": results_io.folder_name(config.model_name), "seed": config.seed, "limit": config.limit}
        differ = [f"{k} {seen[k]!r} (this run: {asked[k]!r})" for k in seen if seen[k] != asked[k]]
        missing = [b for b in want if b not in (before["base"] or {})]
        if differ or missing:
            raise ValueError(
                "before=: the earlier record was scored otherwise — "
                + "; ".join(differ + ([f"no base for {', '.join(missing)}"] if missing else []))
                + ": pass a record made with this run's model, seed, limit and benchmarks, or None"
            )
        return before["base"]
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in before.values()):
        raise ValueError(
            "before=: pass an earlier record of this step (its base is paired item by item only when scored the same "
            "way) or bare accuracies (benchmark → number)"
        )
    return {k: records.measure(v) for k, v in before.items()}


# ------------------------------------------------------------------------------------- runner
def run(config: Config, command: str | None = None, before: dict | None = None) -> dict:
    """Evaluate, fine-tune (precise or full), evaluate again; write ``results/<model>/finetune/<mode>[-tag].json``.

    Every argument and input file is checked first (:func:`arithmech.table1.finetune.validate_finetune_args`),
    before any model is loaded or evaluated.

    ``benchmarks``: names from :data:`arithmech.evals.benchmarks.BENCHMARKS` / ``TOY``, or ``toy`` / ``paper``.
    ``before``: skips the first evaluation (:func:`base_from`) — an earlier record of this step, whose ``base`` is
    paired item by item with this run's scores (refused unless it was scored the same way: model, ``seed``,
    ``limit``, benchmarks), or the base model's bare accuracies (benchmark → accuracy; changes without an interval).
    ``results``: the results root or the model's folder; an existing record is replaced only with
    ``overwrite``. The record has the one fine-tune format of :func:`arithmech.core.records.finetune_record`.
    ``threads``: torch intra-op threads during the run (restored after); tiny models on a shared CPU
    run faster with 1 than with threads that spin against other processes.
    """
    spec = validate_finetune_args(config)
    if config.threads:  # the same run under these threads: it checks ``before`` itself
        base_from(before, config)
        n = torch.get_num_threads()
        torch.set_num_threads(config.threads)
        try:
            return run(config.replace(threads=None), command, before)
        finally:
            torch.set_num_threads(n)
    before = base_from(before, config)
    est = admission.check(config)  # refused here when it cannot fit, before the model loads
    announce("finetune", est.line() if est else "")
    with Progress("finetune", 3) as bar:
        return _run(config, spec, command, before, est, bar)


def _run(c: Config, spec, command, before, est, bar) -> dict:
    """:func:`run` once its arguments are checked and its estimate made (``bar``: the progress line)."""
    folder = results_io.model_folder(c.results, c.model_name)
    with records.holding(folder):  # one writer of the folder from the check to the record (FolderBusy)
        records.check_finetune_writable(records.finetune_path(folder, c.mode, c.tag), c.overwrite)
        return _train_and_record(c, spec, command, before, est, bar, folder)


def _train_and_record(c: Config, spec, command, before, est, bar, folder) -> dict:
    """:func:`_run` under the folder's writer lock: train, evaluate, write the record."""
    model, mode, tag, seed, device, dtype = c.model_name, c.mode, c.tag, c.seed, c.device, c.dtype
    benchmarks, data_dir, limit, train_data, n_train = c.benchmarks, c.data_dir, c.limit, c.train_data, c.n_train
    lr, batch_size, micro_batch_size, epochs, max_steps = c.lr, c.batch_size, c.micro_batch_size, c.epochs, c.max_steps
    warmup, weight_decay, bf16, fsdp, rescale, kv_policy = (
        c.warmup,
        c.weight_decay,
        c.bf16,
        c.fsdp,
        c.rescale,
        c.kv_policy,
    )
    t0 = time.time()
    torch.manual_seed(seed)
    net, tok, geo = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")
    total = sum(p.numel() for p in net.parameters())
    bench = benchmark_names(benchmarks)
    ev = lambda m: scored(evals.score_items(m, tok, bench, root=data_dir, limit=limit, seed=seed))
    before = ev(net) if before is None else before
    bar.advance(note="base evaluated")
    rows = tokenize_pairs(tok, train_pairs(train_data, seed, n_train, data_dir))
    out_dir = folder / "finetune"
    stem = mode + (f"-{tag}" if tag else "")
    # the optimiser's settings, handed to the trainer and recorded as they were handed
    hyper: dict[str, Any] = dict(
        lr=lr,
        batch_size=batch_size,
        micro_batch_size=micro_batch_size,
        epochs=epochs,
        max_steps=max_steps,
        warmup=warmup,
        weight_decay=weight_decay,
    )
    with tempfile.TemporaryDirectory(prefix="arithmech-trainer-") as tmp:  # removed on any exit, failures too
        args = runner.training_args(
            tmp,
            **hyper,
            seed=seed,
            device=device,
            bf16=bf16,
            logging_steps=max(1, (max_steps if max_steps > 0 else 100) // 20),
            fsdp_layer=next(iter(net._no_split_modules or [None])) if fsdp else None,
        )
        net.train()
        trainer = runner.make_trainer(net, mode, args, rows, tok, spec)
        tuned = sum(p.numel() for p in net.parameters() if p.requires_grad)
        train = runner.train_measured(trainer, device)
    bar.advance(note="trained")
    net.eval()
    if c.save_adapter and mode == "precise":
        adapter.save_adapter(net, spec, out_dir / f"{stem}-adapter", base=model)
    after = ev(net)
    bar.advance(note="evaluated")
    record = records.finetune_record(
        model=results_io.folder_name(model),
        mode=mode,
        tag=tag,
        command=command,
        seed=seed,
        device=device,
        dtype=dtype,
        heads=[list(h) for h in spec.heads] if spec else "all",
        mlps=list(spec.mlps) if spec else "all",
        tuned_parameters=tuned,
        total_parameters=total,
        parameters=dict(
            **hyper,
            bf16=bf16,
            rescale=rescale,
            limit=limit,
            benchmarks=bench,
            kv_policy=kv_policy if spec else None,
            geometry=asdict(geo),
        ),
        train={**train, "train_data": train_data, "n_train": len(rows), "estimate": est.record() if est else None},
        results=after,
        base=before,
        delta=deltas(before, after, seed),
        versions=provenance.versions(),
        wall_s=round(time.time() - t0, 2),
    )
    records.write_finetune(folder, record, inputs=("key_heads.json", "effects.csv") if spec else ())
    return record


def scored(items: dict[str, list[int]]) -> dict[str, dict]:
    """Per benchmark, a record's measure of its item scores (:func:`arithmech.evals.measures.accuracy_measure`):
    accuracy, n, Wilson 95% interval (both rounded to 4 decimals) and the items."""
    m = {k: accuracy_measure(v) for k, v in items.items()}
    return {
        k: records.measure(round(a["value"], 4), a["n"], [round(c, 4) for c in a["ci"]], a["items"])
        for k, a in m.items()
    }


def deltas(before: dict, after: dict, seed: int) -> dict:
    """Each benchmark's change from base: with its paired 95% interval over the items where both measures keep the
    items' scores (:func:`arithmech.core.records.paired_deltas`, as Table 1's records); ``ci`` None where the base
    was given without them (``before=`` of bare accuracies)."""
    paired = records.paired_deltas(before, after, seed)
    return {
        k: paired.get(k) or {"delta": round(after[k]["value"] - before[k]["value"], 4), "ci": None}
        for k in after
        if k in before
    }


def summary(r: dict) -> str:
    """The command line's summary of :func:`run`'s record: each measure before and after (n items), its change with
    the paired 95% interval where the record has one, what was tuned."""
    ci = lambda d: f" [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]" if d.get("ci") else ""
    n = lambda m: f", n = {m['n']}" if m.get("n") else ""
    lines = [
        f"{k:>14}: base {r['base'][k]['value']:.3f} → {v['value']:.3f} ({r['delta'][k]['delta']:+.3f}"
        f"{ci(r['delta'][k])}{n(v)})"
        for k, v in r["results"].items()
    ]
    return "\n".join(
        lines
        + [
            f"{r['mode']}: {r['tuned_parameters']:,} tuned parameters; train samples/s: "
            f"{r['train']['samples_per_second']}, peak memory: "
            f"{r['train']['peak_memory'].get('peak_bytes', 0) / 2**20:.1f} MiB"
        ]
    )
