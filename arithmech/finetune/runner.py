"""Precise SFT of the key heads (§4.3, Algorithm 2, §5.3) and the full-SFT baseline (Tables 1, 2, 5).

:class:`HeadMaskedTrainer` is a ``transformers.Trainer`` that trains only the slices installed by
:func:`arithmech.finetune.adapter.attach` (selected heads' W_Q/W_K/W_V rows and W_O columns, optionally whole
MLP layers, gradients rescaled by H/h). Its checkpoints hold just those slices (``adapter.safetensors``
+ ``adapter.json``) next to the Trainer's optimizer, scheduler and RNG state, so an interrupted run
resumes with ``trainer.train(resume_from_checkpoint=...)``. The full-SFT baseline is the plain
``Trainer`` with every parameter trainable and the *same* :func:`training_args`.

Paper defaults (:data:`arithmech.paper.SFT`): lr 2e-5, batch 128 (``micro_batch_size`` x gradient accumulation),
2 epochs, warmup ratio 0.02, weight decay 0.1; AdamW (``adamw_torch_fused``: one pass over the parameters, the
same update as the per-tensor loop to float rounding, ``tests/parity/finetune/test_runner.py``; on SmolLM2's
134M parameters the loop's step costs more than the forward and backward of a batch); cosine decay (the paper does
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
(:mod:`arithmech.finetune.prefix`, ``cache_prefix``; same losses). The frozen bf16 base plus the fp32 slices and their
AdamW state fit one GPU; :func:`arithmech.finetune.adapter.precise_sft_memory` gives the estimate from the geometry
(LLaMA2-7B, 32 heads, batch 4 x 512 tokens, flash attention, lowest tuned layer 11: about 20 GiB).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from transformers import PrinterCallback, Trainer, TrainerCallback, TrainingArguments

from arithmech.core.memory import BlockPeakMemory
from arithmech.finetune import adapter, prefix
from arithmech.finetune.data import Collator
from arithmech.finetune.loss import completion_loss
from arithmech.paper import SFT


# ------------------------------------------------------------------------------------- training
def training_args(  # noqa: PLR0913 (transformers' TrainingArguments, field by field)
    out_dir: str | Path,
    lr: float = SFT["lr"],
    batch_size: int = SFT["batch_size"],
    micro_batch_size: int = 8,
    epochs: float = SFT["epochs"],
    max_steps: int = -1,
    warmup: float = SFT["warmup"],
    weight_decay: float = SFT["weight_decay"],
    seed: int = 0,
    device: str = "cpu",
    bf16: bool = False,
    save_steps: int | None = None,
    logging_steps: int = 10,
    scheduler: str = "cosine",
    fsdp_layer: str | None = None,
    **extra,
) -> TrainingArguments:
    """The one set of Trainer settings shared by precise and full SFT (effective batch via accumulation)."""
    world = int(os.environ.get("WORLD_SIZE", 1))
    if batch_size % (micro_batch_size * world):
        raise ValueError(
            f"batch_size {batch_size} must be a multiple of micro_batch_size {micro_batch_size} x {world} processes"
        )
    fsdp: dict[str, Any] = (
        dict(fsdp=True, fsdp_config={"version": 2, "transformer_layer_cls_to_wrap": [fsdp_layer]}) if fsdp_layer else {}
    )
    return TrainingArguments(
        output_dir=str(out_dir),
        learning_rate=lr,
        per_device_train_batch_size=micro_batch_size,
        gradient_accumulation_steps=batch_size // (micro_batch_size * world),
        num_train_epochs=epochs,
        max_steps=max_steps,
        warmup_steps=warmup,
        weight_decay=weight_decay,
        lr_scheduler_type=scheduler,
        optim="adamw_torch_fused",
        seed=seed,
        data_seed=seed,
        bf16=bf16,
        use_cpu=device == "cpu",
        save_strategy="steps" if save_steps else "no",
        save_steps=save_steps or 500,
        logging_steps=logging_steps,
        report_to="none",
        disable_tqdm=True,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        **fsdp,
        **extra,
    )


class CompletionLossTrainer(Trainer):
    """``Trainer`` whose training loss unembeds only the labelled positions (:mod:`arithmech.finetune.loss`:
    the model's own loss and gradients, to float rounding, without the ``(b, seq, vocab)`` logits). In one
    process only: under DDP or DataParallel the wrapped model's own forward must run, so the loss is then
    the model's own (``Trainer.compute_loss``)."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        net = self.accelerator.unwrap_model(model)
        if return_outputs or "labels" not in inputs or not model.training or net is not model or self.args.n_gpu > 1:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        return completion_loss(net, inputs, num_items_in_batch)


class HeadMaskedTrainer(CompletionLossTrainer):
    """``Trainer`` for precise SFT: trains only ``spec``'s slices; checkpoints are the small adapter.

    >>> trainer = HeadMaskedTrainer(model, training_args("out"), spec=HeadSpec(heads=((3, 1), (4, 0))),
    ...                             train_dataset=rows, data_collator=Collator(tok.pad_token_id))
    >>> trainer.train(); trainer.save_model("adapter_dir"); merged = trainer.merged_model()
    """

    def __init__(
        self,
        model=None,
        args: TrainingArguments | None = None,
        spec: adapter.HeadSpec | None = None,
        cache_prefix: bool | None = None,
        **kw,
    ):
        """``cache_prefix``: train from the cached output of the frozen layers below the lowest trained
        layer (:mod:`arithmech.finetune.prefix`; same losses and gradients). ``None``: on when exact
        (no dropout in the model, lowest trained layer >= 1, a list of training rows)."""
        if spec is None:
            raise ValueError("HeadMaskedTrainer needs spec=HeadSpec(heads=..., mlps=...)")
        if args is not None and args.fsdp:
            raise ValueError("precise SFT runs on one device (the slices are small); use FSDP for full SFT only")
        if not adapter.slice_modules(model):
            adapter.attach(model, spec)
        self.spec = spec
        k = prefix.lowest_trained_layer(spec)
        possible = k >= 1 and isinstance(kw.get("train_dataset"), (list, tuple)) and prefix.exact_for(model)
        if cache_prefix and not possible:
            raise ValueError(
                "cache_prefix needs a list of training rows, a lowest trained layer >= 1 and no dropout in the model"
            )
        self.prefix = prefix.PrefixCache(model, k) if (possible if cache_prefix is None else cache_prefix) else None
        if self.prefix is not None:
            kw["train_dataset"] = prefix.with_row_ids(kw["train_dataset"])
            kw["data_collator"] = prefix.RowIdCollator(kw["data_collator"])
        super().__init__(model=model, args=args, **kw)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        row_ids = inputs.pop("row_id", None)
        if self.prefix is None or row_ids is None or not model.training:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        net = self.accelerator.unwrap_model(model)
        h = self.prefix.inputs_embeds(net, inputs["input_ids"], inputs["attention_mask"], row_ids)
        cached = {"inputs_embeds": h, **{k: v for k, v in inputs.items() if k != "input_ids"}}
        with prefix.skipped_layers(net, self.prefix.k):
            return super().compute_loss(model, cached, return_outputs, num_items_in_batch)

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        out = output_dir or self.args.output_dir
        if self.args.should_save:
            # transformers types Trainer.model and args.output_dir Optional; both are set once __init__ has run
            adapter.save_adapter(self.model, self.spec, out)  # type: ignore[arg-type]
            if self.processing_class is not None:
                self.processing_class.save_pretrained(out)  # type: ignore[arg-type]  # output_dir, as above

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model=None) -> None:
        adapter.load_adapter(model or self.model, resume_from_checkpoint)  # type: ignore[arg-type]  # as in _save

    def _load_best_model(self) -> None:
        # transformers calls this only once best_model_checkpoint is set (its type is Optional, like Trainer.model)
        adapter.load_adapter(self.model, self.state.best_model_checkpoint)  # type: ignore[arg-type]

    def merged_model(self):
        """Merge the slices into the base weights (in place; training is over) and return the model."""
        return adapter.merge(self.model)


class _Clock(TrainerCallback):
    """Wall time of each optimizer step end, for the steady-state samples/s (first step excluded)."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def on_step_end(self, args, state, control, **kw):
        self.times.append(time.perf_counter())


def make_trainer(
    model,
    mode: str,
    args: TrainingArguments,
    rows: list[dict],
    tok,
    spec: adapter.HeadSpec | None = None,
    cache_prefix: bool | None = None,
) -> Trainer:
    """A :class:`HeadMaskedTrainer` (``precise``; ``cache_prefix`` as there) or a plain ``Trainer`` on all
    parameters (``full``)."""
    kw: dict[str, Any] = dict(args=args, train_dataset=rows, data_collator=Collator(tok.pad_token_id))
    trainer: Trainer
    if mode == "precise":
        trainer = HeadMaskedTrainer(model, spec=spec, cache_prefix=cache_prefix, **kw)
    elif mode == "full":
        model.requires_grad_(True)
        trainer = CompletionLossTrainer(model=model, **kw)
    else:
        raise ValueError(f"mode {mode!r}: use 'precise' or 'full'")
    trainer.remove_callback(PrinterCallback)  # losses stay in trainer.state.log_history
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
    return {
        "steps": out.global_step,
        "effective_batch": eff,
        "runtime_s": round(out.metrics["train_runtime"], 3),
        "samples_per_second": round(steady or out.metrics["train_samples_per_second"], 3),
        "trainer_samples_per_second": out.metrics["train_samples_per_second"],
        "train_loss": round(out.training_loss, 5),
        "peak_memory": mem.result,
        "loss_history": [(h["step"], h["loss"]) for h in trainer.state.log_history if "loss" in h],
    }
