"""Identify (paper §4.1, §5.1, App. B, D, E): which heads and MLPs compute the answer, and do they matter?

The step end to end, for one or several tasks::

    X_r / X_c pairs ──► keep what the model answers right ──► path patching (patching.py)
        ──► effects per task and for all tasks, with bootstrap intervals (Fig. 2, Fig. 15; effects.py)
        ──► key heads (the effect's whole 95% interval below the threshold)
        ──► knockout curves, effect rank vs random rank (knockout.py, Fig. 3)
        ──► transfer: Fig. 4's prompts and a template family not used to find the heads

>>> res = identify(model, tok, ["addition", "subtraction"], n_samples=64)
>>> res.effects.head(); res.key_heads["heads"][:3]
>>> write_results(res, "results/embedded")

``python -m arithmech identify --model embedded --task all --out results/embedded`` does the same
from the shell and writes ``effects.csv``, ``key_heads.json``, ``prompts.jsonl``, ``knockout.csv``,
``transfer.csv``, ``heldout.json`` and ``run.json`` (atomically; same seed, same files).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch

from arithmech.core import results as R
from arithmech.core.checkpoints import frame_to_obj, obj_to_frame
from arithmech.core.progress import Progress
from arithmech.core.memory import PeakMemory
from arithmech.data import pairs as D
from arithmech.data import templates as T
from arithmech.experiments.paper import FIG4_CASES
from arithmech.methods.knockout import (POSITIONS, Means, default_ks, group_key, heldout_drop, knockout_curve,
                       mean_activations, transfer_table)
from arithmech.methods.knockout_tables import knockout_summary, positions_table  # noqa: F401 (the step's tables)
from arithmech.methods.effects import N_BOOT, effects_frame, key_heads, ranking  # noqa: F401 (public names here too)
from arithmech.methods.patching import Patched, path_patch

OPERATIONS = ("addition", "subtraction", "multiplication", "division")
PATCHED_FIELDS = ("logit_p", "logit_o", "model_logit", "logit_std", "lse_p", "lse_o")

# ---------------------------------------------------------------------------------- the samples
def task_templates(task) -> tuple[str, list[T.Template]]:
    """``(label, templates)`` for a task name, a template-pair file or a list of templates."""
    if isinstance(task, (list, tuple)):
        return "custom", list(task)
    task = str(task)
    if task.endswith((".json", ".jsonl")) or Path(task).is_file():
        return Path(task).stem, D.load_template_pairs(task)
    return task, D.select_templates(task)


def task_label(task) -> str:
    """A short name for a task: its name, a file's stem, the id of a single template, else ``custom``."""
    if isinstance(task, (list, tuple)) and task and isinstance(task[0], D.Sample):
        return "custom"
    if isinstance(task, (list, tuple)):
        return task[0].id if len(task) == 1 else "custom"
    return task_templates(task)[0]


def prepare(model, tok, task, n_samples: int, seed: int, batch_size: int = 64) -> tuple[list[D.Sample], dict]:
    """Draw ``n_samples`` pairs of ``task`` and keep those the model answers right (the paper's X_r).

    ``task``: an operation, ``fig8``, ``fig10``, ``exponentiation``, a template-pair file, a list of
    templates, or a list of ready :class:`~arithmech.data.pairs.Sample` (e.g. :func:`gsm8k_samples`).
    """
    if n_samples < 1:
        raise ValueError(f"n_samples={n_samples}: need at least one sample")
    if isinstance(task, list) and task and isinstance(task[0], D.Sample):
        samples, stats = task[:n_samples], D.PairStats(made=len(task[:n_samples]))
    else:
        _, tpls = task_templates(task)
        samples, stats = D.make_pairs(tok, tpls, n=n_samples, seed=seed)
    kept, acc = D.filter_correct(model, tok, samples, batch_size)
    info = {"n_drawn": len(samples), "n_kept": len(kept), "accuracy": len(kept) / len(samples),
            "redrawn": stats.redrawn, "accuracy_by_template": acc}
    if not kept:
        what = task if isinstance(task, str) else "of templates " + ", ".join(
            getattr(t, "id", getattr(t, "template", "?")) for t in task[:5])
        raise ValueError(f"the model answers none of the {len(samples)} prompts {what} right, so there "
                         "is no reference data X_r to patch; use a task the model can do (see `python -m arithmech "
                         "accuracy`) or more samples")
    return kept, info


# --------------------------------------------------------------------------------- the pipeline
@dataclass
class IdentifyResult:
    """Everything one identify run produced; :func:`write_results` turns it into files."""

    tasks: dict[str, list[D.Sample]]
    patched: dict[str, Patched]
    effects: pd.DataFrame
    key_heads: dict
    knockout: pd.DataFrame
    means: Means
    info: dict
    params: dict
    transfer: pd.DataFrame | None = None
    heldout: dict | None = None
    timings: dict = field(default_factory=dict)
    memory: dict = field(default_factory=dict)     # peak RSS / CUDA bytes, see arithmech.core.memory


def identify(model, tok, tasks: Sequence | str = "all", n_samples: int = 256, seed: int = 0,
             threshold: float = -0.05, method: str = "fast", prob: bool = True, knockout: bool = True,
             knockout_samples: int = 64, n_random: int = 3, ks: Sequence[int] | None = None,
             curves_for: str = "primary", knockout_positions: str = "end",
             transfer: bool = True, heldout: str = "fig10", batch_size: int = 64,
             checkpoint=None, n_boot: int = N_BOOT) -> IdentifyResult:
    """Path-patch every head and MLP on each task, rank, knock out, transfer.

    Args:
        tasks: ``"all"`` (the four operations), one task, or a list of tasks (names, template-pair
            files, template lists); each gets ``n_samples`` draws. With several tasks the rows of task
            ``"all"`` average over every sample (Fig. 2) and key heads are taken from them.
        knockout_samples: X_r samples per task in the knockout curves (the first ones; all if fewer).
        n_boot: bootstrap resamples of the prompts for each effect's 95% interval (seeded by ``seed``).
        n_random: seeded random orders per knockout curve.
        ks: numbers of heads to knock out (default :func:`~arithmech.methods.knockout.default_ks`).
        curves_for: ``"primary"``: full knockout curves (heads and MLPs) for the primary task (``"all"``
            with several tasks) and, for every other task, its key heads vs as many random heads;
            ``"each"``: full curves for every task.
        knockout_positions: ``"end"`` (mean-ablate at END, where the heads were patched; fast) or
            ``"all"`` (every position); see :mod:`arithmech.methods.knockout`. Also used by the transfer step.
        heldout: a template family (``fig10``) for the transfer test: key heads are recomputed from the
            samples of the other templates and knocked out on fresh ``heldout`` pairs (pooled means).
        checkpoint: a :class:`arithmech.core.checkpoints.Checkpoints` (:func:`run` passes one): each task's
            samples and patching result and each task's knockout curves are saved there when done, and
            loaded instead of recomputed when present (a re-run after an interruption continues; the
            files come out byte-identical). Progress goes to a terminal's stderr (:mod:`arithmech.core.progress`).
    """
    if method not in ("fast", "reference"):
        raise ValueError(f"method {method!r}: use 'fast' or 'reference'")
    if curves_for not in ("primary", "each"):
        raise ValueError(f"curves_for {curves_for!r}: use 'primary' or 'each'")
    if knockout_positions not in POSITIONS:
        raise ValueError(f"knockout_positions {knockout_positions!r}: use one of {POSITIONS}")
    if not threshold < 0:
        raise ValueError(f"threshold {threshold}: key heads lower the answer logit; give a negative relative "
                         "change such as -0.05")
    t0 = time.time()
    mem = PeakMemory(model)
    specs = list(OPERATIONS) if tasks == "all" else ([tasks] if isinstance(tasks, str) else list(tasks))
    if not specs:
        raise ValueError("no task given: pass a task name, a template-pair file or a list of them")
    labelled = []
    for t in specs:
        label = task_label(t)
        while label in [l for l, _ in labelled]:
            label += "'"
        labelled.append((label, t))
    ck, resumed = checkpoint, []
    n_ko = (len(labelled) + (len(labelled) > 1)) if knockout else 0
    with Progress("identify", len(labelled) + n_ko + bool(transfer)) as bar:
        samples, info, patched, frames = {}, {}, {}, []
        timings = {"prepare": 0.0, "patching": 0.0}
        for i, (label, spec) in enumerate(labelled):
            got = ck.load(f"task-{i}") if ck is not None else None
            if got is not None and got["label"] == label:           # a finished task of an interrupted run
                samples[label] = [D.Sample(**r) for r in got["samples"]]
                info[label], patched[label] = got["info"], Patched(**got["patched"])
                resumed.append(label)
            else:
                t = time.time()
                samples[label], info[label] = prepare(model, tok, spec, n_samples, seed, batch_size)
                t1 = time.time()
                ss = samples[label]
                patched[label] = path_patch(model, tok, [s.clean for s in ss], [s.corrupt for s in ss],
                                            D.answer_ids(tok, ss), method=method, prob=prob, batch_size=batch_size)
                timings["prepare"] += t1 - t
                timings["patching"] += time.time() - t1
                if ck is not None:
                    ck.save(f"task-{i}", {"label": label, "samples": [s.to_json() for s in ss], "info": info[label],
                                          "patched": {f: getattr(patched[label], f) for f in PATCHED_FIELDS}})
            frames.append(effects_frame(patched[label], label, prob, n_boot, seed))
            bar.advance(note=f"patched {label}")
        mem.mark("patching")
        if resumed:
            print(f"identify: resumed {len(resumed)} of {len(labelled)} tasks ({', '.join(resumed)}) from {ck.dir}",
                  file=sys.stderr, flush=True)
        t1 = time.time()
        primary = next(iter(samples))
        if len(samples) > 1:
            primary = "all"
            patched["all"] = _concat([patched[k] for k in samples])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # already warned per task
                frames.append(effects_frame(patched["all"], "all", prob, n_boot, seed))
        effects = pd.concat(frames, ignore_index=True)
        timings["patching"] += time.time() - t1
        kh = key_heads(effects, primary, threshold)
        kh["per_task"] = {t: key_heads(effects, t, threshold)["heads"] for t in samples} if len(samples) > 1 else {}
        every = [s for ss in samples.values() for s in ss]
        t2 = time.time()
        means = mean_activations(model, tok, [s.corrupt for s in every], [group_key(s) for s in every], batch_size)
        cfg = model.config
        universe = [(l, h) for l in range(cfg.num_hidden_layers) for h in range(cfg.num_attention_heads)]
        curves = []
        if knockout:
            for j, task in enumerate(list(samples) + (["all"] if len(samples) > 1 else [])):
                got = ck.load(f"knockout-{j}") if ck is not None else None
                if got is not None and got["task"] == task:
                    curves.append(obj_to_frame(got["frame"]))
                    bar.advance(note=f"knockout {task} (checkpoint)")
                    continue
                ss = (samples[task] if task in samples else D.interleave(samples.values()))[:knockout_samples]
                heads, mlps = ranking(effects, task)
                n_key = len(key_heads(effects, task, threshold)["heads"])
                if task != primary and curves_for != "each":          # key heads vs as many random ones only
                    plan = [("head", heads, universe, [n_key])]
                else:
                    plan = [("head", heads, universe, sorted(set(ks or default_ks(len(universe))) | {n_key})),
                            ("mlp", mlps, list(range(cfg.num_hidden_layers)), default_ks(cfg.num_hidden_layers))]
                mine = [knockout_curve(model, tok, ss, means, rank, kk, uni, kind, n_random, seed, batch_size=batch_size,
                                       positions=knockout_positions).assign(task=task) for kind, rank, uni, kk in plan]
                curves += mine
                if ck is not None:
                    ck.save(f"knockout-{j}", {"task": task, "frame": frame_to_obj(pd.concat(mine, ignore_index=True))})
                bar.advance(note=f"knockout {task}")
        ko = pd.concat(curves, ignore_index=True)[["task", "kind", "order", "seed", "k", "accuracy", "n"]] \
            if curves else pd.DataFrame(columns=["task", "kind", "order", "seed", "k", "accuracy", "n"])
        timings["knockout"] = time.time() - t2
        mem.mark("knockout")
        res = IdentifyResult(samples, patched, effects, kh, ko, means, info, timings=timings, params=dict(
            tasks=list(samples), n_samples=n_samples, seed=seed, threshold=threshold, method=method, prob=prob,
            knockout_samples=knockout_samples, n_random=n_random, ks=list(ks) if ks else None, curves_for=curves_for,
            knockout_positions=knockout_positions, heldout=heldout, batch_size=batch_size, n_boot=n_boot,
            key_rule="effect_hi < threshold (95% percentile bootstrap over prompts, seeded by seed)"))
        if transfer:
            t3 = time.time()
            run_transfer(res, model, tok, heldout, n_samples, seed, batch_size)
            timings["transfer"] = time.time() - t3
            mem.mark("transfer")
            bar.advance(note="transfer")
    timings["total"] = time.time() - t0
    res.memory = mem.summary()
    return res


def _concat(ps: Sequence[Patched]) -> Patched:
    cat = lambda f: None if getattr(ps[0], f) is None else torch.cat([getattr(p, f) for p in ps])
    return Patched(*(cat(f) for f in PATCHED_FIELDS))


def run_transfer(res: IdentifyResult, model, tok, heldout: str = "fig10", n_samples: int = 256, seed: int = 0,
                 batch_size: int = 64, cases: Sequence[tuple[str, str]] = FIG4_CASES) -> None:
    """Fig. 4 and the held-out family: fills ``res.transfer`` and ``res.heldout``."""
    held_ids = {t.id for t in D.select_templates(heldout)}
    every = [s for ss in res.tasks.values() for s in ss]
    use = torch.tensor([s.template not in held_ids for s in every])
    heads = [(h["layer"], h["head"]) for h in res.key_heads["heads"]]
    positions = res.params["knockout_positions"]
    res.transfer = transfer_table(model, tok, heads, res.means, cases, positions=positions)
    cfg = model.config
    universe = [(l, h) for l in range(cfg.num_hidden_layers) for h in range(cfg.num_attention_heads)]
    if not use.any():
        res.heldout = {"family": heldout, "status": "skipped: every identification sample is from this family"}
        return
    allp = _concat([res.patched[t] for t in res.tasks])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eff = effects_frame(allp.select(use), "id", False, res.params["n_boot"], res.params["seed"])
    id_heads = [(h["layer"], h["head"]) for h in key_heads(eff, "id", res.params["threshold"])["heads"]]
    test, _ = D.make_pairs(tok, heldout, n=n_samples, seed=seed + 1)
    id_means = mean_activations(model, tok, [s.corrupt for s, u in zip(every, use.tolist()) if u],
                                [group_key(s) for s, u in zip(every, use.tolist()) if u], batch_size)
    r = heldout_drop(model, tok, id_heads, id_means, test, universe, res.params["n_random"], seed, batch_size=batch_size,
                     positions=positions)
    res.heldout = {"family": heldout, "identified_on": int(use.sum()), "heads": [f"{l}.{h}" for l, h in id_heads],
                   "test_prompts": f"data.make_pairs(tok, {heldout!r}, n={n_samples}, seed={seed + 1}), unfiltered", **r}


# ---------------------------------------------------------------------------------------- files
def write_results(res: IdentifyResult, folder: str | Path, extra: dict | None = None, model: str | None = None) -> Path:
    """Write the run's files into ``folder`` as one set (:func:`arithmech.core.results.write_step`)."""
    files = {"effects.csv": res.effects, "key_heads.json": res.key_heads,
             "prompts.jsonl": [s for ss in res.tasks.values() for s in ss]}
    if not res.knockout.empty:                           # none with knockout=False (no empty file)
        files["knockout.csv"] = res.knockout
    if res.transfer is not None:
        files["transfer.csv"] = res.transfer
    if res.heldout is not None:
        files["heldout.json"] = res.heldout
    record = {"parameters": {**res.params, **(extra or {})}, "samples": res.info, "versions": R.versions(),
              "wall_seconds": round(res.timings.get("total", 0.0), 2),
              "timings": {k: round(v, 2) for k, v in res.timings.items()},
              "peak_memory": res.memory or R.peak_memory()}
    return R.write_step(folder, "identify", files, record, model=model)


def run(model: str = "embedded", task="all", n_samples: int = 256, seed: int = 0, results: str | Path = "results",
        device: str = "cpu", dtype: str = "float32", threshold: float = -0.05, method: str = "fast",
        overwrite: bool = False, out: str | Path | None = None, **kw) -> IdentifyResult:
    """Load ``model``, run :func:`identify`, write the files to ``out`` (the model's folder) or else to
    ``results`` (the results root or the model's folder, see :func:`arithmech.core.results.model_folder`).

    Finished tasks are checkpointed in ``<folder>/.checkpoints/identify-<hash of the arguments>/``; a re-run
    with the same arguments after an interruption continues from there and writes the same files; the
    checkpoints are removed once the files are written."""
    from arithmech.core.models import load_model
    folder = Path(out) if out else R.model_folder(results, model)
    R.check_writable(folder, "identify", overwrite)
    if not threshold < 0:
        raise ValueError(f"--threshold {threshold}: key heads lower the answer logit; give a negative relative "
                         "change such as -0.05")
    if method not in ("fast", "reference"):
        raise ValueError(f"--method {method!r}: use fast or reference")
    if kw.get("knockout_positions", "end") not in POSITIONS:
        raise ValueError(f"--knockout-positions {kw['knockout_positions']!r}: use one of {', '.join(POSITIONS)}")
    for k in ("knockout_samples", "n_random", "batch_size", "n_boot"):
        if k in kw and not (isinstance(kw[k], int) and kw[k] >= 1):
            raise ValueError(f"{k}={kw[k]!r}: expected a whole number >= 1")
    for t in ([task] if isinstance(task, str) else task):
        if isinstance(t, str) and t != "all":
            task_templates(t)                  # a wrong task name or a missing file fails before loading
    torch.manual_seed(seed)
    random.seed(seed)
    ck = R.checkpoints(folder, "identify", dict(model=model, task=task, n_samples=n_samples, seed=seed, device=device,
                                                dtype=dtype, threshold=threshold, method=method, **kw))
    net, tok, _ = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")  # no attention weights needed
    res = identify(net, tok, task, n_samples=n_samples, seed=seed, threshold=threshold, method=method, checkpoint=ck,
                   **kw)
    write_results(res, folder, extra={"model": model, "task": task, "device": device, "dtype": dtype}, model=model)
    ck.clear()
    res.params["out"] = str(folder)
    return res


# ------------------------------------------------------------------------------------------ CLI
def _cli(a: argparse.Namespace) -> None:
    res = run(model=a.model, task=a.task, n_samples=a.n_samples, seed=a.seed, results=a.results, out=a.out,
              device=a.device, dtype=a.dtype, threshold=a.threshold, method=a.method, overwrite=a.overwrite,
              knockout=not a.no_knockout, knockout_samples=a.knockout_samples, n_random=a.random_seeds,
              curves_for=a.curves, knockout_positions=a.knockout_positions, prob=not a.no_prob,
              batch_size=a.batch_size, n_boot=a.n_boot)
    kh = res.key_heads
    names = ", ".join(f"{h['name']} ({h['effect']:+.1%})" for h in kh["heads"][:10]) or "none"
    print("samples kept (X_r): " + ", ".join(f"{t} {i['n_kept']}/{i['n_drawn']}" for t, i in res.info.items()))
    print(f"key heads of {kh['task']} (95% interval of the effect below {kh['threshold']:+.0%}): {names}")
    files = sorted(R.read_run(res.params["out"])["steps"]["identify"]["files"])
    print(f"wrote {', '.join(files)} and run.json to {res.params['out']}")


def add_cli(subparsers, name: str = "identify") -> None:
    from arithmech.core.inputs import POSITIVE, common_arguments
    s = subparsers.add_parser("identify", help="path patching of every head and MLP, key heads, knockout (§4.1, §5.1)")
    common_arguments(s, n_samples=256)
    s.add_argument("--task", default="all", help="addition, subtraction, multiplication, division, all (the four), "
                   "fig8, fig10, exponentiation, or a template-pair file (.json / .jsonl)")
    s.add_argument("--out", default=None, help="the model's results folder (same as --results DIR)")
    s.add_argument("--threshold", type=float, default=-0.05, help="key heads: the effect's whole 95%% bootstrap interval below this (paper: mean below -0.05)")
    s.add_argument("--n-boot", type=POSITIVE, default=N_BOOT, help="bootstrap resamples of the prompts per interval")
    s.add_argument("--method", default="fast", choices=["fast", "reference"])
    s.add_argument("--knockout-samples", type=POSITIVE, default=64, help="X_r samples per task in the knockout curves")
    s.add_argument("--random-seeds", type=POSITIVE, default=3, help="random-rank orders in the knockout curves")
    s.add_argument("--curves", default="primary", choices=["primary", "each"],
                   help="full knockout curves for the primary task only (default) or for each task")
    s.add_argument("--knockout-positions", default="end", choices=list(POSITIONS),
                   help="mean-ablate at END only (where heads were patched; fast) or at every position")
    s.add_argument("--no-knockout", action="store_true", help="skip the knockout curves")
    s.add_argument("--no-prob", action="store_true",
                   help="skip P({C}) (saves a full-vocabulary unembedding per patched run on large vocabularies)")
    s.add_argument("--batch-size", type=POSITIVE, default=64)
    s.set_defaults(func=_cli)
