"""The configs of fine-tuning and of the embedded model's own commands (:mod:`arithmech.core.config`).

:class:`Finetune` is one fine-tune arm (``python -m arithmech finetune``), :class:`Table1` Table 1's arms over
whole learning-rate grids (``python -m arithmech table1``); :class:`TrainEmbedded` and :class:`EmbeddedAccuracy`
train and score the embedded model (``train-embedded``, ``accuracy``). The analyses' configs are in
:mod:`arithmech.steps.config`; what they share (the bounds, :class:`~arithmech.steps.config_base.ModelStep`) in
:mod:`arithmech.steps.config_base`. Importing this module does not import torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from arithmech.core.config import Config, option
from arithmech.core.estimate import Estimate, Shape
from arithmech.core.inputs import DTYPES, KV_POLICIES, check_device, check_model
from arithmech.paper import SFT
from arithmech.pipeline import memory
from arithmech.pipeline.config_base import (
    MAX_BATCH,
    MAX_EPOCHS,
    MAX_EXTEND,
    MAX_ORDERS,
    MAX_PAIRS,
    MAX_SCALE,
    MAX_SEEDS,
    MAX_STEPS,
    MAX_THREADS,
    MAX_TRAIN_ROWS,
    ModelStep,
)


@dataclass(frozen=True)
class Finetune(ModelStep):
    """One fine-tune arm: precise SFT of the key heads or full SFT; accuracy before and after (Tables 1, 2, 5)."""

    mode: str = option(
        "precise", "precise: the selected heads' slices only; full: every parameter", choices=("precise", "full")
    )
    heads: str = option(
        "top-8",
        "top-K (ranked in the model's results folder) or L.H,L.H (the paper tunes 32 of LLaMA2-7B's 1,024 heads)",
    )
    mlps: int = option(0, "also train the top-M MLP layers", low=0, high=MAX_ORDERS)
    kv_policy: str = option(
        "any", "GQA: which shared K/V heads train (arithmech.finetune.adapter)", choices=KV_POLICIES
    )
    rescale: bool = option(True, "rescale head gradients by H/h")
    train_data: str = option(
        "embedded", "embedded | two-digit | negative | math | a .jsonl file of {prompt, completion}"
    )
    n_train: int | None = option(None, "a seeded sample of this many training rows", low=1, high=MAX_TRAIN_ROWS)
    benchmarks: tuple[str, ...] = option(("toy",), "toy | paper | gsm8k, addsub, singleeq, svamp, mmlu, csqa, ...")
    limit: int | None = option(None, "evaluate a seeded sample of this many rows per benchmark", low=1, high=MAX_PAIRS)
    data_dir: str | None = option(None, "benchmark folder (default: $ARITHMECH_DATA or ../shared/data)", reuse=False)
    tag: str | None = option(None, "file name suffix: finetune/<mode>-<tag>.json")
    epochs: float = option(SFT["epochs"], "training epochs (the paper: 2)", low=0, high=MAX_EPOCHS)
    max_steps: int = option(-1, "stop after this many optimizer steps (-1: the epochs decide)", low=-1, high=MAX_STEPS)
    lr: float = option(SFT["lr"], "learning rate (the paper: 2e-5)", low=0)
    batch_size: int = option(
        SFT["batch_size"], "rows per optimizer step (micro batch x accumulation)", low=1, high=MAX_BATCH
    )
    micro_batch_size: int = option(8, "rows per forward pass", low=1, high=MAX_BATCH)
    warmup: float = option(SFT["warmup"], "warm-up ratio of the schedule", low=0, high=1)
    weight_decay: float = option(SFT["weight_decay"], "AdamW weight decay", low=0)
    bf16: bool = option(False, "bf16 autocast (the trained slices stay float32)")
    fsdp: bool = option(False, "full SFT: FSDP through TrainingArguments")
    save_adapter: bool = option(False, "keep the trained slices (adapter.safetensors) beside the record")
    threads: int | None = option(
        None, "torch intra-op threads (default: torch's)", low=1, reuse=False, high=MAX_THREADS
    )

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.steps.memory.finetune`)."""
        return memory.finetune(shape, self, **known)


@dataclass(frozen=True)
class Table1(ModelStep):
    """Table 1 over whole learning-rate grids: base (and with solved examples), full SFT, precise SFT of the key
    heads, of the share rule's heads, of random heads (layer-matched, and of any layer) sharing no tuned parameter."""

    def check(self) -> None:
        super().check()
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"--seeds {','.join(map(str, self.seeds))}: give distinct seeds")
        if len(self.seeds) > MAX_SEEDS:
            raise ValueError(f"--seeds: {len(self.seeds)} seeds; at most {MAX_SEEDS}")
        if self.curve_lr is not None and not self.curve_only:
            raise ValueError(
                f"--curve-lr {self.curve_lr!r}: the arms' step budget is read from the curve at the middle rate of "
                "full's grid; a curve at another rate is exploration only: add --curve-only"
            )
        if self.curve_lr == 0:
            raise ValueError("--curve-lr 0.0: a rate of 0 trains nothing; give a positive rate")

    model_name: str = option("smollm2-135m", "embedded, smollm2-135m, a model folder, a .gguf file or a hub id")
    suite: str = option(
        "cpu",
        "the measures: cpu (a real small LLM on 2 CPU cores), paper (the paper's six "
        "benchmarks, for a GPU), toy (the embedded model's skills) or planted (the planted model's new skill, "
        "accumulation word problems); arithmech.evals.suites",
    )
    top_k: int = option(8, "heads tuned by precise SFT (ranked in the results folder)", low=1, high=MAX_ORDERS)
    seeds: tuple[int, ...] = option((0, 1, 2), "training seeds", low=0, high=2**32 - 1)
    draws: int = option(
        10,
        "random-head draws at each rate of each random arm (draw d trains with seed seeds[d mod len(seeds)])",
        low=1,
        high=MAX_SEEDS,
    )
    frontier_seeds: int = option(
        5, "seeds at each rate on the validation frontier of full, precise-key and precise-share", low=1, high=MAX_SEEDS
    )
    shots: int = option(
        4,
        "solved carry examples before each item of the base-shots control (format vs arithmetic)",
        low=1,
        high=MAX_ORDERS,
    )
    cloze_items: int = option(
        100,
        "cpu suite: items of each cloze set in a run's test (the suite has 200; 100 about halves a run's evaluation)",
        low=1,
        high=MAX_PAIRS,
    )
    replicate_ends: bool = option(
        True,
        "replicate a bracketed grid's two end rates too (seeds, draws, frontier "
        "seeds); --no-replicate-ends keeps their first run only, a cut of grid points to "
        "fit the machine (arithmech.table1.plan.replicated)",
    )
    lm_tokens: int = option(
        2048, "cpu suite: generic-text tokens of a run's test loss (the suite has 4,096)", low=256, high=MAX_PAIRS
    )
    steps: int | None = option(
        None,
        "optimizer steps per run (default: the knee of full SFT's validation learning "
        "curve, finetune/curve.json, made first when missing)",
        low=1,
        high=MAX_STEPS,
    )
    curve_steps: int = option(240, "length of the learning curve that sets the default --steps", low=20, high=MAX_STEPS)
    curve_only: bool = option(False, "make (or keep) the learning curve, then stop")
    curve_lr: float | None = option(
        None, "the learning curve's rate (default: the middle of full's grid; with --curve-only only)", low=0, high=1
    )
    batch_size: int = option(16, "rows per optimizer step", low=1, high=MAX_BATCH)
    max_extend: int = option(
        3, "grid extensions (full's grid, the precise arms' grid) until bracketed", low=0, high=MAX_EXTEND
    )
    scale: float = option(
        1.0, "paper suite: multiply the evaluation sizes (1: a CPU run, 10: a GPU run)", low=1e-9, high=MAX_SCALE
    )
    data_dir: str | None = option(None, "benchmark folder (default: $ARITHMECH_DATA or ../shared/data)", reuse=False)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.steps.memory.table1`)."""
        return memory.table1(shape, self, **known)


@dataclass(frozen=True)
class Confirm(ModelStep):
    """Table 1's confirmation: the protocol's arms on fresh seeds (arithmech.table1); --write-protocol writes it."""

    model_name: str = option("smollm2-135m", "embedded, smollm2-135m, a model folder, a .gguf file or a hub id")
    write_protocol: bool = option(
        False, "write <model>/confirmation/protocol.json from the exploration's records, then stop (never replaced)"
    )
    max_runs: int | None = option(
        None, "stop after this many new runs (a session's share; the next call resumes)", low=1, high=MAX_TRAIN_ROWS
    )
    data_dir: str | None = option(None, "benchmark folder (default: $ARITHMECH_DATA or ../shared/data)", reuse=False)

    def memory(self, shape: Shape, **known) -> Estimate:
        """One run at a time: the peak is a full SFT run's (:func:`arithmech.steps.memory.confirm`)."""
        return memory.confirm(shape, self, **known)


@dataclass(frozen=True)
class TrainEmbedded(Config):
    """Train the embedded arithmetic model (deterministic, about 12 minutes on 2 cores)."""

    out: str | None = option(None, "output folder (default: the package's embedded/model/)")
    steps: int = option(1200, "optimizer steps", low=1, high=MAX_STEPS)
    batch_size: int = option(64, "sequences per step", low=1, high=MAX_BATCH)
    seed: int = option(0, "seed of the data and the initialisation", low=0, high=2**32 - 1)
    weight_decay: float = option(0.01, "AdamW weight decay", low=0)
    overwrite: bool = option(False, "replace the model files in a non-empty --out (other files there are kept)")


@dataclass(frozen=True)
class EmbeddedAccuracy(Config):
    """Accuracy on the paper's templates: fresh draws of trained pairs and the embedded model's held-out splits."""

    model_name: str = option("embedded", "embedded, smollm2-135m, a model folder, a .gguf file or a hub id")
    seed: int = option(1, "seed of the draws", low=0, high=2**32 - 1)
    device: str = option("cpu", "where the model runs: cpu, cuda, cuda:N or mps (checked against this machine)")
    dtype: str = option("float32", "the model's weights", choices=DTYPES)

    def check(self) -> None:
        check_model(self.model_name)
        check_device(self.device)
