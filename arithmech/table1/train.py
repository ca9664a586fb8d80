"""One run of Table 1: what a run is, training one arm at one rate, its gains over base, and
whether its record already exists.

:class:`Run` names a run (arm, rate, seed, draw); :func:`train_arm` fine-tunes a fresh copy of the model on the
suite's training split, every parameter or the given heads' slices; :func:`deltas` pairs a run's test items with
base's; :data:`RUN_TAG` and :func:`check_records` recognise and check the records the runner reads back, and
:func:`same_record` says whether one was made with the same arguments (so a resumed run skips it). The runner
that plans and runs the whole table is :mod:`arithmech.table1.run`.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import NamedTuple

import torch

from arithmech.core import records
from arithmech.core.models import load_model
from arithmech.finetune import adapter, runner
from arithmech.finetune.data import tokenize_pairs
from arithmech.paper import SFT
from arithmech.steps.config_training import Table1 as Config

RUN_TAG = re.compile(r"^(base|base-shots|full-s\d+-lr.+|precise-(key|share|random\d+|random-any\d+)-s\d+-lr.+)$")
"""The records an arms run reads back (resuming) or replaces: ``finetune/<stem>.json`` with these stems."""


def check_records(folder: str | Path) -> None:
    """Refuse, before any work, a record of this runner in ``folder`` that is not a readable fine-tune record."""
    d = Path(folder) / "finetune"
    if not d.is_dir():
        return
    for p in sorted(d.glob("*.json")):
        if RUN_TAG.match(p.stem):
            records.check_record_file(p, folder)


class Run(NamedTuple):
    """One run of the table: its ``arm`` (``"base"``, ``"base-shots"`` or one of :data:`ARMS`), learning rate ``lr``
    (``None`` for the base model), training ``seed`` and random-head ``draw`` (``None`` for the base model)."""

    arm: str
    lr: float | None
    seed: int
    draw: int | None


def train_arm(
    config: Config, suite, heads, lr: float, seed: int, steps: int, data_seed: int, kv_policy: str = "any"
) -> tuple[object, object, dict]:
    """Fine-tune a fresh copy of ``config.model_name`` (on ``config.device``, in ``config.dtype``, ``config.batch_size``
    rows a step) on ``suite.train`` for ``steps`` steps at rate ``lr``: every parameter (``heads`` None) or the
    ``heads``' slices with H/h rescaling (``kv_policy``: :class:`arithmech.finetune.adapter.HeadSpec`'s); ``seed``
    the training's, ``data_seed`` the splits'. Returns
    ``(model, tokenizer, training record)``."""
    batch_size, device = config.batch_size, config.device
    torch.manual_seed(seed)
    net, tok, _ = load_model(config.model_name, device=device, dtype=config.dtype, attn_implementation="sdpa")
    rows = tokenize_pairs(tok, suite.train(steps * batch_size, seed, data_seed))
    spec = (
        adapter.HeadSpec(heads=tuple(map(tuple, heads)), kv_policy=kv_policy, rescale=True)
        if heads is not None
        else None
    )
    with tempfile.TemporaryDirectory(prefix="arithmech-arms-") as tmp:
        args = runner.training_args(
            tmp,
            lr=lr,
            batch_size=batch_size,
            micro_batch_size=batch_size,
            max_steps=steps,
            warmup=SFT["warmup"],
            weight_decay=SFT["weight_decay"],
            seed=seed,
            device=device,
            logging_steps=max(1, steps // 10),
        )
        net.train()
        trainer = runner.make_trainer(net, "precise" if spec else "full", args, rows, tok, spec)
        tuned = sum(p.numel() for p in net.parameters() if p.requires_grad)
        rec = runner.train_measured(trainer, device)
    if spec is not None:
        net = trainer.merged_model()  # type: ignore[attr-defined]  # make_trainer gives a HeadMaskedTrainer here
    net.eval().requires_grad_(False)
    rec.update(
        tuned_parameters=tuned,
        total_parameters=sum(p.numel() for p in net.parameters()),
        n_train=len(rows),
        lr=lr,
        warmup=SFT["warmup"],
        weight_decay=SFT["weight_decay"],
        scheduler="cosine",
        optimizer="adamw_torch_fused",
    )
    return net, tok, rec


def same_record(out: Path, mode: str, tag: str | None, h: str) -> bool:
    """True when ``finetune/<mode>[-tag].json`` is a valid record made with the arguments hashing to ``h``."""
    if not records.finetune_path(out, mode, tag).exists():
        return False
    try:
        return (records.read_finetune(out, mode, tag).get("parameters") or {}).get("args_sha256") == h
    except (ValueError, OSError):
        return False
