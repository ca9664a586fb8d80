"""Identify (paper §4.1, §5.1, App. B, D, E): which heads and MLPs compute the answer, and do they matter?

The step end to end, for one or several tasks::

    X_r / X_c pairs ──► keep what the model answers right ──► path patching (patching.py)
        ──► effects per task and for all tasks, with bootstrap intervals (Fig. 2, Fig. 15; effects.py)
        ──► key heads (the effect's whole 95% interval below the threshold; beside it, the share rule:
            the whole interval of the head's share of the counterfactual's effect below share_threshold)
        ──► knockout: reference-pool means, key vs random non-key components, sanity rows
            (knockout_run.py, knockout_means.py, knockout.py; Fig. 3)
        ──► transfer: Fig. 4's prompts and a template family not used to find the heads

>>> res = identify(model, tok, ["addition", "subtraction"], n_samples=64)
>>> res.effects.head(); res.key_heads["heads"][:3]
>>> write_results(res, "results/embedded")

``python -m arithmech identify --model embedded --task all --out results/embedded`` does the same
from the shell and writes ``effects.csv``, ``key_heads.json``, ``prompts.jsonl``, ``answer_tokens.csv``,
``knockout.csv``, ``transfer.csv``, ``heldout.json`` and ``run.json`` (atomically; same seed, same files).
The answer token is ``answer_token="last-digit"`` by default (the prompt carries the answer's leading
digits; :mod:`arithmech.data.pairs`), ``"first"`` is the paper's.
"""
from __future__ import annotations

import random
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch

from arithmech.core import admission, results
from arithmech.core.memory import PeakMemory
from arithmech.core.models import load_model
from arithmech.core.progress import Progress, annotate
from arithmech.data import pairs as pairs_module
from arithmech.data import shots as shots_module
from arithmech.data.answer_tokens import answer_token_table
from arithmech.data.splits import BOOTSTRAP_UNITS, ranking_rows, resampling_units
from arithmech.methods import knockout_run
from arithmech.methods.ablation import MeanSource
from arithmech.methods.effects import (  # noqa: F401
    concat_patched,
    effects_frame,
    key_heads,
    key_heads_by_share,
    ranking,
    studied_heads,  # (public names here too)
)
from arithmech.methods.knockout import group_key, mean_activations
from arithmech.methods.knockout_overlap import counterfactual_overlap  # noqa: F401 (the step's overlap file)
from arithmech.methods.knockout_run import describe_means, prepare_means
from arithmech.methods.knockout_tables import knockout_summary, positions_table  # noqa: F401 (the step's tables)
from arithmech.methods.patching import FIELDS as PATCHED_FIELDS
from arithmech.methods.patching import METHODS, Patched, path_patch
from arithmech.methods.prepare import NoReferenceData, prepare, ready_made, task_label, task_templates  # noqa: F401 (the step's samples)
from arithmech.methods.transfer import heldout_heads, run_transfer  # noqa: F401 (the step's transfer)
from arithmech.steps.config import CONTROL_FLOOR  # noqa: F401
from arithmech.steps.config import Identify as Config
from arithmech.steps.control import task_control  # noqa: F401 (the control, version 2: issue #41)

OPERATIONS = ("addition", "subtraction", "multiplication", "division")


DEFAULTS = Config()        # the library function's defaults are the step's (arithmech.steps.config), written once


# --------------------------------------------------------------------------------- the pipeline
@dataclass
class IdentifyResult:
    """Everything one identify run produced; :func:`write_results` turns it into files."""

    tasks: dict[str, list[pairs_module.Sample]]
    patched: dict[str, Patched]
    effects: pd.DataFrame
    key_heads: dict
    knockout: pd.DataFrame
    means: MeanSource      # a knockout_means.PoolMeans (or a knockout.Means without a reference pool)
    info: dict
    params: dict
    transfer: pd.DataFrame | None = None
    heldout: dict | None = None
    timings: dict = field(default_factory=dict)
    evals: dict = field(default_factory=dict)      # task -> the knockout's prompts (X_r, topped up)
    memory: dict = field(default_factory=dict)     # peak RSS / CUDA bytes, see arithmech.core.memory
    estimate: dict | None = None                   # the estimate made before the run (arithmech.core.estimate)


def identify(model, tok, tasks: Sequence | str = DEFAULTS.task, config: Config | None = None, checkpoint=None,
             **settings) -> IdentifyResult:
    """Path-patch every head and MLP on each task, rank, knock out, transfer.

    Args:
        tasks: ``"all"`` (the four operations), one task, or a list of tasks (names, template-pair
            files, template lists); each gets ``config.n_samples`` draws. With several tasks the rows of task
            ``"all"`` average over every sample of the tasks that pass their control (Fig. 2;
            :data:`arithmech.steps.config.CONTROL_FLOOR`, :func:`task_control`) and key heads are taken from them.
        config: the step's :class:`~arithmech.steps.config.Identify` (every setting, each default written once
            there; its ``task`` is not read: ``tasks`` is); ``None`` for the defaults. What it sets, in brief:
            ``n_samples``; ``threshold`` and ``share_threshold`` (the key-head rules: the effect's, and the
            head's share of the counterfactual's logit-difference effect, :func:`key_heads_by_share`);
            ``n_boot`` and ``bootstrap`` (the intervals); ``method`` and ``prob`` (path patching); the
            knockout (:meth:`~arithmech.steps.config.Identify.knockout_settings`: ``knockout_samples``,
            ``n_random``, ``ks``, ``curves_for``, ``knockout_positions``, ``knockout_split``, ``pool_size``);
            the transfer test (``transfer``, ``heldout``: key heads recomputed without that template family
            and knocked out on fresh pairs of it); the draw of every pair here — X_r, X_c, the knockout's
            top-up, the reference pool, the held-out family — (:meth:`~arithmech.steps.config.Identify.to_draw`:
            ``answer_token``, ``shots``, ``example_sets``); pairs whose X_c leaves the model's answer in place
            are dropped (:func:`arithmech.methods.prepare.prepare`).
        checkpoint: a :class:`arithmech.core.checkpoints.Checkpoints` (:func:`run` passes one): each task's
            samples and patching result and each task's knockout curves are saved there when done, and
            loaded instead of recomputed when present (a re-run after an interruption continues; the
            files come out byte-identical). Progress goes to a terminal's stderr (:mod:`arithmech.core.progress`).
        settings: fields of the config to replace (``identify(model, tok, "addition", n_samples=64)``), checked
            as the config checks them.
    """
    c = (config or DEFAULTS).replace(**settings) if settings else (config or DEFAULTS)
    draw, ko_settings = c.to_draw(), c.knockout_settings()
    n_samples, seed, threshold, method, prob = c.n_samples, c.seed, c.threshold, c.method, c.prob
    knockout, transfer, heldout, batch_size = c.knockout, c.transfer, c.heldout, c.batch_size
    n_boot, share_threshold, knockout_split, bootstrap = c.n_boot, c.share_threshold, c.knockout_split, c.bootstrap
    if method not in METHODS:
        raise ValueError(f"method {method!r}: use 'fast' or 'reference'")
    if not threshold < 0:
        raise ValueError(f"threshold {threshold}: key heads lower the answer logit; give a negative relative "
                         "change such as -0.05")
    if not share_threshold < 0:
        raise ValueError(f"share_threshold {share_threshold}: a key head carries part of the counterfactual's effect; "
                         "give a negative share such as -0.05")
    t0 = time.time()
    mem = PeakMemory(model)
    specs = list(OPERATIONS) if tasks == "all" else ([tasks] if isinstance(tasks, str) else list(tasks))
    if not specs:
        raise ValueError("no task given: pass a task name, a template-pair file or a list of them")
    labelled: list[tuple[str, object]] = []
    for t in specs:
        label = task_label(t)
        while label in [l for l, _ in labelled]:
            label += "'"
        labelled.append((label, t))
    ck, resumed, carried = checkpoint, [], 0.0
    n_ko = (len(labelled) + (len(labelled) > 1)) if knockout else 0
    with Progress("identify", len(labelled) + n_ko + bool(transfer)) as bar:
        samples, info, patched, frames = {}, {}, {}, []
        timings = {"prepare": 0.0, "patching": 0.0}
        for i, (label, spec) in enumerate(labelled):
            got = ck.load(f"task-{i}") if ck is not None else None
            if got is not None and got["label"] == label:           # a finished task of an interrupted run
                samples[label] = [pairs_module.Sample.from_json(r) for r in got["samples"]]
                info[label], patched[label] = got["info"], Patched(**got["patched"])
                for phase, sec in got.get("seconds", {}).items():       # the interrupted run's work counts too
                    timings[phase] += sec
                    carried += sec
                resumed.append(label)
            else:
                t = time.time()
                samples[label], info[label] = prepare(model, tok, spec, n_samples, seed, batch_size, draw=draw)
                t1 = time.time()
                ss = samples[label]
                # every kept X_r, either side: a batch's numbers depend (~1e-5) on the prompts batched with it
                patched[label] = path_patch(model, tok, [s.clean for s in ss], [s.corrupt for s in ss],
                                            pairs_module.answer_ids(tok, ss), method=method, prob=prob, batch_size=batch_size)
                seconds = {"prepare": t1 - t, "patching": time.time() - t1}
                timings["prepare"] += seconds["prepare"]
                timings["patching"] += seconds["patching"]
                if ck is not None:
                    ck.save(f"task-{i}", {"label": label, "samples": [s.to_json() for s in ss], "info": info[label],
                                          "patched": {f: getattr(patched[label], f) for f in PATCHED_FIELDS},
                                          "seconds": seconds})
            # rank on one side only (ready-made samples have no templates to draw evaluation prompts from)
            if knockout_split == "held-out" and (knockout or transfer) and not ready_made(spec):
                rows = ranking_rows(samples[label])
                samples[label] = [samples[label][r] for r in rows]
                patched[label] = patched[label].select(rows)
                info[label] = {**info[label], "n_ranking": len(rows)}
                if not rows:
                    raise NoReferenceData(f"{label}: no X_r on the ranking side; raise --n-samples", info[label])
            frames.append(effects_frame(patched[label], label, prob, n_boot, seed, clusters=resampling_units(samples[label], bootstrap)))
            bar.advance(note=f"patched {label}")
        mem.mark("patching")
        if resumed:
            print(f"identify: resumed {len(resumed)} of {len(labelled)} tasks ({', '.join(resumed)}) from {ck.dir}",
                  file=sys.stderr, flush=True)
        t1 = time.time()
        primary, control = next(iter(samples)), task_control(samples)
        if len(samples) > 1:
            primary = "all"
            patched["all"] = concat_patched([patched[k] for k in control["pooled"]])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # already warned per task
                pooled = [s for k in control["pooled"] for s in samples[k]]
                frames.append(effects_frame(patched["all"], "all", prob, n_boot, seed, clusters=resampling_units(pooled, bootstrap)))
        effects = pd.concat(frames, ignore_index=True)
        timings["patching"] += time.time() - t1
        kh = key_heads(effects, primary, threshold)
        kh["per_task"] = {t: key_heads(effects, t, threshold)["heads"] for t in samples} if len(samples) > 1 else {}
        kh["control"] = control
        kh["by_share"] = {**key_heads_by_share(effects, primary, share_threshold), "per_task": {
            t: key_heads_by_share(effects, t, share_threshold)["heads"] for t in samples} if len(samples) > 1 else {}}
        every = [s for ss in samples.values() for s in ss]
        t2 = time.time()
        tpls = {label: None if ready_made(spec) else
                task_templates(spec)[1] for label, spec in labelled}
        if knockout or transfer:
            every_t = [t for label in samples for t in (tpls[label] or knockout_run.sample_templates(samples[label]))]
            means = prepare_means(model, tok, samples, every_t + (pairs_module.select_templates(heldout) if transfer else []),
                                  c.pool_size, seed, batch_size, draw=draw)
        else:
            means = mean_activations(model, tok, [s.corrupt for s in every], [group_key(s) for s in every], batch_size)
        timings["means"] = time.time() - t2
        ko, evals = pd.DataFrame(columns=knockout_run.COLUMNS), {}
        if knockout:
            ranked = knockout_run.Ranked(samples, tpls, effects, threshold, primary, pooled=control["pooled"])
            ko, evals = knockout_run.knockout_tasks(model, tok, ranked, means, ko_settings, draw, ck, bar)
        timings["knockout"] = time.time() - t2 - timings["means"]
        mem.mark("knockout")
        res = IdentifyResult(samples, patched, effects, kh, ko, means, info, timings=timings, evals=evals, params=dict(
            tasks=list(samples), n_samples=n_samples, seed=seed, threshold=threshold, method=method, prob=prob,
            knockout_samples=c.knockout_samples, n_random=c.n_random, ks=list(c.ks) if c.ks else None,
            curves_for=c.curves_for, knockout_positions=c.knockout_positions, pool_size=c.pool_size,
            means=describe_means(means), pool_digest=getattr(means, "digest", None),
            answer_token=draw.answer_token, shots=draw.shots, **draw.recorded(), heldout=heldout, batch_size=batch_size,
            n_boot=n_boot,
            key_rule=f"effect_hi < threshold (95% percentile bootstrap over {BOOTSTRAP_UNITS[bootstrap]}, seeded by seed)",
            bootstrap=bootstrap, knockout_split=knockout_split,
            share_threshold=share_threshold,
            share_rule="share_hi < share_threshold (the same resamples; share of the counterfactual's LD effect)"))
        if transfer:
            t3 = time.time()
            run_transfer(res, model, tok, heldout_heads(res, heldout), heldout, draw, batch_size)
            timings["transfer"] = time.time() - t3
            mem.mark("transfer")
            bar.advance(note="transfer")
    timings["total"] = time.time() - t0 + carried      # with the resumed tasks' seconds (knockout draws: not kept)
    res.memory = mem.summary()
    return res


# ---------------------------------------------------------------------------------------- files
def write_results(res: IdentifyResult, folder: str | Path, extra: dict | None = None, model_name: str | None = None) -> Path:
    """Write the run's files into ``folder`` as one set (:func:`arithmech.core.results.write_step`)."""
    files = {"effects.csv": res.effects, "key_heads.json": res.key_heads,
             "prompts.jsonl": [s for ss in res.tasks.values() for s in ss]}
    table = answer_token_table(res.info)
    if not table.empty:                                  # none for ready-made samples without template counts
        files["answer_tokens.csv"] = table
    if not res.knockout.empty:                           # none with knockout=False (no empty file)
        files["knockout.csv"] = res.knockout
    if res.transfer is not None:
        files["transfer.csv"] = res.transfer
    if res.heldout is not None:
        files["heldout.json"] = res.heldout
    record = {"parameters": {**res.params, **(extra or {})}, "samples": res.info, "versions": results.versions(),
              "wall_seconds": round(res.timings.get("total", 0.0), 2),
              "timings": {k: round(v, 2) for k, v in res.timings.items()},
              "peak_memory": res.memory or results.peak_memory(), "estimate": res.estimate,
              "control": res.key_heads.get("control")}
    return results.write_step(folder, "identify", files, record, model_name=model_name)


def folder_of(config: Config) -> Path:
    """Where a run of ``config`` writes: ``config.out``, else the model's folder under ``config.results``
    (:func:`arithmech.core.results.model_folder`)."""
    return Path(config.out) if config.out else results.model_folder(config.results, config.model_name)


def run(config: Config, model=None, tok=None) -> IdentifyResult:
    """Load the model (unless the caller passes it, ``model`` and ``tok``), run :func:`identify` with every
    setting of ``config`` (:class:`Config`), write the files to :func:`folder_of` ``config``.

    Finished tasks are checkpointed in ``<folder>/.checkpoints/identify-<hash of the config>/``; a re-run
    with the same config after an interruption continues from there and writes the same files; the
    checkpoints are removed once the files are written."""
    c = config
    folder = folder_of(c)
    results.check_writable(folder, "identify", c.overwrite)
    if c.task != "all":
        task_templates(c.task)                 # a wrong task name or a missing file fails before loading
    est = admission.check(c)                    # a run that cannot fit this machine's memory fails before loading
    torch.manual_seed(c.seed)
    random.seed(c.seed)
    ck = results.checkpoints(folder, "identify", {k: list(v) if isinstance(v, tuple) else v for k, v in c.reuse_key().items()})
    if model is None:
        model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
    with annotate(est.line() if est else ""):
        res = identify(model, tok, c.task, c, checkpoint=ck)
    res.estimate = est.record() if est else None
    write_results(res, folder, extra={"model": c.model_name, "task": c.task, "device": c.device, "dtype": c.dtype,
                                      "knockout": c.knockout, "transfer": c.transfer}, model_name=c.model_name)
    ck.clear()
    res.params["out"] = str(folder)
    return res


# -------------------------------------------------------------------- the appendix's results files
def recorded(config: Config) -> dict:
    """What ``run.json`` records of a run made with ``config``, under the names it records them by
    (``model`` for ``model_name``; lists for tuples): the parameters a reused result set must match."""
    want = {("model" if k == "model_name" else k): (list(v) if isinstance(v, tuple) else v)
            for k, v in config.reuse_key().items() if k != "example_sets"}
    return {**want, **shots_module.recorded(config.shots, config.example_sets)}    # run.json's name for the sets


# Fields added to the record after the shipped SmolLM2 run: a record without them was made with these values
# (share_threshold: such a run has no share columns, so its share claim is inconclusive, not recomputed).
ABSENT_MEANS = {"knockout": True, "transfer": True, "share_threshold": DEFAULTS.share_threshold,
                "shots": 0, "knockout_split": "in-sample", "bootstrap": "prompt", **shots_module.ABSENT}


def read(folder: str | Path) -> dict:
    """Identify's files in ``folder`` (checked), keyed by name without extension, and ``"run"``: its ``run.json``
    record (what :func:`arithmech.steps.ensure.ensure` returns for an :class:`Identify` config)."""
    return {**results.read_step(folder, "identify"), "run": results.read_run(folder)["steps"]["identify"]}


def summary(res: IdentifyResult) -> str:
    """The command line's summary of :func:`run`'s result: prompts kept, key heads, where the files went."""
    kh = res.key_heads
    names = ", ".join(f"{h['name']} ({h['effect']:+.1%})" for h in kh["heads"][:10]) or "none"
    return "\n".join([
        "samples kept (X_r): " + ", ".join(f"{t} {i['n_kept']}/{i['n_drawn']}" for t, i in res.info.items()),
        f"key heads of {kh['task']} (95% interval of the effect below {kh['threshold']:+.0%}): {names}",
        f"wrote identify's files and run.json to {res.params['out']}"])


def operand(config: Config, operand_task: str = "addition", recompute: bool = False, model=None, tok=None) -> dict:
    """The operand counterfactual beside identify's files of ``config`` (which must be there: make them with
    :func:`arithmech.steps.ensure.ensure` first): identify on ``operand_task`` with X_c changing an operand, in
    ``folder/operand/``, and ``counterfactual_overlap.json``; each reused only when made with the same operand task,
    pairs and seed, else made again.

    Returns ``{"effects": the operand run's effects, "overlap": the overlap file}``."""
    c = config
    folder = folder_of(c)
    same = (results.made_with(folder / "operand", "identify", {"n_samples": c.n_samples, "seed": c.seed,
                                                               "shots": c.shots, **shots_module.recorded(c.shots, c.example_sets),
                                                               "bootstrap": c.bootstrap},
                                                               absent_means=ABSENT_MEANS)
            and results.exists(folder, "counterfactual_overlap.json")
            and results.read_run(folder)["steps"].get("counterfactuals", {}).get("operand_task") == operand_task)
    if recompute or not same:
        if model is None:
            model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
        # as before issue #42: identify's defaults but these (the operand run measures DEFAULTS.answer_token)
        res = operand_identify(model, tok, operand_task, n_samples=c.n_samples, seed=c.seed, knockout=False,
                               prob=False, shots=c.shots, example_sets=c.example_sets, bootstrap=c.bootstrap)
        write_results(res, folder / "operand", extra={"counterfactual": "operand"}, model_name=c.model_name)
        results.write_step(folder, "counterfactuals", {"counterfactual_overlap.json": counterfactual_overlap(
            results.read(folder, "effects.csv"), res.effects, operand_task)}, {"operand_task": operand_task})
    return {"effects": results.read(folder / "operand", "effects.csv"),
            "overlap": results.read(folder, "counterfactual_overlap.json")}


# ---------------------------------------------------------------- the operand counterfactual
def operand_identify(model, tok, task: str = "addition", config: Config | None = None, **settings):
    """:func:`arithmech.steps.identify.identify` on ``task`` with the *operand* counterfactual: X_c is X_r with
    other operands (:func:`arithmech.data.pairs.make_operand_pairs`). Rows are labelled ``"<task> (operand)"``.

    ``config`` and ``settings`` as for :func:`identify` (e.g. ``knockout=False``); no transfer test (it is the
    operator run's). The pairs are drawn with the config's :meth:`~arithmech.steps.config.Identify.to_draw`
    (``n_samples`` of them, seeded by ``seed``); pairs whose X_c leaves the model's answer in place are dropped
    there, as for the operator counterfactual.
    """
    c = (config or DEFAULTS).replace(**settings, transfer=False)
    pairs, _ = pairs_module.make_operand_pairs(tok, task, n=c.n_samples, seed=c.seed, draw=c.to_draw())
    res = identify(model, tok, [pairs], c)
    label = f"{task} (operand)"
    res.effects["task"] = label
    res.key_heads["task"] = label
    res.knockout["task"] = label
    c = res.key_heads["control"]
    c.update(floors={label: c["floors"].pop("custom")}, pooled=[label],
             failed={label: why for why in c["failed"].values()},
             insufficient=[label] if c.get("insufficient") else [])
    res.info = {label: res.info.pop("custom")}
    res.tasks = {label: res.tasks.pop("custom")}
    res.params.update(tasks=[label], counterfactual="operand")
    return res
