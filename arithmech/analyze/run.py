"""Analyze (§4.2, §5.2, App. C, F, H): what the key heads attend to, what the MLPs write.

The measurements live in two modules: :mod:`arithmech.methods.attention` (attention of every head
by token role: A, B, operator, BOS, other, with and without the first position, mass and density;
the head labels operand / operator / other; each key head against the non-key heads) and
:mod:`arithmech.methods.mlp` (cosines of the MLP inputs and writes with ``W_U`` rows per layer, the
start-inflection-end layers of App. C, the number tokens each layer writes). One prompt at a time
(attention strips of Fig. 7 / 16, the prompt explorer, knockout) lives in
:mod:`arithmech.methods.explorer`; :func:`run` is the step end to end (``python -m arithmech analyze``):
it reads the key heads of the identify step and writes the analyze files of the results folder, and returns them
read back (:class:`~arithmech.analyze.result.AnalyzeResult`, :mod:`arithmech.analyze.result`: the one reader of
these files); :func:`compute` returns what the run holds in memory beyond them (:class:`Computed`: the model, the
samples).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from arithmech.analyze.config import Analyze as Config
from arithmech.analyze.result import AnalyzeResult as Result  # Result, read: the step protocol
from arithmech.analyze.result import read
from arithmech.core import admission, provenance, results
from arithmech.core.models import load_model
from arithmech.core.progress import Progress, announce
from arithmech.data.pairs import reference_samples
from arithmech.data.splits import cluster
from arithmech.identify.result import load_key_heads, operations
from arithmech.methods.attention import Head, attention_by_role, label_heads, nonkey_baseline, verdict_lines
from arithmech.methods.mlp import MLP_QUANTITIES, layer_top_numbers, projection_samples, projection_table, stage_layers
from arithmech.methods.stages import specific_curves, stage_intervals

# Every identify file run() may read, each checked where present before the model loads and anything is written
# (effects.csv is read only where no key head passes: a damaged one is refused even when this run would not need it).
READS = ("key_heads.json", "effects.csv", "prompts.jsonl")


def attention_files(roles, heads: list[Head]) -> dict:
    """The attention part of the analyze files: ``attention_roles.csv`` (``roles``, every head) and
    ``attention_baseline.csv`` (each of ``heads`` against the non-key heads, :func:`nonkey_baseline`)."""
    return {"attention_roles.csv": roles, "attention_baseline.csv": nonkey_baseline(roles, heads)}


def key_head_summary(roles, heads: list[Head]) -> list[dict]:
    """``analyze.json``'s ``key_heads``: per key head its label and masses with the first position, the
    mass on the first position, and the label and masses without it."""
    lab, nf = label_heads(roles, heads), label_heads(roles, heads, view="without first")
    cols = ["name", "label", "operand", "operator", "rest", "kv_head"] + (["first"] if "first" in lab else [])
    out = lab[cols].to_dict("records")
    for row, (_, r) in zip(out, nf.iterrows()):
        row.update(label_nofirst=r["label"], operand_nofirst=r["operand"], operator_nofirst=r["operator"])
    return out


@dataclass(frozen=True)
class Computed:
    """What an analyze run holds in memory beyond its files (:func:`compute`; the Analyze chapter draws attention
    strips and the prompt explorer with it): the loaded ``model``, ``tok`` and its ``geometry``, the reference
    ``samples``, the studied ``key_heads``, the frames ``roles``, ``labels`` (unrounded: the files round each value to
    8 significant digits), ``mlp`` and ``top`` (without the prompt column), the ``stages`` found (tuples), and the
    ``folder`` the files went to (read them back with :func:`~arithmech.analyze.result.read`)."""

    model: Any
    tok: Any
    geometry: Any
    samples: list
    key_heads: list[Head]
    roles: pd.DataFrame
    labels: pd.DataFrame
    mlp: pd.DataFrame
    top: pd.DataFrame
    stages: dict[str, tuple[int, int, int]]
    folder: Path


def run(config: Config) -> Result:
    """The step (``python -m arithmech analyze``): :func:`compute`, then the files it wrote read back (:func:`read`),
    as every step's ``run`` returns its ``Result``."""
    return read(compute(config).folder, config)


def compute(config: Config) -> Computed:
    """The analyze step end to end on identify's files in ``config.results`` (the root or the model's folder):
    writes ``attention_roles.csv``, ``attention_baseline.csv``, ``mlp_projection.csv``, ``top_numbers.csv``,
    ``analyze.json`` and the ``analyze`` record of ``run.json``. Identify must have run (its files are checked
    before the model loads).

    Returns what the run holds in memory (:class:`Computed`; :func:`run` returns the files read back instead).
    """
    c = config
    folder = results.model_folder(c.results, c.model_name)
    results.check_writable(folder, "analyze", c.overwrite)
    for name in READS:
        if results.exists(folder, name):
            results.read(folder, name)
    heads, heads_from = load_key_heads(folder)
    ops = operations(c.operations, folder)
    samples = reference_samples(folder, c.n_samples, c.seed, ops)
    est = admission.check(c)  # refused here when it cannot fit, before the model loads
    t0 = time.time()
    announce("analyze", est.line() if est else "")
    with Progress("analyze", 3) as bar:
        model, tok, geo = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="eager")
        roles = attention_by_role(model, tok, samples, batch_size=c.batch_size)
        labels = label_heads(roles, heads)
        bar.advance(note="attention")
        mlp, stages, specific = _mlp_stages(model, tok, samples, geo, c)
        bar.advance(note="mlp")
        top = layer_top_numbers(model, tok, c.prompt, k=5, final_norm=c.final_norm)
        bar.advance(note="top numbers")
    summary = _summary(roles, heads, heads_from, stages, specific, len(samples), ops, c)
    results.write_step(
        folder,
        "analyze",
        {
            **attention_files(roles, heads),
            "mlp_projection.csv": mlp,
            "top_numbers.csv": top.assign(prompt=c.prompt),
            "analyze.json": summary,
        },
        _record(c, t0, est),
    )
    return Computed(
        model=model,
        tok=tok,
        geometry=geo,
        samples=samples,
        key_heads=heads,
        roles=roles,
        labels=labels,
        mlp=mlp,
        top=top,
        stages=stages,
        folder=folder,
    )


def _mlp_stages(model, tok, samples: list, geo, c: Config) -> tuple:
    """The MLPs' projections (the mean curves of Fig. 6a/b, 13, 14), their stage layers and, from the curves each
    minus its matched baseline, the stages' intervals (resampling the problem clusters); no stages under five
    layers. Returns ``(mlp, stages, specific)``."""
    per = projection_samples(model, tok, samples, final_norm=c.final_norm, batch_size=c.batch_size)
    mlp = projection_table(per)  # the mean curves of Fig. 6a/b, 13, 14
    stages = stage_layers(mlp) if geo.n_layers >= 5 else {}
    curves = specific_curves(per, (*MLP_QUANTITIES, "in_other"))  # each minus its matched baseline
    clusters = [cluster(x) for x in samples]  # knots' intervals resample the problem clusters
    specific = stage_intervals(curves, clusters, seed=c.seed) if geo.n_layers >= 5 else {}
    return mlp, stages, specific


def _summary(roles, heads: list, heads_from: str, stages: dict, specific: dict, n: int, ops, c: Config) -> dict:
    """``analyze.json``: the key heads' roles (and where the heads come from), the MLP stages with their intervals,
    the projection's settings, the prompts' count and operations."""
    return {
        "key_heads": key_head_summary(roles, heads),
        "heads_from": heads_from,
        "stages": {k: list(v) for k, v in stages.items()},
        "specific_stages": specific,
        "final_norm": c.final_norm,
        "prompt": c.prompt,
        "n_samples": n,
        "operations": ops or "all",
    }


def _record(c: Config, t0: float, est) -> dict:
    """The step's record (``run.json``): its settings, the versions, the seconds since ``t0``, the peak memory and
    the estimate made before the run."""
    return {
        "parameters": dict(
            model=c.model_name,
            n_samples=c.n_samples,
            seed=c.seed,
            device=c.device,
            dtype=c.dtype,
            prompt=c.prompt,
            final_norm=c.final_norm,
            batch_size=c.batch_size,
            operations=c.operations,
        ),
        "versions": provenance.versions(),
        "wall_s": round(time.time() - t0, 2),
        "peak_memory": provenance.peak_memory(),
        "estimate": est.record() if est else None,
    }


def summary(result: Result) -> str:
    """The command line's summary of :func:`run`'s result: the studied heads' labels, the stages (``analyze.json``'s,
    as the run found them), the verdicts."""
    folder = results.model_folder(result.config.results, result.config.model_name)
    return "\n".join(
        [
            result.labels[["name", "label", "operand", "operator", "rest"]].to_string(index=False),
            f"start-inflection-end: {result.stages}",
            *verdict_lines(result.baseline, heads_from=result.heads_from),
            f"wrote {folder}/attention_roles.csv, attention_baseline.csv, mlp_projection.csv, "
            "top_numbers.csv, analyze.json",
        ]
    )
