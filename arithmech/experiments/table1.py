"""Table 1 on any model (paper §5.3): base vs full SFT vs precise SFT, with confidence intervals.

The paper fine-tunes LLaMA2-7B on the four math sets' training data for 2 epochs on 8 A100s. This
runner makes the same comparison small enough for a laptop CPU, on any model ``load_model`` reads
(the book runs it on SmolLM2-135M; see ``book/appendix_smollm2.ipynb``):

* **same data, steps and settings** for both fine-tuned rows (AdamW, cosine schedule, warmup 2%,
  weight decay 0.1, batch 16, 40 steps); full SFT trains every parameter, precise SFT only the
  top-``k`` heads' W_Q/W_K/W_V rows and W_O columns with the H/h gradient rescaling
  (:class:`arithmech.finetune.runner.HeadMaskedTrainer`). The learning rate is each mode's own, chosen
  on validation data by :func:`lr_grid`;
* what is trained on and measured: :mod:`arithmech.experiments.measures`; every change against the
  base model comes with a paired bootstrap interval over the same items (:func:`paired_bootstrap`);
* **resume**: each arm's record stores a hash of its arguments; a re-run with the same arguments keeps
  the arms already written and runs the rest.

``python -m arithmech lrgrid --model smollm2-135m`` picks the learning rates (writes
``finetune/lr_grid.json``); ``python -m arithmech table1 --model smollm2-135m`` runs the three rows and
writes ``finetune/{base,full,precise}.json`` (the command is stored in each). Defaults (``scale=1``) keep
each row within about 10 minutes on 2 cores; ``--scale 10 --device cuda`` is the GPU-sized run.
"""
from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch

from arithmech.core import results as R
from arithmech.core.progress import Progress
from arithmech.core.stats import paired_bootstrap
from arithmech.experiments.measures import (GENERIC_TOPICS, HELDOUT_FORMS, evaluate_table1, generic_text,
                                            table1_sizes, train_sentences, validation_scores)
from arithmech.experiments.paper import SFT

LR_GRID = {"full": (3e-5, 1e-4, 3e-4), "precise": (3e-4, 1e-3, 3e-3)}
DEFAULT_LR = {"full": 1e-4, "precise": 3e-3}          # what lr_grid chose for SmolLM2 (finetune/lr_grid.json)


# --------------------------------------------------------------------------- Table 1: the runner
def precise_heads(folder: str | Path, k: int) -> list[tuple[int, int]]:
    """The ``k`` best-ranked heads of a model's results ``folder`` (key_heads.json, then effects.csv)."""
    from arithmech.finetune.runner import ranked_components
    heads, _ = ranked_components(folder)
    if len(heads) < k:
        raise ValueError(f"precise SFT needs {k} ranked heads but {folder} has {len(heads)}: run "
                         f"`python -m arithmech identify --model MODEL --results {folder}` first")
    return heads[:k]


def train_mode(mode: str, model: str, sizes: dict, heads: Sequence[tuple[int, int]] = (), lr: float = 1e-4,
               seed: int = 0, device: str = "cpu", dtype: str = "float32") -> tuple[object, object, dict]:
    """Fine-tune a fresh copy of ``model`` (``full``: every parameter; ``precise``: ``heads`` with H/h
    rescaling, kv_policy ``any``) on :func:`train_sentences`; same settings for both modes.

    Returns ``(model, tokenizer, record)`` with samples/s, peak memory and tuned parameter count.
    """
    from arithmech.finetune import adapter as A
    from arithmech.finetune import runner as F
    from arithmech.core.models import load_model
    torch.manual_seed(seed)
    net, tok, geo = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")
    steps, bs = sizes["steps"], sizes["batch_size"]
    rows = F.tokenize_pairs(tok, train_sentences(steps * bs, seed))
    spec = A.HeadSpec(heads=tuple(heads), rescale=True) if mode == "precise" else None
    with tempfile.TemporaryDirectory() as tmp:
        args = F.training_args(tmp, lr=lr, batch_size=bs, micro_batch_size=bs, max_steps=steps, warmup=SFT["warmup"],
                               weight_decay=SFT["weight_decay"], seed=seed, device=device, logging_steps=max(1, steps // 10))
        net.train()
        trainer = F.make_trainer(net, mode, args, rows, tok, spec)
        tuned = sum(p.numel() for p in net.parameters() if p.requires_grad)
        rec = F.train_measured(trainer, device)
    if mode == "precise":
        net = trainer.merged_model()
    net.eval().requires_grad_(False)
    rec.update(tuned_parameters=tuned, total_parameters=sum(p.numel() for p in net.parameters()), n_train=len(rows),
               heads=[list(h) for h in heads] if mode == "precise" else "all", lr=lr, warmup_ratio=SFT["warmup"],
               weight_decay=SFT["weight_decay"], scheduler="cosine", optimizer="adamw_torch")
    return net, tok, rec


def check_scale(scale) -> float:
    """``--scale``: a positive finite number (1: the CPU-sized run, 10: a GPU-sized one)."""
    if not (isinstance(scale, (int, float)) and 0 < scale < float("inf")):
        raise ValueError(f"--scale {scale!r}: expected a positive finite number (1: a CPU run, 10: a GPU run)")
    return scale


def lr_grid(model: str, results: str | Path = "results", grid: dict = LR_GRID, scale: float = 1.0,
            top_k: int = 8, seed: int = 0, device: str = "cpu", dtype: str = "float32",
            command: str | None = None, overwrite: bool = False) -> dict:
    """Choose each mode's learning rate on validation data; writes ``<out>/finetune/lr_grid.json``.

    Full SFT moves 135M parameters, precise SFT 0.6M: one learning rate cannot suit both in 40 steps
    (the paper's single rate comes with 2 epochs on 8 GPUs), so each mode gets the best rate of its
    ``grid``: highest validation accuracy, and among rates within 0.01 of it the lowest validation loss.
    """
    out = R.model_folder(results, model)
    check_scale(scale)
    if (out / "finetune" / "lr_grid.json").exists() and not overwrite:
        raise ValueError(f"{out / 'finetune' / 'lr_grid.json'} exists (a previous grid): pass --overwrite to replace it")
    sizes, rows = table1_sizes(scale), []
    heads = precise_heads(out, top_k)
    for mode, lrs in grid.items():
        for lr in lrs:
            net, tok, rec = train_mode(mode, model, sizes, heads if mode == "precise" else (), lr, seed, device, dtype)
            rows.append({"mode": mode, "lr": lr, **validation_scores(net, tok, seed),
                         "samples_per_second": rec["samples_per_second"]})
            print(f"[lr grid] {rows[-1]}", flush=True)
    chosen = {}
    for mode in grid:
        r = [x for x in rows if x["mode"] == mode]
        best = max(x["math"] for x in r)
        chosen[mode] = min((x for x in r if x["math"] >= best - 0.01), key=lambda x: x["loss"])["lr"]
    obj = {"rule": "highest validation accuracy; within 0.01 of it, lowest validation loss", "chosen": chosen,
           "rows": rows, "sizes": sizes, "heads": [list(h) for h in heads], "seed": seed,
           "command": command or f"python -m arithmech lrgrid --model {model} --results {out}"}
    R.atomic_json(out / "finetune" / "lr_grid.json", obj)
    return obj


def _summary(res: dict) -> dict:
    return {k: {kk: vv for kk, vv in v.items() if kk != "items"} for k, v in res.items()}


def run_table1(model: str, results: str | Path = "results", modes: Sequence[str] = ("base", "full", "precise"),
               scale: float = 1.0, top_k: int = 8, lr: dict | None = None, seed: int = 0,
               device: str = "cpu", dtype: str = "float32", data_dir=None, command: str | None = None,
               overwrite: bool = False) -> dict:
    """Base, full-SFT and precise-SFT rows of Table 1; writes ``<out>/finetune/<mode>.json`` each.

    ``base`` is evaluated once; ``full`` and ``precise`` load it from ``base.json`` for the paired
    deltas (run ``base`` first, or together). ``top_k``: heads tuned by precise SFT, default 8 = the
    paper's 32 of LLaMA2-7B's 1024 heads (3.1%) of SmolLM2's 270. ``results``: the results root or the
    model's folder (ranked heads in, records out; existing records replaced only with ``overwrite``).
    ``command`` is stored in every file. ``lr``: ``{mode: rate}``;
    missing modes take ``finetune/lr_grid.json``'s choice (:func:`lr_grid`) or :data:`DEFAULT_LR`.

    **Resume**: each record stores the hash of the arguments it was made with (:func:`arm_hashes`,
    ``parameters.args_sha256``). A re-run with the same arguments keeps the arms whose record is there
    (an interrupted run continues with the next arm; the records come out identical, timings aside);
    a record of other arguments is replaced only with ``overwrite``.
    """
    out = R.model_folder(results, model)
    for mode in modes:
        if mode not in R.MODES:
            raise ValueError(f"--modes: {mode!r} is not a mode; use a comma list of base, full, precise")
    check_scale(scale)
    for m, v in (lr or {}).items():
        if not (isinstance(v, (int, float)) and 0 < v < 1):
            raise ValueError(f"--lr-{m} {v!r}: expected a learning rate in (0, 1)")
    sizes = table1_sizes(scale)
    command = command or f"python -m arithmech table1 --model {model} --results {out}"
    base_path = R.finetune_path(out, "base")
    grid_path = out / "finetune" / "lr_grid.json"
    chosen = json.loads(grid_path.read_text())["chosen"] if grid_path.exists() else {}
    lrs = {m: (lr or {}).get(m, chosen.get(m, DEFAULT_LR[m])) for m in ("full", "precise")}
    source = {m: "given" if m in (lr or {}) else ("finetune/lr_grid.json" if m in chosen else "DEFAULT_LR")
              for m in lrs}
    hashes = arm_hashes(out, model, modes, sizes, top_k, lrs, seed, device, dtype, data_dir)
    todo = [m for m in modes if not _same_arm(out, m, hashes[m])]     # a finished arm of the same run: kept
    for mode in todo:
        R.check_finetune_writable(R.finetune_path(out, mode), overwrite)
    if len(todo) < len(modes):
        print(f"[table1] kept {', '.join(m for m in modes if m not in todo)}: records of the same arguments "
              f"are already in {out / 'finetune'}", file=sys.stderr, flush=True)
    written = {m: R.read_finetune(out, m) for m in modes if m not in todo}
    with Progress("table1", len(todo)) as bar:
        for mode in todo:
            t0 = time.time()
            bar.note = f"{mode} running"
            rec: dict = {"model": model, "mode": mode, "command": command, "sizes": sizes, "seed": seed,
                         "device": device, "dtype": dtype, "versions": R.versions(),
                         "data": {"train": "Fig. 8 sentences, training phrasings (forms other than "
                                  f"{HELDOUT_FORMS}), single-digit + two-digit train pairs",
                                  "generic_text": f"pydoc_data.topics {list(GENERIC_TOPICS)}",
                                  "generic_text_sha256": hashlib.sha256(generic_text().encode()).hexdigest()}}
            if mode == "base":
                from arithmech.core.models import load_model
                net, tok, _ = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")
            else:
                if not base_path.exists():
                    raise FileNotFoundError(f"{base_path} is missing: run the base mode first (--modes base,{mode})")
                heads = precise_heads(out, top_k) if mode == "precise" else ()
                net, tok, rec["train"] = train_mode(mode, model, sizes, heads, lrs[mode], seed, device, dtype)
                rec["train"]["lr_source"] = source[mode]
            res = evaluate_table1(net, tok, sizes, seed, data_dir)
            rec["results"] = res
            if mode != "base":
                base = R.read_finetune(out, "base")["results"]
                rec["delta"] = {}
                for k, v in res.items():
                    d, lo, hi = paired_bootstrap(base[k]["items"], v["items"], seed=seed)
                    rec["delta"][k] = {"delta": d, "ci": [lo, hi]}
            rec["wall_s"] = round(time.time() - t0, 1)
            tr = rec.get("train") or {}
            rec = R.finetune_record(
                model=R.folder_name(model), mode=mode, command=command, seed=seed, device=device, dtype=dtype,
                heads=tr.get("heads") if mode != "base" else None,
                mlps=[] if mode == "precise" else ("all" if mode == "full" else None),
                tuned_parameters=tr.get("tuned_parameters", 0), total_parameters=tr.get("total_parameters"),
                parameters={"sizes": sizes, "args_sha256": hashes[mode]}, train=tr or None, results=rec["results"],
                delta=rec.get("delta"), data=rec["data"], versions=rec["versions"], wall_s=rec["wall_s"])
            R.write_finetune(out, rec, inputs=("key_heads.json", "effects.csv") if mode == "precise" else ())
            written[mode] = rec
            bar.advance(note=f"{mode} done")
            print(f"[table1] {mode}: {rec['wall_s']} s  " + json.dumps({k: round(v['value'], 4) for k, v in res.items()}),
                  flush=True)
            del net
    return written


def arm_hashes(out: Path, model: str, modes: Sequence[str], sizes: dict, top_k: int, lrs: dict, seed: int,
               device: str, dtype: str, data_dir=None) -> dict[str, str]:
    """Per arm, the hash of everything its record depends on (stored as ``parameters.args_sha256``): the
    model, sizes, seed, device, dtype, data folder, the arm's learning rate and (precise) tuned heads, and
    for the fine-tuned arms the base arm's hash (their deltas are against it)."""
    from arithmech.core.checkpoints import args_hash
    common = dict(model=model, sizes=sizes, seed=seed, device=device, dtype=dtype, data_dir=str(data_dir))
    base = args_hash({**common, "mode": "base"})
    out_h = {"base": base}
    for m in modes:
        if m != "base":
            heads = [list(h) for h in precise_heads(out, top_k)] if m == "precise" else None
            out_h[m] = args_hash({**common, "mode": m, "lr": lrs[m], "heads": heads, "base": base})
    return out_h


def _same_arm(out: Path, mode: str, h: str) -> bool:
    """True when ``finetune/<mode>.json`` is a valid record made with the arguments hashing to ``h``."""
    if not R.finetune_path(out, mode).exists():
        return False
    try:
        return (R.read_finetune(out, mode).get("parameters") or {}).get("args_sha256") == h
    except (ValueError, OSError):
        return False


def table1_frame(folder: str | Path) -> pd.DataFrame:
    """``finetune/{base,full,precise}.json`` of ``folder`` as one row per (mode, measurement)."""
    rows = []
    for mode in R.MODES:
        if not R.finetune_path(folder, mode).exists():
            continue
        r = R.read_finetune(folder, mode)
        tr = r.get("train") or {}
        for k, v in r["results"].items():
            d = (r.get("delta") or {}).get(k, {})
            rows.append({"mode": mode, "measure": k, "value": v["value"], "ci_low": (v.get("ci") or [None])[0],
                         "ci_high": (v.get("ci") or [None, None])[1],
                         "n": v["n"], "delta": d.get("delta"), "delta_ci_low": (d.get("ci") or [None])[0],
                         "delta_ci_high": (d.get("ci") or [None, None])[1],
                         "samples_per_second": tr.get("samples_per_second"),
                         "tuned_parameters": tr.get("tuned_parameters"),
                         "peak_memory_mib": (tr.get("peak_memory", {}).get("peak_bytes") or 0) / 2**20 if tr else None})
    return pd.DataFrame(rows, columns=["mode", "measure", "value", "ci_low", "ci_high", "n", "delta", "delta_ci_low",
                                       "delta_ci_high", "samples_per_second", "tuned_parameters", "peak_memory_mib"])

# ------------------------------------------------------------------------------------------ CLI
def _cli(a) -> None:
    import shlex
    command = "python -m arithmech " + " ".join(shlex.quote(x) for x in a.argv)
    if a.command == "lrgrid":
        print(json.dumps(lr_grid(a.model, a.results, scale=a.scale, top_k=a.top_k, seed=a.seed, device=a.device,
                                 dtype=a.dtype, command=command, overwrite=a.overwrite)["chosen"]))
        return
    lr = {m: v for m, v in (("full", a.lr_full), ("precise", a.lr_precise)) if v is not None}
    run_table1(a.model, a.results, a.modes.split(","), a.scale, a.top_k, lr, a.seed, a.device, a.dtype,
               data_dir=a.data_dir, command=command, overwrite=a.overwrite)
    print(f"wrote finetune/<mode>.json to {R.model_folder(a.results, a.model)}")


def add_cli(subparsers, name: str = "table1") -> None:
    """``table1`` (the rows) or ``lrgrid`` (each mode's learning rate on validation data)."""
    from arithmech.core.inputs import POSITIVE, common_arguments
    help_ = {"table1": "Table 1: base, full SFT and precise SFT with intervals (§5.3)",
             "lrgrid": "each fine-tune mode's learning rate, chosen on validation data"}[name]
    s = subparsers.add_parser(name, help=help_)
    common_arguments(s, model="smollm2-135m")
    s.add_argument("--scale", type=float, default=1.0, help="multiply steps and evaluation sizes (GPU: e.g. 10)")
    s.add_argument("--top-k", type=POSITIVE, default=8, help="heads tuned by precise SFT (ranked in the results folder)")
    if name == "table1":
        s.add_argument("--modes", default="base,full,precise", help="rows to run, in order (base first)")
        s.add_argument("--lr-full", type=float, default=None, help="default: finetune/lr_grid.json's choice, else 1e-4")
        s.add_argument("--lr-precise", type=float, default=None, help="default: finetune/lr_grid.json's choice, else 3e-3")
        s.add_argument("--data-dir", default=None, help="benchmark folder (default $ARITHMECH_DATA or ../shared/data)")
    s.set_defaults(func=_cli)
