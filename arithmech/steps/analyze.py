"""Analyze (§4.2, §5.2, App. C, F, H): what the key heads attend to, what the MLPs write.

The measurements live in two modules: :mod:`arithmech.methods.attention` (attention of every head
by token role: A, B, operator, BOS, other, with and without the first position, mass and density;
the head labels operand / operator / other; each key head against the non-key heads) and
:mod:`arithmech.methods.mlp` (cosines of the MLP inputs and writes with ``W_U`` rows per layer, the
start-inflection-end layers of App. C, the number tokens each layer writes). One prompt at a time
(attention strips of Fig. 7 / 16, the prompt explorer, knockout) lives in
:mod:`arithmech.methods.explorer`; :func:`run` is the step end to end (``python -m arithmech analyze``):
it reads the key heads of the identify step and writes the analyze files of the results folder, and returns them
read back (:class:`Result`); :func:`compute` returns what the run holds in memory (the model, the samples).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from arithmech.analyze.config import Analyze as Config
from arithmech.core import admission, provenance, results
from arithmech.core.models import load_model
from arithmech.core.progress import Progress, announce
from arithmech.data.pairs import reference_samples
from arithmech.identify.result import load_key_heads, operations
from arithmech.methods.attention import Head, attention_by_role, label_heads, nonkey_baseline, verdict_lines
from arithmech.methods.mlp import layer_top_numbers, mlp_projection, stage_layers

# Every identify file run() may read, each checked where present before the model loads and anything is written
# (effects.csv is read only where no key head passes: a damaged one is refused even when this run would not need it).
READS = ("key_heads.json", "effects.csv", "prompts.jsonl")

# ------------------------------------------------------------------------------ results and CLI


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


def run(config: Config) -> Result:
    """The step (``python -m arithmech analyze``): :func:`compute`, then the files it wrote read back (:func:`read`),
    as every step's ``run`` returns its ``Result``."""
    return read(compute(config)["folder"], config)


def compute(config: Config) -> dict:
    """The analyze step end to end on identify's files in ``config.results`` (the root or the model's folder):
    writes ``attention_roles.csv``, ``attention_baseline.csv``, ``mlp_projection.csv``, ``top_numbers.csv``,
    ``analyze.json`` and the ``analyze`` record of ``run.json``. Identify must have run (its files are checked
    before the model loads).

    Returns what the run holds in memory (the Analyze chapter draws attention strips and the prompt explorer with
    it; :func:`run` returns the files read back instead): a dict with the loaded ``model``, ``tok``, ``geometry``,
    ``samples``, ``key_heads``, the DataFrames ``roles``, ``labels``, ``baseline``, ``mlp``, ``top``, the
    ``stages`` found, the ``folder`` and ``analyze.json``'s ``summary``.
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
        mlp = mlp_projection(model, tok, samples, final_norm=c.final_norm, batch_size=c.batch_size)
        stages = stage_layers(mlp) if geo.n_layers >= 5 else {}
        bar.advance(note="mlp")
        top = layer_top_numbers(model, tok, c.prompt, k=5, final_norm=c.final_norm)
        bar.advance(note="top numbers")
    summary = {
        "key_heads": key_head_summary(roles, heads),
        "heads_from": heads_from,
        "stages": {k: list(v) for k, v in stages.items()},
        "final_norm": c.final_norm,
        "prompt": c.prompt,
        "n_samples": len(samples),
        "operations": ops or "all",
    }
    results.write_step(
        folder,
        "analyze",
        {
            **attention_files(roles, heads),
            "mlp_projection.csv": mlp,
            "top_numbers.csv": top.assign(prompt=c.prompt),
            "analyze.json": summary,
        },
        {
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
        },
    )
    return dict(
        model=model,
        tok=tok,
        geometry=geo,
        samples=samples,
        key_heads=heads,
        roles=roles,
        labels=labels,
        baseline=results.read(folder, "attention_baseline.csv"),
        mlp=mlp,
        top=top,
        stages=stages,
        folder=folder,
        summary=summary,
    )


@dataclass(frozen=True)
class Result:
    """Analyze's files as a run made with ``config`` wrote them (:func:`read`; what
    :func:`arithmech.pipeline.ensure.ensure` returns for an :class:`Analyze` config), each read and checked:

    * ``roles`` — ``attention_roles.csv``: every head's attention by token role;
    * ``labels`` — identify's studied heads (the key heads, or the top 10 by effect rank where none passes,
      :func:`arithmech.methods.effects.studied_heads`, from ``key_heads.json`` and ``effects.csv``) labelled from
      ``roles`` (:func:`arithmech.methods.attention.label_heads`);
    * ``baseline`` — ``attention_baseline.csv``: each key head against the non-key heads;
    * ``mlp`` — ``mlp_projection.csv``: the MLP inputs' and writes' cosines with ``W_U`` rows per layer;
    * ``top`` — ``top_numbers.csv``: the number tokens each layer writes on the config's prompt;
    * ``summary`` — ``analyze.json``: the key heads' summary, where they came from, the stages, the settings;
    * ``config`` — the config the files were made with (or reused for)."""

    config: Config
    roles: pd.DataFrame
    labels: pd.DataFrame
    baseline: pd.DataFrame
    mlp: pd.DataFrame
    top: pd.DataFrame
    summary: dict


def read(folder: str | Path, config: Config) -> Result:
    """The analyze files of ``folder`` (checked) as the :class:`Result` of a run made with ``config``."""
    roles = results.read(folder, "attention_roles.csv")
    return Result(
        config=config,
        roles=roles,
        labels=label_heads(roles, load_key_heads(folder)[0]),
        baseline=results.read(folder, "attention_baseline.csv"),
        mlp=results.read(folder, "mlp_projection.csv"),
        top=results.read(folder, "top_numbers.csv"),
        summary=results.read(folder, "analyze.json"),
    )


def summary(result: Result) -> str:
    """The command line's summary of :func:`run`'s result: the studied heads' labels, the stages (``analyze.json``'s,
    as the run found them), the verdicts."""
    stages = {k: tuple(v) for k, v in result.summary["stages"].items()}
    folder = results.model_folder(result.config.results, result.config.model_name)
    return "\n".join(
        [
            result.labels[["name", "label", "operand", "operator", "rest"]].to_string(index=False),
            f"start-inflection-end: {stages}",
            *verdict_lines(result.baseline, heads_from=result.summary["heads_from"]),
            f"wrote {folder}/attention_roles.csv, attention_baseline.csv, mlp_projection.csv, "
            "top_numbers.csv, analyze.json",
        ]
    )
