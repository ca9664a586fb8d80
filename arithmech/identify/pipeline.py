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


def identify(  # noqa: C901, PLR0915 (the pipeline, stage by stage)
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
    n_samples, seed, threshold, method, prob = c.n_samples, c.seed, c.threshold, c.method, c.prob
    knockout, transfer, heldout, batch_size = c.knockout, c.transfer, c.heldout, c.batch_size
    n_boot, share_threshold, knockout_split, bootstrap = c.n_boot, c.share_threshold, c.knockout_split, c.bootstrap
    if method not in METHODS:
        raise ValueError(f"method {method!r}: use 'fast' or 'reference'")
    if not threshold < 0:
        raise ValueError(
            f"threshold {threshold}: key heads lower the answer logit; give a negative relative change such as -0.05"
        )
    if not share_threshold < 0:
        raise ValueError(
            f"share_threshold {share_threshold}: a key head carries part of the counterfactual's effect; "
            "give a negative share such as -0.05"
        )
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
            if got is not None and got["label"] == label:  # a finished task of an interrupted run
                samples[label] = [pairs_module.Sample.from_json(r) for r in got["samples"]]
                info[label], patched[label] = got["info"], Patched(**got["patched"])
                for phase, sec in got.get("seconds", {}).items():  # the interrupted run's work counts too
                    timings[phase] += sec
                    carried += sec
                resumed.append(label)
            else:
                t = time.time()
                samples[label], info[label] = prepare(model, tok, spec, n_samples, seed, batch_size, draw=draw)
                t1 = time.time()
                ss = samples[label]
                # every kept X_r, either side: a batch's numbers depend (~1e-5) on the prompts batched with it
                patched[label] = path_patch(
                    model,
                    tok,
                    [s.clean for s in ss],
                    [s.corrupt for s in ss],
                    answer_ids(tok, ss),
                    method=method,
                    prob=prob,
                    batch_size=batch_size,
                )
                seconds = {"prepare": t1 - t, "patching": time.time() - t1}
                timings["prepare"] += seconds["prepare"]
                timings["patching"] += seconds["patching"]
                if ck is not None:
                    ck.save(
                        f"task-{i}",
                        {
                            "label": label,
                            "samples": [s.to_json() for s in ss],
                            "info": info[label],
                            "patched": {f: getattr(patched[label], f) for f in PATCHED_FIELDS},
                            "seconds": seconds,
                        },
                    )
            # rank on one side only (ready-made samples have no templates to draw evaluation prompts from)
            if knockout_split == "held-out" and (knockout or transfer) and not ready_made(spec):
                rows = ranking_rows(samples[label])
                samples[label] = [samples[label][r] for r in rows]
                patched[label] = patched[label].select(rows)
                info[label] = {**info[label], "n_ranking": len(rows)}
                if not rows:
                    raise NoReferenceData(f"{label}: no X_r on the ranking side; raise --n-samples", info[label])
            frames.append(
                effects_frame(
                    patched[label], label, prob, n_boot, seed, clusters=resampling_units(samples[label], bootstrap)
                )
            )
            bar.advance(note=f"patched {label}")
        mem.mark("patching")
        if resumed:
            print(
                f"identify: resumed {len(resumed)} of {len(labelled)} tasks ({', '.join(resumed)}) from {ck.dir}",
                file=sys.stderr,
                flush=True,
            )
        t1 = time.time()
        primary, control = next(iter(samples)), task_control(samples)
        if len(samples) > 1:
            primary = "all"
            patched["all"] = concat_patched([patched[k] for k in control["pooled"]])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # already warned per task
                pooled = [s for k in control["pooled"] for s in samples[k]]
                frames.append(
                    effects_frame(
                        patched["all"], "all", prob, n_boot, seed, clusters=resampling_units(pooled, bootstrap)
                    )
                )
        effects = pd.concat(frames, ignore_index=True)
        timings["patching"] += time.time() - t1
        kh = key_heads(effects, primary, threshold)
        kh["per_task"] = {t: key_heads(effects, t, threshold)["heads"] for t in samples} if len(samples) > 1 else {}
        kh["control"] = control
        kh["by_share"] = {
            **key_heads_by_share(effects, primary, share_threshold),
            "per_task": {t: key_heads_by_share(effects, t, share_threshold)["heads"] for t in samples}
            if len(samples) > 1
            else {},
        }
        every = [s for ss in samples.values() for s in ss]
        t2 = time.time()
        tpls = {label: None if ready_made(spec) else task_templates(spec)[1] for label, spec in labelled}
        if knockout or transfer:
            every_t = [t for label in samples for t in (tpls[label] or knockout_run.sample_templates(samples[label]))]
            means = prepare_means(
                model,
                tok,
                samples,
                every_t + (pairs_module.select_templates(heldout) if transfer else []),
                c.pool_size,
                seed,
                batch_size,
                draw=draw,
            )
        else:
            means = mean_activations(model, tok, [s.corrupt for s in every], [group_key(s) for s in every], batch_size)
        timings["means"] = time.time() - t2
        ko, evals = pd.DataFrame(columns=knockout_run.COLUMNS), {}
        if knockout:
            ranked = knockout_run.Ranked(samples, tpls, effects, threshold, primary, pooled=control["pooled"])
            ko, evals = knockout_run.knockout_tasks(model, tok, ranked, means, ko_settings, draw, ck, bar)
        timings["knockout"] = time.time() - t2 - timings["means"]
        mem.mark("knockout")
        res = IdentifyResult(
            samples,
            patched,
            effects,
            kh,
            ko,
            means,
            info,
            timings=timings,
            evals=evals,
            params=dict(
                tasks=list(samples),
                n_samples=n_samples,
                seed=seed,
                threshold=threshold,
                method=method,
                prob=prob,
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
                heldout=heldout,
                batch_size=batch_size,
                n_boot=n_boot,
                key_rule=(
                    f"effect_hi < threshold (95% percentile bootstrap over {BOOTSTRAP_UNITS[bootstrap]}, "
                    "seeded by seed)"
                ),
                bootstrap=bootstrap,
                knockout_split=knockout_split,
                share_threshold=share_threshold,
                share_rule="share_hi < share_threshold (the same resamples; share of the counterfactual's LD effect)",
            ),
        )
        if transfer:
            t3 = time.time()
            run_transfer(res, model, tok, heldout_heads(res, heldout), heldout, draw, batch_size)
            timings["transfer"] = time.time() - t3
            mem.mark("transfer")
            bar.advance(note="transfer")
    timings["total"] = time.time() - t0 + carried  # with the resumed tasks' seconds (knockout draws: not kept)
    res.memory = mem.summary()
    return res
