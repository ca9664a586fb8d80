"""One run of Table 1: what a run is, training one arm at one rate, its gains over base, whether its record already
exists; and full SFT's learning curve, whose knee is every run's default step budget.

:class:`Run` names a run (arm, rate, seed, draw); :func:`train_arm` fine-tunes a fresh copy of the model on the
suite's training split, every parameter or the given heads' slices; :func:`deltas` pairs a run's test items with
base's; :data:`RUN_TAG` and :func:`check_records` recognise and check the records the runner reads back, and
:func:`same_record` says whether one was made with the same arguments (so a resumed run skips it). The runner
that plans and runs the whole table is :mod:`arithmech.table1.run`.

:func:`learning_curve` makes the curve before any arm runs: one full-SFT run at the middle rate of full's grid, constant
after warm-up, scored on the validation items every ``every`` steps (``finetune/curve.json``); its knee
(:data:`KNEE_RULE`) is the fewest steps that reach most of the curve's gain. It is kept when a re-run has the same
arguments.

A suite of :data:`BEND_SUITES` (the planted model's) reads its budget by :data:`BEND_RULE` instead (:func:`bend`):
the knee of a curve that is still rising at its end is only its end, so the budget is where the curve has *bent* —
the first doubling of the steps that no longer gains more than its interval — and a curve that has not bent gives
no budget (extend ``--curve-steps``). Each point keeps its validation items (``val_items``) for that interval.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import torch

from arithmech.core import provenance, records
from arithmech.core import results as results_io
from arithmech.core.config import command_line
from arithmech.core.models import load_model
from arithmech.core.stats import t_interval
from arithmech.evals.suites import get_suite
from arithmech.finetune import adapter, runner
from arithmech.finetune.data import tokenize_pairs
from arithmech.paper import SFT
from arithmech.steps.config_training import Table1 as Config
from arithmech.table1.plan import GRIDS, val_math

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


KNEE = 0.9


def args_hash(obj: dict) -> str:
    """The sha256 of a run's arguments (a record is kept on resume when its recorded hash is the same)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


KNEE_RULE = (
    f"the fewest steps whose validation math accuracy reaches base + {KNEE} x (the curve's best - base), "
    "on one full-SFT run at the middle rate of full's grid, constant after warm-up"
)


BEND_SUITES = ("planted",)
BEND_RULE = (
    "at the steps every x 2^j of one full-SFT run at the middle rate of full's grid, constant after warm-up (every "
    "= 20): the fewest steps s whose validation math items (one a problem cluster) are above base's (a paired 95% "
    "t interval over the clusters of the per-cluster change from step 0 to s, lower end above 0) and whose gain to "
    "every later doubling (2s, 4s, ... up to the curve's end; the same paired interval) is not (lower end at or "
    "below 0); s at most half the curve; no such s: no budget (extend --curve-steps; no Table 1 run on a rising "
    "curve)"
)


def _paired(points: dict[int, list[float]], a: int, b: int) -> tuple[float, float, float]:
    """``(gain, lo, hi)``: the mean per-item change from step ``a`` to step ``b``, paired 95% t interval."""
    d = [y - x for x, y in zip(points[a], points[b])]
    return t_interval(d)


def bend(points: list[dict], every: int = 20) -> int | None:
    """:data:`BEND_RULE` over curve ``points`` (``{"step", "val_items"}``, step 0 = the base model); None where the
    curve has not bent by its last doubling."""
    items = {p["step"]: p["val_items"] for p in points}
    for row in doublings(points, every):
        if row["rise"][1] > 0 and all(_paired(items, row["step"], t)[1] <= 0 for t in row["later"]):
            return row["step"]
    return None


def doublings(points: list[dict], every: int = 20) -> list[dict]:
    """The rows :func:`bend` reads: per doubling ``s`` of the curve (with ``2s`` in it), the validation score at
    ``s``, the rise from step 0 and the gain to ``2s`` with their paired intervals, and the ``later`` doublings."""
    items, rows, s = {p["step"]: p["val_items"] for p in points}, [], every
    while 2 * s in items and s in items:
        later = [s * 2**j for j in range(1, 64) if s * 2**j in items]
        rise, gain = _paired(items, 0, s), _paired(items, s, 2 * s)
        rows.append({"step": s, "val": sum(items[s]) / len(items[s]), "rise": rise, "gain_to_double": gain})
        rows[-1]["later"] = later
        s *= 2
    return rows


def knee(points: list[dict]) -> int:
    """:data:`KNEE_RULE` over curve ``points`` (``{"step", "val_math"}``, step 0 = the base model)."""
    pts = sorted(points, key=lambda p: p["step"])
    base, best = pts[0]["val_math"], max(p["val_math"] for p in pts)
    return next(p["step"] for p in pts if p["val_math"] >= base + KNEE * (best - base) and p["step"] > 0)


class _Curve(runner.TrainerCallback):
    """Scores the validation math items every ``every`` optimizer steps of a training run, and keeps the training
    loss logged at those steps (``train_loss``; step 0, the base model, has none)."""

    def __init__(self, suite, tok, sizes: dict, data_seed: int, every: int):
        self.suite, self.tok, self.sizes, self.data_seed, self.every = suite, tok, sizes, data_seed, every
        self.points: list[dict] = []

    def score(self, model, step: int) -> None:
        was = model.training
        model.eval()
        with torch.no_grad():
            val = self.suite.evaluate(model, self.tok, "val", self.sizes, self.data_seed)
        model.train(was)
        self.points.append(
            {
                "step": step,
                "val_math": val_math(val, self.suite),
                "val_nll": val["math_nll"]["value"],
                "val_items": val[self.suite.primary_math]["items"],
                **{
                    f"val_{m}": r["value"]
                    for m, r in val.items()  # what it keeps (or forgets)
                    if m not in self.suite.math and m != "math_nll"
                },
            }
        )

    def on_step_end(self, args, state, control, model=None, **kw):
        if state.global_step % self.every == 0:
            self.score(model, state.global_step)

    def on_log(self, args, state, control, logs=None, **kw):
        """Keep the training loss the trainer logs every ``every`` steps (its mean over those steps) beside the
        point scored at the same step: a loss that falls while the validation loss rises is forgetting, not a
        diverging optimizer."""
        if logs and "loss" in logs:
            for p in self.points:
                if p["step"] == state.global_step:
                    p["train_loss"] = logs["loss"]


def _train(net, tok, rows, c: Config, lr: float, every: int, cb: _Curve) -> None:
    """Full SFT of ``net`` on ``rows`` for ``c.curve_steps`` steps at ``lr``, constant after warm-up, logging every
    ``every`` steps; ``cb`` scores the validation items as it goes (in a scratch folder, removed after)."""
    with tempfile.TemporaryDirectory(prefix="arithmech-curve-") as tmp:
        targs = runner.training_args(
            tmp,
            lr=lr,
            batch_size=c.batch_size,
            micro_batch_size=c.batch_size,
            max_steps=c.curve_steps,
            warmup=SFT["warmup"],
            weight_decay=SFT["weight_decay"],
            seed=c.seeds[0],
            device=c.device,
            logging_steps=every,
            scheduler="constant_with_warmup",
        )
        net.train()
        trainer = runner.make_trainer(net, "full", targs, rows, tok)
        trainer.add_callback(cb)
        trainer.train()


def learning_curve(config: Config, data_seed: int | None = None, every: int = 20) -> dict:
    """Full SFT's validation learning curve (one run of ``config.curve_steps`` steps at the middle rate of
    full's grid, or at ``config.curve_lr`` for an exploration curve, constant after warm-up, scored every ``every``
    steps) and its knee (:data:`KNEE_RULE`);
    written to ``finetune/curve.json``, which the arms' default step budget reads (resumes: a curve of the
    same arguments is kept); ``data_seed``: the splits' seed, by default ``--seed``."""
    c = config
    data_seed = c.seed if data_seed is None else data_seed
    S = get_suite(c.suite)
    sizes = S.sizes() if S.sizes else {}
    lr = sorted(GRIDS[c.suite]["full"])[1] if c.curve_lr is None else c.curve_lr
    out = results_io.model_folder(c.results, c.model_name)
    args = {
        "model": results_io.folder_name(c.model_name),
        "suite": c.suite,
        "lr": lr,
        "steps": c.curve_steps,
        "batch_size": c.batch_size,
        "seed": c.seeds[0],
        "data_seed": data_seed,
        "every": every,
        "sizes": sizes,
    }
    h = args_hash(args)
    if results_io.exists(out, "finetune/curve.json"):
        old = results_io.read(out, "finetune/curve.json")
        if old.get("args_sha256") == h:
            return old
    t0 = time.time()
    torch.manual_seed(c.seeds[0])
    net, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
    cb = _Curve(S, tok, sizes, data_seed, every)
    net.eval()
    cb.score(net, 0)
    rows = tokenize_pairs(tok, S.train(c.curve_steps * c.batch_size, c.seeds[0], data_seed))
    _train(net, tok, rows, c, lr, every, cb)
    curve = {
        **args,
        "args_sha256": h,
        "rule": BEND_RULE if c.suite in BEND_SUITES else KNEE_RULE,
        "points": cb.points,
        "knee": bend(cb.points, every) if c.suite in BEND_SUITES else knee(cb.points),
        "command": command_line("table1", c.replace(curve_only=True, steps=None)),
        "wall_s": round(time.time() - t0, 1),
    }
    results_io.write_step(
        out,
        "curve",
        {"finetune/curve.json": curve},
        record={"parameters": args, "wall_s": curve["wall_s"], "versions": provenance.versions()},
    )
    return curve
