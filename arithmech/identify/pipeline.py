"""Identify's pipeline as a library function (paper §4.1, §5.1): :func:`identify` draws the pairs, path-patches
every head and MLP, ranks them with bootstrap intervals, names the key heads, knocks them out and tests transfer,
and returns it all as one :class:`IdentifyResult` — in memory, no file written.

The step around it (run it for a config, checkpoint finished tasks, write and read the files, the operand
counterfactual) is :mod:`arithmech.identify.run`; its docstring draws the whole
pipeline.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from arithmech.core.memory import PeakMemory
from arithmech.core.progress import Progress
from arithmech.data import pairs as pairs_module
from arithmech.data.batches import answer_ids
from arithmech.data.splits import BOOTSTRAP_UNITS, ranking_rows, resampling_units
from arithmech.identify.config import Identify as Config
from arithmech.methods.ablation import run as knockout_run
from arithmech.methods.ablation.intervention import MeanSource
from arithmech.methods.ablation.knockout import group_key, mean_activations
from arithmech.methods.ablation.run import describe_means, prepare_means
from arithmech.methods.ablation.transfer import heldout_heads, run_transfer
from arithmech.methods.effects import (
    concat_patched,
    effects_frame,
    key_heads,
    key_heads_by_share,  # (public names here too)
)
from arithmech.methods.patched import FIELDS as PATCHED_FIELDS
from arithmech.methods.patching import METHODS, Patched, path_patch
from arithmech.methods.prepare import NoReferenceData, prepare, ready_made, task_label, task_templates
from arithmech.steps.control import task_control

OPERATIONS = ("addition", "subtraction", "multiplication", "division")


DEFAULTS = Config()  # the library function's defaults are the step's (arithmech.identify.config), written once


@dataclass
class IdentifyResult:
    """Everything one identify run produced; :func:`write_results` turns it into files."""

    tasks: dict[str, list[pairs_module.Sample]]
    patched: dict[str, Patched]
    effects: pd.DataFrame
    key_heads: dict
    knockout: pd.DataFrame
    means: MeanSource  # a pool.PoolMeans (or a knockout.Means without a reference pool; methods/ablation/)
    info: dict
    params: dict
    transfer: pd.DataFrame | None = None
    heldout: dict | None = None
    timings: dict = field(default_factory=dict)
    evals: dict = field(default_factory=dict)  # task -> the knockout's prompts (X_r, topped up)
    memory: dict = field(default_factory=dict)  # peak RSS / CUDA bytes, see arithmech.core.memory
    estimate: dict | None = None  # the estimate made before the run (arithmech.core.estimate)


def _check(c: Config) -> None:
    """Refuse the settings the pipeline cannot honour: an unknown patching method, a key-head rule that is not
    negative (key heads *lower* the answer logit; their share of the counterfactual's effect is negative)."""
    if c.method not in METHODS:
        raise ValueError(f"method {c.method!r}: use 'fast' or 'reference'")
    if not c.threshold < 0:
        raise ValueError(
            f"threshold {c.threshold}: key heads lower the answer logit; give a negative relative change such as -0.05"
        )
    if not c.share_threshold < 0:
        raise ValueError(
            f"share_threshold {c.share_threshold}: a key head carries part of the counterfactual's effect; "
            "give a negative share such as -0.05"
        )


def _labelled(tasks: Sequence | str) -> list[tuple[str, object]]:
    """The tasks as ``(label, spec)`` pairs: ``"all"`` is the four operations; a label met twice gets a prime
    (``addition``, ``addition'``) so that two specs of one task keep their own rows."""
    specs = list(OPERATIONS) if tasks == "all" else ([tasks] if isinstance(tasks, str) else list(tasks))
    if not specs:
        raise ValueError("no task given: pass a task name, a template-pair file or a list of them")
    labelled: list[tuple[str, object]] = []
    for t in specs:
        label = task_label(t)
        while label in [l for l, _ in labelled]:
            label += "'"
        labelled.append((label, t))
    return labelled


def _patch_task(model, tok, c: Config, draw, i: int, label: str, spec, ck) -> tuple[list, dict, Patched, dict, bool]:
    """One task's pairs and patching result: loaded from the checkpoint when a finished task of an interrupted run
    is there (``resumed``), else drawn (:func:`prepare`) and path-patched, then saved to the checkpoint.

    Returns ``(samples, info, patched, seconds, resumed)``; ``seconds`` by phase (``prepare``, ``patching``), the
    interrupted run's own when resumed (its work counts too).
    """
    got = ck.load(f"task-{i}") if ck is not None else None
    if got is not None and got["label"] == label:  # a finished task of an interrupted run
        samples = [pairs_module.Sample.from_json(r) for r in got["samples"]]
        return samples, got["info"], Patched(**got["patched"]), got.get("seconds", {}), True
    t = time.time()
    ss, info = prepare(model, tok, spec, c.n_samples, c.seed, c.batch_size, draw=draw)
    t1 = time.time()
    # every kept X_r, either side: a batch's numbers depend (~1e-5) on the prompts batched with it
    patched = path_patch(
        model,
        tok,
        [s.clean for s in ss],
        [s.corrupt for s in ss],
        answer_ids(tok, ss),
        method=c.method,
        prob=c.prob,
        batch_size=c.batch_size,
    )
    seconds = {"prepare": t1 - t, "patching": time.time() - t1}
    if ck is not None:
        ck.save(
            f"task-{i}",
            {
                "label": label,
                "samples": [s.to_json() for s in ss],
                "info": info,
                "patched": {f: getattr(patched, f) for f in PATCHED_FIELDS},
                "seconds": seconds,
            },
        )
    return ss, info, patched, seconds, False


def _patch_tasks(model, tok, c: Config, draw, labelled: list, ck, bar) -> tuple:
    """Every task patched in turn (:func:`_patch_task`), cut to its ranking side when the knockout is held out, and
    its effects ranked with bootstrap intervals.

    Returns ``(samples, info, patched, frames, timings, carried, resumed)``: by task label the pairs, their
    draw's info and patching result; the effects frames; the seconds by phase and the part of them an interrupted
    run did (``carried``; the tasks it had finished are named on stderr).
    """
    samples, info, patched, frames = {}, {}, {}, []
    timings, carried, resumed = {"prepare": 0.0, "patching": 0.0}, 0.0, []
    for i, (label, spec) in enumerate(labelled):
        samples[label], info[label], patched[label], seconds, was_resumed = _patch_task(
            model, tok, c, draw, i, label, spec, ck
        )
        for phase, sec in seconds.items():
            timings[phase] += sec
            if was_resumed:  # the interrupted run's work counts too
                carried += sec
        if was_resumed:
            resumed.append(label)
        # rank on one side only (ready-made samples have no templates to draw evaluation prompts from)
        if c.knockout_split == "held-out" and (c.knockout or c.transfer) and not ready_made(spec):
            samples[label], patched[label], info[label] = _ranking_side(
                label, samples[label], patched[label], info[label]
            )
        clusters = resampling_units(samples[label], c.bootstrap)
        frames.append(effects_frame(patched[label], label, c.prob, c.n_boot, c.seed, clusters=clusters))
        bar.advance(note=f"patched {label}")
    if resumed:
        print(
            f"identify: resumed {len(resumed)} of {len(labelled)} tasks ({', '.join(resumed)}) from {ck.dir}",
            file=sys.stderr,
            flush=True,
        )
    return samples, info, patched, frames, timings, carried


def _ranking_side(label: str, samples: list, patched: Patched, info: dict) -> tuple[list, Patched, dict]:
    """Keep the ranking side of a task's X_r (the knockout evaluates on the other, held-out side)."""
    rows = ranking_rows(samples)
    samples = [samples[r] for r in rows]
    patched = patched.select(rows)
    info = {**info, "n_ranking": len(rows)}
    if not rows:
        raise NoReferenceData(f"{label}: no X_r on the ranking side; raise --n-samples", info)
    return samples, patched, info


def _pooled_effects(samples: dict, patched: dict, control: dict, c: Config) -> pd.DataFrame:
    """The rows of task ``"all"``: every sample of the tasks that pass their control, pooled (Fig. 2); their
    patching result is added to ``patched`` under ``"all"``."""
    patched["all"] = concat_patched([patched[k] for k in control["pooled"]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # already warned per task
        pooled = [s for k in control["pooled"] for s in samples[k]]
        return effects_frame(
            patched["all"], "all", c.prob, c.n_boot, c.seed, clusters=resampling_units(pooled, c.bootstrap)
        )


def _key_heads(effects: pd.DataFrame, primary: str, samples: dict, control: dict, c: Config) -> dict:
    """The key heads by both rules (the effect's interval, the share of the counterfactual's effect), on the
    primary task and, with several tasks, per task; the tasks' control is kept with them."""
    several = len(samples) > 1
    kh = key_heads(effects, primary, c.threshold)
    kh["per_task"] = {t: key_heads(effects, t, c.threshold)["heads"] for t in samples} if several else {}
    kh["control"] = control
    kh["by_share"] = {
        **key_heads_by_share(effects, primary, c.share_threshold),
        "per_task": {t: key_heads_by_share(effects, t, c.share_threshold)["heads"] for t in samples} if several else {},
    }
    return kh


def _knock_out(model, tok, c: Config, ranked: knockout_run.Ranked, ko_settings, draw, ck, bar) -> tuple:
    """The means (:func:`_means`), then, when the config asks for it, each task's knockout curves
    (:func:`knockout_run.knockout_tasks`).

    Returns ``(means, knockout, evals, seconds)``: the knockout's rows (none without a knockout), its prompts by
    task and the seconds of the two phases (``means``, ``knockout``).
    """
    t2 = time.time()
    means = _means(model, tok, ranked.samples, ranked.templates, c, draw)
    seconds = {"means": time.time() - t2}
    ko, evals = pd.DataFrame(columns=knockout_run.COLUMNS), {}
    if c.knockout:
        ko, evals = knockout_run.knockout_tasks(model, tok, ranked, means, ko_settings, draw, ck, bar)
    seconds["knockout"] = time.time() - t2 - seconds["means"]
    return means, ko, evals, seconds


def _transfer(res: IdentifyResult, model, tok, c: Config, draw, mem: PeakMemory, bar) -> None:
    """The transfer test, in place on ``res``: key heads recomputed without the held-out template family, knocked
    out on fresh pairs of it (:func:`run_transfer`); its seconds go to ``res.timings["transfer"]``."""
    t3 = time.time()
    run_transfer(res, model, tok, heldout_heads(res, c.heldout), c.heldout, draw, c.batch_size)
    res.timings["transfer"] = time.time() - t3
    mem.mark("transfer")
    bar.advance(note="transfer")


def _means(model, tok, samples: dict, tpls: dict, c: Config, draw) -> MeanSource:
    """The means a knockout puts in a head's place: from the reference pool when knocking out or testing transfer
    (over every template, the held-out family's too), else the plain mean over every X_c."""
    if c.knockout or c.transfer:
        every_t = [t for label in samples for t in (tpls[label] or knockout_run.sample_templates(samples[label]))]
        return prepare_means(
            model,
            tok,
            samples,
            every_t + (pairs_module.select_templates(c.heldout) if c.transfer else []),
            c.pool_size,
            c.seed,
            c.batch_size,
            draw=draw,
        )
    every = [s for ss in samples.values() for s in ss]
    return mean_activations(model, tok, [s.corrupt for s in every], [group_key(s) for s in every], c.batch_size)


def _params(c: Config, draw, samples: dict, means: MeanSource) -> dict:
    """The run's parameters as recorded (``run.json``): every setting, the means' description and the rules."""
    return dict(
        tasks=list(samples),
        n_samples=c.n_samples,
        seed=c.seed,
        threshold=c.threshold,
        method=c.method,
        prob=c.prob,
        knockout_samples=c.knockout_samples,
        n_random=c.n_random,
        ks=list(c.ks) if c.ks else None,
        curves_for=c.curves_for,
        knockout_positions=c.knockout_positions,
        pool_size=c.pool_size,
        means=describe_means(means),
        pool_digest=getattr(means, "digest", None),
        answer_token=draw.answer_token,
        shots=draw.shots,
        **draw.recorded(),
        heldout=c.heldout,
        batch_size=c.batch_size,
        n_boot=c.n_boot,
        key_rule=(
            f"effect_hi < threshold (95% percentile bootstrap over {BOOTSTRAP_UNITS[c.bootstrap]}, seeded by seed)"
        ),
        bootstrap=c.bootstrap,
        knockout_split=c.knockout_split,
        share_threshold=c.share_threshold,
        share_rule="share_hi < share_threshold (the same resamples; share of the counterfactual's LD effect)",
    )


def identify(
    model, tok, tasks: Sequence | str = DEFAULTS.task, config: Config | None = None, checkpoint=None, **settings
) -> IdentifyResult:
    """Path-patch every head and MLP on each task, rank, knock out, transfer.

    Args:
        tasks: ``"all"`` (the four operations), one task, or a list of tasks (names, template-pair
            files, template lists); each gets ``config.n_samples`` draws. With several tasks the rows of task
            ``"all"`` average over every sample of the tasks that pass their control (Fig. 2;
            :data:`arithmech.identify.config.CONTROL_FLOOR`, :func:`task_control`) and key heads are taken from them.
        config: the step's :class:`~arithmech.identify.config.Identify` (every setting, each default written once
            there; its ``task`` is not read: ``tasks`` is); ``None`` for the defaults. What it sets, in brief:
            ``n_samples``; ``threshold`` and ``share_threshold`` (the key-head rules: the effect's, and the
            head's share of the counterfactual's logit-difference effect, :func:`key_heads_by_share`);
            ``n_boot`` and ``bootstrap`` (the intervals); ``method`` and ``prob`` (path patching); the
            knockout (:meth:`~arithmech.identify.config.Identify.knockout_settings`: ``knockout_samples``,
            ``n_random``, ``ks``, ``curves_for``, ``knockout_positions``, ``knockout_split``, ``pool_size``);
            the transfer test (``transfer``, ``heldout``: key heads recomputed without that template family
            and knocked out on fresh pairs of it); the draw of every pair here — X_r, X_c, the knockout's
            top-up, the reference pool, the held-out family — (:meth:`~arithmech.identify.config.Identify.to_draw`:
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
    _check(c)
    t0 = time.time()
    mem = PeakMemory(model)
    labelled = _labelled(tasks)
    n_ko = (len(labelled) + (len(labelled) > 1)) if c.knockout else 0
    with Progress("identify", len(labelled) + n_ko + bool(c.transfer)) as bar:
        samples, info, patched, frames, timings, carried = _patch_tasks(model, tok, c, draw, labelled, checkpoint, bar)
        mem.mark("patching")
        t1 = time.time()
        primary, control = next(iter(samples)), task_control(samples)
        if len(samples) > 1:
            primary = "all"
            frames.append(_pooled_effects(samples, patched, control, c))
        effects = pd.concat(frames, ignore_index=True)
        timings["patching"] += time.time() - t1
        kh = _key_heads(effects, primary, samples, control, c)
        tpls = {label: None if ready_made(spec) else task_templates(spec)[1] for label, spec in labelled}
        ranked = knockout_run.Ranked(samples, tpls, effects, c.threshold, primary, pooled=control["pooled"])
        means, ko, evals, seconds = _knock_out(model, tok, c, ranked, ko_settings, draw, checkpoint, bar)
        timings.update(seconds)
        mem.mark("knockout")
        params = _params(c, draw, samples, means)
        res = IdentifyResult(samples, patched, effects, kh, ko, means, info, params, timings=timings, evals=evals)
        if c.transfer:
            _transfer(res, model, tok, c, draw, mem, bar)
    timings["total"] = time.time() - t0 + carried  # with the resumed tasks' seconds (knockout draws: not kept)
    res.memory = mem.summary()
    return res
