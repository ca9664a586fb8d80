"""Identify (paper §4.1, §5.1, App. B, D, E): which heads and MLPs compute the answer, and do they matter?

The step end to end, for one or several tasks::

    X_r / X_c pairs ──► keep what the model answers right ──► path patching (patching.py)
        ──► effects per task and for all tasks, with bootstrap intervals (Fig. 2, Fig. 15; effects.py)
        ──► key heads (the effect's whole 95% interval below the threshold; beside it, the share rule:
            the whole interval of the head's share of the counterfactual's effect below share_threshold)
        ──► knockout: reference-pool means, key vs random non-key components, sanity rows
            (methods/ablation/: run.py, pool.py, knockout.py; Fig. 3)
        ──► transfer: Fig. 4's prompts and a template family not used to find the heads

>>> res = identify(model, tok, ["addition", "subtraction"], n_samples=64)
>>> res.effects.head(); res.key_heads["heads"][:3]
>>> write_results(res, "results/embedded")

``python -m arithmech identify --model embedded --task all --out results/embedded`` does the same
from the shell and writes ``effects.csv``, ``key_heads.json``, ``prompts.jsonl``, ``answer_tokens.csv``,
``knockout.csv``, ``transfer.csv``, ``heldout.json`` and ``run.json`` (atomically; same seed, same files).
The library function :func:`identify` and its :class:`IdentifyResult` live in :mod:`arithmech.identify.pipeline`;
this module runs it as a step and reads and writes its files: :func:`run` returns the files read back
(:class:`Result`), :func:`compute` the in-memory :class:`IdentifyResult` (per-task samples, timings).
The answer token is ``answer_token="last-digit"`` by default (the prompt carries the answer's leading
digits; :mod:`arithmech.data.pairs`), ``"first"`` is the paper's.
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import torch

from arithmech.core import admission, provenance, results
from arithmech.core.models import load_model
from arithmech.core.progress import announce
from arithmech.data import pairs as pairs_module
from arithmech.data import shots as shots_module
from arithmech.data.answer_tokens import answer_token_table
from arithmech.data.splits import resampling_units
from arithmech.identify.config import Identify as Config
from arithmech.identify.pipeline import DEFAULTS, IdentifyResult, identify
from arithmech.identify.result import Result, read  # Result, read: the step protocol
from arithmech.methods.ablation.overlap import counterfactual_overlap
from arithmech.methods.effects import cluster_effects
from arithmech.methods.prepare import task_templates


# ---------------------------------------------------------------------------------------- files
def _cluster_effects(res: IdentifyResult) -> pd.DataFrame:
    """``effects_clusters.csv``: each task's heads' mean effect per problem cluster (:func:`cluster_effects`), task
    ``all`` over the pooled tasks' prompts in the order they were pooled; tasks whose prompts have no integer operands
    (ready-made samples: no problem clusters) are left out."""
    pooled = (res.key_heads.get("control") or {}).get("pooled") or []
    frames = []
    for task, p in res.patched.items():
        samples = [s for t in pooled for s in res.tasks[t]] if task == "all" else res.tasks.get(task)
        units = resampling_units(samples, "cluster") if samples else None
        if units is not None and len(units) == p.logit_p.shape[0]:
            frames.append(cluster_effects(p, task, units))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def write_results(
    res: IdentifyResult, folder: str | Path, extra: dict | None = None, model_name: str | None = None
) -> Path:
    """Write the run's files into ``folder`` as one set (:func:`arithmech.core.results.write_step`)."""
    files = {
        "effects.csv": res.effects,
        "key_heads.json": res.key_heads,
        "prompts.jsonl": [s for ss in res.tasks.values() for s in ss],
    }
    table = answer_token_table(res.info)
    if not table.empty:  # none for ready-made samples without template counts
        files["answer_tokens.csv"] = table
    clusters = _cluster_effects(res)
    if not clusters.empty:
        files["effects_clusters.csv"] = clusters
    if not res.knockout.empty:  # none with knockout=False (no empty file)
        files["knockout.csv"] = res.knockout
    if res.transfer is not None:
        files["transfer.csv"] = res.transfer
    if res.heldout is not None:
        files["heldout.json"] = res.heldout
    record = {
        "parameters": {**res.params, **(extra or {})},
        "samples": res.info,
        "versions": provenance.versions(),
        "wall_seconds": round(res.timings.get("total", 0.0), 2),
        "timings": {k: round(v, 2) for k, v in res.timings.items()},
        "peak_memory": res.memory or provenance.peak_memory(),
        "estimate": res.estimate,
        "control": res.key_heads.get("control"),
    }
    return results.write_step(folder, "identify", files, record, model_name=model_name)


def folder_of(config: Config) -> Path:
    """Where a run of ``config`` writes: ``config.out``, else the model's folder under ``config.results``
    (:func:`arithmech.core.results.model_folder`)."""
    return Path(config.out) if config.out else results.model_folder(config.results, config.model_name)


def run(config: Config, model=None, tok=None) -> Result:
    """The step (``python -m arithmech identify``): :func:`compute`, then the files it wrote read back
    (:func:`read`), as every step's ``run`` returns its ``Result``."""
    compute(config, model, tok)
    return read(folder_of(config), config)


def compute(config: Config, model=None, tok=None) -> IdentifyResult:
    """Load the model (unless the caller passes it, ``model`` and ``tok``), run :func:`identify` with every
    setting of ``config`` (:class:`Config`), write the files to :func:`folder_of` ``config``; return the library's
    in-memory :class:`IdentifyResult` (beyond the files: each task's kept samples as ``Sample`` objects and the
    timings unrounded, which the Identify chapter draws from; :func:`run` returns the files read back instead).

    Finished tasks are checkpointed in ``<folder>/.checkpoints/identify-<hash of the config>/``; a re-run
    with the same config after an interruption continues from there and writes the same files; the
    checkpoints are removed once the files are written."""
    c = config
    folder = folder_of(c)
    results.check_writable(folder, "identify", c.overwrite)
    if c.task != "all":
        task_templates(c.task)  # a wrong task name or a missing file fails before loading
    est = admission.check(c)  # a run that cannot fit this machine's memory fails before loading
    torch.manual_seed(c.seed)
    random.seed(c.seed)
    ck = results.checkpoints(
        folder, "identify", {k: list(v) if isinstance(v, tuple) else v for k, v in c.reuse_key().items()}
    )
    if model is None:
        model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
    announce("identify", est.line() if est else "")
    res = identify(model, tok, c.task, c, checkpoint=ck)
    res.estimate = est.record() if est else None
    write_results(
        res,
        folder,
        extra={
            "model": c.model_name,
            "task": c.task,
            "device": c.device,
            "dtype": c.dtype,
            "knockout": c.knockout,
            "transfer": c.transfer,
        },
        model_name=c.model_name,
    )
    ck.clear()
    return res


# -------------------------------------------------------------------- the appendix's results files
def recorded(config: Config) -> dict:
    """What ``run.json`` records of a run made with ``config``, under the names it records them by
    (``model`` for ``model_name``; lists for tuples): the parameters a reused result set must match."""
    want = {k: (list(v) if isinstance(v, tuple) else v) for k, v in config.recorded().items() if k != "example_sets"}
    return {**want, **shots_module.recorded(config.shots, config.example_sets)}  # run.json's name for the sets


def summary(result: Result) -> str:
    """The command line's summary of :func:`run`'s result: prompts kept (``run.json``'s samples record), key heads,
    where the files went."""
    kh, kept = result.key_heads, result.run["samples"]
    names = ", ".join(f"{h['name']} ({h['effect']:+.1%})" for h in kh["heads"][:10]) or "none"
    return "\n".join(
        [
            "samples kept (X_r): " + ", ".join(f"{t} {i['n_kept']}/{i['n_drawn']}" for t, i in kept.items()),
            f"key heads of {kh['task']} (95% interval of the effect below {kh['threshold']:+.0%}): {names}",
            f"wrote identify's files and run.json to {folder_of(result.config)}",
        ]
    )


def operand(config: Config, operand_task: str = "addition", recompute: bool = False, model=None, tok=None) -> dict:
    """The operand counterfactual beside identify's files of ``config`` (which must be there: make them with
    :func:`arithmech.pipeline.ensure.ensure` first): identify on ``operand_task`` with X_c changing an operand, in
    ``folder/operand/``, and ``counterfactual_overlap.json``; each reused only when made with the same operand task,
    pairs and seed, else made again.

    Returns ``{"effects": the operand run's effects, "overlap": the overlap file}``."""
    c = config
    folder = folder_of(c)
    same = (
        results.made_with(
            folder / "operand",
            "identify",
            {
                "n_samples": c.n_samples,
                "seed": c.seed,
                "shots": c.shots,
                **shots_module.recorded(c.shots, c.example_sets),
                "bootstrap": c.bootstrap,
            },
        )
        and results.exists(folder, "counterfactual_overlap.json")
        and results.read_run(folder)["steps"].get("counterfactuals", {}).get("operand_task") == operand_task
    )
    if recompute or not same:
        if model is None:
            model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
        # identify's defaults but these (the operand run measures DEFAULTS.answer_token)
        res = operand_identify(
            model,
            tok,
            operand_task,
            n_samples=c.n_samples,
            seed=c.seed,
            knockout=False,
            prob=False,
            shots=c.shots,
            example_sets=c.example_sets,
            bootstrap=c.bootstrap,
        )
        write_results(res, folder / "operand", extra={"counterfactual": "operand"}, model_name=c.model_name)
        results.write_step(
            folder,
            "counterfactuals",
            {
                "counterfactual_overlap.json": counterfactual_overlap(
                    results.read(folder, "effects.csv"), res.effects, operand_task
                )
            },
            {"operand_task": operand_task},
        )
    return {
        "effects": results.read(folder / "operand", "effects.csv"),
        "overlap": results.read(folder, "counterfactual_overlap.json"),
    }


# ---------------------------------------------------------------- the operand counterfactual
def operand_identify(model, tok, task: str = "addition", config: Config | None = None, **settings):
    """:func:`arithmech.identify.run.identify` on ``task`` with the *operand* counterfactual: X_c is X_r with
    other operands (:func:`arithmech.data.pairs.make_operand_pairs`). Rows are labelled ``"<task> (operand)"``.

    ``config`` and ``settings`` as for :func:`identify` (e.g. ``knockout=False``); no transfer test (it is the
    operator run's). The pairs are drawn with the config's :meth:`~arithmech.identify.config.Identify.to_draw`
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
    c.update(
        floors={label: c["floors"].pop("custom")},
        pooled=[label],
        failed={label: why for why in c["failed"].values()},  # noqa: B035 (one task: its reason, relabelled)
        undecided={label: why for why in c.get("undecided", {}).values()},  # noqa: B035 (as failed)
        status={label: s for s in c.get("status", {}).values()},  # noqa: B035 (as failed)
        insufficient=[label] if c.get("insufficient") else [],
    )
    res.info = {label: res.info.pop("custom")}
    res.tasks = {label: res.tasks.pop("custom")}
    res.patched = {label: res.patched.pop("custom")}
    res.params.update(tasks=[label], counterfactual="operand")
    return res
