"""Precise SFT of the key heads (§4.3, Algorithm 2, §5.3) and the full-SFT baseline (Tables 1, 2, 5).

:class:`HeadMaskedTrainer` is a ``transformers.Trainer`` that trains only the slices installed by
:func:`arithmech.finetune.adapter.attach` (selected heads' W_Q/W_K/W_V rows and W_O columns, optionally whole
MLP layers, gradients rescaled by H/h). Its checkpoints hold just those slices (``adapter.safetensors``
+ ``adapter.json``) next to the Trainer's optimizer, scheduler and RNG state, so an interrupted run
resumes with ``trainer.train(resume_from_checkpoint=...)``. The full-SFT baseline is the plain
``Trainer`` with every parameter trainable and the *same* :func:`training_args`.

Paper defaults (:data:`arithmech.experiments.paper.SFT`): lr 2e-5, batch 128 (``micro_batch_size`` x gradient accumulation),
2 epochs, warmup ratio 0.02, weight decay 0.1; AdamW (``adamw_torch``); cosine decay (the paper does
not name a schedule). The toy chapter uses a higher lr and a few hundred steps on the embedded model.

>>> python -m arithmech finetune --model embedded --heads top-8 --mode precise --train-data embedded \\
...        --benchmarks toy --max-steps 200 --lr 1e-3 --batch-size 32 --micro-batch-size 32

**Beyond one GPU.** Full SFT of a 7B model needs ~16 bytes/parameter of weights, gradients and AdamW
state (~112 GB) before activations: shard it with FSDP through the Trainer, e.g. on 8 GPUs::

    accelerate launch --config_file configs/accelerate_fsdp.yaml -m arithmech finetune \\
        --model /models/Llama-2-7b-hf --mode full --train-data math --benchmarks gsm8k,mmlu \\
        --device cuda --dtype float32 --bf16 --micro-batch-size 4 --batch-size 128

(``--fsdp`` instead sets FSDP through ``TrainingArguments``, wrapping the model's decoder-layer class
from ``model._no_split_modules``; gradient accumulation is ``batch / (micro x world size)``.) Precise
SFT runs data parallel under the same launcher without the FSDP config (``accelerate launch --multi_gpu
--num_processes 8 -m arithmech finetune --mode precise ...``; DDP over the slices only; each process
caches the prefix of its own rows). tests/integration/test_distributed.py checks both modes with 2 CPU
processes (gloo) against one process; on CPU accelerate runs DDP for full SFT too (it ignores FSDP there).
**Cached prefix**: precise SFT runs the frozen layers below the lowest trained layer once per training row
(:mod:`arithmech.finetune.prefix`, ``cache_prefix``; same losses). The frozen bf16 base plus the fp32 slices and their AdamW state fit one GPU;
:func:`arithmech.finetune.adapter.precise_sft_memory` gives the estimate from the geometry (LLaMA2-7B, 32 heads,
batch 4 x 512 tokens, flash attention, lowest tuned layer 11: about 20 GiB).
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

import torch
from transformers import PrinterCallback, Trainer, TrainerCallback, TrainingArguments

from arithmech.core import results as R
from arithmech.core.memory import BlockPeakMemory
from arithmech.finetune import adapter as A
from arithmech.finetune import checks as C
from arithmech.finetune import prefix as P
from arithmech.core.models import load_model
from arithmech.experiments.paper import SFT
from arithmech.data.sft import Collator, tokenize_pairs, train_pairs  # noqa: F401 (part of this module's API)



# ------------------------------------------------------------------------------------- training
def training_args(out_dir: str | Path, lr: float = SFT["lr"], batch_size: int = SFT["batch_size"],
                  micro_batch_size: int = 8, epochs: float = SFT["epochs"], max_steps: int = -1,
                  warmup: float = SFT["warmup"], weight_decay: float = SFT["weight_decay"], seed: int = 0,
                  device: str = "cpu", bf16: bool = False, save_steps: int | None = None,
                  logging_steps: int = 10, scheduler: str = "cosine", fsdp_layer: str | None = None,
                  **extra) -> TrainingArguments:
    """The one set of Trainer settings shared by precise and full SFT (effective batch via accumulation)."""
    world = int(os.environ.get("WORLD_SIZE", 1))
    if batch_size % (micro_batch_size * world):
        raise ValueError(f"batch_size {batch_size} must be a multiple of micro_batch_size {micro_batch_size} "
                         f"x {world} processes")
    fsdp = dict(fsdp=True, fsdp_config={"version": 2, "transformer_layer_cls_to_wrap": [fsdp_layer]}) if fsdp_layer else {}
    return TrainingArguments(
        output_dir=str(out_dir), learning_rate=lr, per_device_train_batch_size=micro_batch_size,
        gradient_accumulation_steps=batch_size // (micro_batch_size * world), num_train_epochs=epochs,
        max_steps=max_steps, warmup_steps=warmup, weight_decay=weight_decay, lr_scheduler_type=scheduler,
        optim="adamw_torch", seed=seed, data_seed=seed, bf16=bf16, use_cpu=device == "cpu",
        save_strategy="steps" if save_steps else "no", save_steps=save_steps or 500, logging_steps=logging_steps,
        report_to="none", disable_tqdm=True, remove_unused_columns=False, dataloader_num_workers=0, **fsdp, **extra)


class HeadMaskedTrainer(Trainer):
    """``Trainer`` for precise SFT: trains only ``spec``'s slices; checkpoints are the small adapter.

    >>> trainer = HeadMaskedTrainer(model, training_args("out"), spec=HeadSpec(heads=((3, 1), (4, 0))),
    ...                             train_dataset=rows, data_collator=Collator(tok.pad_token_id))
    >>> trainer.train(); trainer.save_model("adapter_dir"); merged = trainer.merged_model()
    """

    def __init__(self, model=None, args: TrainingArguments | None = None, spec: A.HeadSpec | None = None,
                 cache_prefix: bool | None = None, **kw):
        """``cache_prefix``: train from the cached output of the frozen layers below the lowest trained
        layer (:mod:`arithmech.finetune.prefix`; same losses and gradients). ``None``: on when exact
        (no dropout in the model, lowest trained layer >= 1, a list of training rows)."""
        if spec is None:
            raise ValueError("HeadMaskedTrainer needs spec=HeadSpec(heads=..., mlps=...)")
        if args is not None and args.fsdp:
            raise ValueError("precise SFT runs on one device (the slices are small); use FSDP for full SFT only")
        if not A.slice_modules(model):
            A.attach(model, spec)
        self.spec = spec
        k = P.lowest_trained_layer(spec)
        possible = k >= 1 and isinstance(kw.get("train_dataset"), (list, tuple)) and P.exact_for(model)
        if cache_prefix and not possible:
            raise ValueError("cache_prefix needs a list of training rows, a lowest trained layer >= 1 and "
                             "no dropout in the model")
        self.prefix = P.PrefixCache(model, k) if (possible if cache_prefix is None else cache_prefix) else None
        if self.prefix is not None:
            kw["train_dataset"] = P.with_row_ids(kw["train_dataset"])
            kw["data_collator"] = P.RowIdCollator(kw["data_collator"])
        super().__init__(model=model, args=args, **kw)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        row_ids = inputs.pop("row_id", None)
        if self.prefix is None or row_ids is None or not model.training:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        net = self.accelerator.unwrap_model(model)
        h = self.prefix.inputs_embeds(net, inputs["input_ids"], inputs["attention_mask"], row_ids)
        cached = {"inputs_embeds": h, **{k: v for k, v in inputs.items() if k != "input_ids"}}
        with P.skipped_layers(net, self.prefix.k):
            return super().compute_loss(model, cached, return_outputs, num_items_in_batch)

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        out = output_dir or self.args.output_dir
        if self.args.should_save:
            A.save_adapter(self.model, self.spec, out)
            if self.processing_class is not None:
                self.processing_class.save_pretrained(out)

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model=None) -> None:
        A.load_adapter(model or self.model, resume_from_checkpoint)

    def _load_best_model(self) -> None:
        A.load_adapter(self.model, self.state.best_model_checkpoint)

    def merged_model(self):
        """Merge the slices into the base weights (in place; training is over) and return the model."""
        return A.merge(self.model)


class _Clock(TrainerCallback):
    """Wall time of each optimizer step end, for the steady-state samples/s (first step excluded)."""

    def __init__(self):
        self.times: list[float] = []

    def on_step_end(self, args, state, control, **kw):
        self.times.append(time.perf_counter())


def make_trainer(model, mode: str, args: TrainingArguments, rows: list[dict], tok,
                 spec: A.HeadSpec | None = None, cache_prefix: bool | None = None) -> Trainer:
    """A :class:`HeadMaskedTrainer` (``precise``; ``cache_prefix`` as there) or a plain ``Trainer`` on all
    parameters (``full``)."""
    kw = dict(args=args, train_dataset=rows, data_collator=Collator(tok.pad_token_id))
    if mode == "precise":
        trainer = HeadMaskedTrainer(model, spec=spec, cache_prefix=cache_prefix, **kw)
    elif mode == "full":
        model.requires_grad_(True)
        trainer = Trainer(model=model, **kw)
    else:
        raise ValueError(f"mode {mode!r}: use 'precise' or 'full'")
    trainer.remove_callback(PrinterCallback)      # losses stay in trainer.state.log_history
    return trainer


def train_measured(trainer: Trainer, device: str = "cpu") -> dict:
    """Run ``trainer.train()``; return samples/s (steady state and Trainer's), peak memory, losses."""
    clock = _Clock()
    trainer.add_callback(clock)
    with BlockPeakMemory(device) as mem:
        out = trainer.train()
    a = trainer.args
    eff = a.per_device_train_batch_size * a.gradient_accumulation_steps * a.world_size
    steady = (eff * (len(clock.times) - 1) / (clock.times[-1] - clock.times[0])) if len(clock.times) > 1 else None
    return {"steps": out.global_step, "effective_batch": eff, "runtime_s": round(out.metrics["train_runtime"], 3),
            "samples_per_second": round(steady or out.metrics["train_samples_per_second"], 3),
            "trainer_samples_per_second": out.metrics["train_samples_per_second"],
            "train_loss": round(out.training_loss, 5), "peak_memory": mem.result,
            "loss_history": [(h["step"], h["loss"]) for h in trainer.state.log_history if "loss" in h]}


# ------------------------------------------------------------------------------ key components
def ranked_components(folder: str | Path, geometry=None) -> tuple[list[tuple[int, int]], list[int]]:
    """Heads ``(layer, head)`` and MLP layers of a model's results ``folder``, best first: the ranked key
    heads of ``key_heads.json`` (written by ``arithmech identify``), extended by the rest of that task's
    ``effects.csv`` ranking (most negative effect first) so that ``top-k`` may exceed the number of key
    heads. Both files are read through the results contract and checked for shape
    (:func:`arithmech.finetune.checks.read_ranking`; with ``geometry``, ``effects.csv`` must hold every
    head of the model)."""
    return C.read_ranking(folder, geometry)


def ensure_ranking(model: str, results: str | Path = "results", n_samples: int = 64, seed: int = 0,
                   device: str = "cpu", dtype: str = "float32") -> tuple[list[tuple[int, int]], list[int]]:
    """:func:`ranked_components`, running identify (path patching only, ``n_samples`` pairs per task)
    first when the model's folder has no ``key_heads.json`` (a chapter recomputes what is missing)."""
    from arithmech.methods.identify import run
    folder = R.model_folder(results, model)
    if not R.exists(folder, "key_heads.json"):
        run(model, n_samples=n_samples, seed=seed, results=folder, device=device, dtype=dtype,
            knockout=False, transfer=False)
    return ranked_components(folder)


def parse_heads(arg: str, ranking: list[tuple[int, int]] | None) -> list[tuple[int, int]]:
    """``top-32`` → the 32 best-ranked heads; ``12.22,13.11`` → those heads (syntax:
    :func:`arithmech.finetune.checks.parse_heads_arg`)."""
    want = C.parse_heads_arg(arg)
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
    spec = C.validate_finetune_args(**{k: v for k, v in locals().items() if k != "before"})
    if threads:
        kw = {**locals(), "threads": None}
        kw.pop("spec")
        n = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return run_finetune(**kw)
        finally:
            torch.set_num_threads(n)
    from arithmech.evals import benchmarks as evals
    folder = R.model_folder(results, model)
    R.check_finetune_writable(R.finetune_path(folder, mode, tag), overwrite)
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
        args = training_args(tmp, lr=lr, batch_size=batch_size, micro_batch_size=micro_batch_size,
                             epochs=epochs, max_steps=max_steps, warmup=warmup, weight_decay=weight_decay, seed=seed,
                             device=device, bf16=bf16, logging_steps=max(1, (max_steps if max_steps > 0 else 100) // 20),
                             fsdp_layer=next(iter(net._no_split_modules or [None])) if fsdp else None)
        net.train()
        trainer = make_trainer(net, mode, args, rows, tok, spec)
        tuned = sum(p.numel() for p in net.parameters() if p.requires_grad)
        train = train_measured(trainer, device)
    net.eval()
    if save_adapter and mode == "precise":
        A.save_adapter(net, spec, out_dir / f"{stem}-adapter", base=model)
    after = ev(net)
    record = R.finetune_record(
        model=R.folder_name(model), mode=mode, tag=tag, command=command, seed=seed, device=device, dtype=dtype,
        heads=[list(h) for h in spec.heads] if spec else "all", mlps=list(spec.mlps) if spec else "all",
        tuned_parameters=tuned, total_parameters=total,
        parameters=dict(lr=lr, batch_size=batch_size, micro_batch_size=micro_batch_size, epochs=epochs,
                        max_steps=max_steps, warmup=warmup, weight_decay=weight_decay, bf16=bf16, rescale=rescale,
                        limit=limit, benchmarks=bench, kv_policy=kv_policy if spec else None, geometry=asdict(geo)),
        train={**train, "train_data": train_data, "n_train": len(rows)},
        results={k: R.measure(v) for k, v in after.items()},
        base={k: R.measure(v) for k, v in before.items()},
        delta={k: {"delta": round(after[k] - before[k], 4), "ci": None} for k in after if k in before},
        versions=R.versions(),
        wall_s=round(time.time() - t0, 2))
    R.write_finetune(folder, record, inputs=("key_heads.json", "effects.csv") if spec else ())
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
    from arithmech.core.inputs import NON_NEGATIVE, POSITIVE, common_arguments
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
