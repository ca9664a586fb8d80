"""The operand counterfactual beside the paper's operator counterfactual (``python -m arithmech counterfactuals``).

Identify runs twice on ``config.task`` (path patching only): once with X_c changing the operator, once
changing an operand (:func:`arithmech.identify.run.operand_identify`); ``counterfactual_overlap.json``
names the heads both find, with each one's effect under both. Everything goes to ``<model folder>/counterfactuals/``,
apart from the book's own overlap (beside identify's files, :func:`arithmech.identify.run.operand`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from arithmech.core import results
from arithmech.core.models import load_model
from arithmech.identify.config import Counterfactuals as Config
from arithmech.identify.pipeline import identify
from arithmech.identify.run import operand_identify, write_results
from arithmech.methods.ablation.overlap import counterfactual_overlap


@dataclass(frozen=True)
class Result:
    """The step's overlap file as a run made with ``config`` wrote it (:func:`read`; what :func:`run` and
    :func:`arithmech.pipeline.ensure.ensure` return for a :class:`Counterfactuals` config):

    * ``overlap`` — ``counterfactuals/counterfactual_overlap.json`` (checked): the top heads of each counterfactual
      (``a``: operator, ``b``: operand), those both find (``shared``) and each one's effect under both;
    * ``config`` — the config the files were made with.

    Each identify run's own files are under ``counterfactuals/operator/`` and ``counterfactuals/operand/``
    (:func:`arithmech.identify.run.read` reads them)."""

    config: Config
    overlap: dict


def folder_of(config: Config) -> Path:
    """Where a run of ``config`` writes its overlap and ``run.json``: ``<model folder>/counterfactuals/``."""
    return results.model_folder(config.results, config.model_name) / "counterfactuals"


def read(folder: str | Path, config: Config) -> Result:
    """``counterfactual_overlap.json`` of ``folder`` (:func:`folder_of`; checked), as the :class:`Result` of a run
    made with ``config``."""
    return Result(config=config, overlap=results.read(folder, "counterfactual_overlap.json"))


def run(config: Config) -> Result:
    """Both identify runs into ``<folder>/counterfactuals/{operator,operand}/`` and the overlap file; returns the
    :class:`Result` read back from it."""
    c = config
    out = folder_of(c)
    results.check_writable(out, "counterfactuals", c.overwrite)
    model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype)
    op = identify(model, tok, c.task, n_samples=c.n_samples, seed=c.seed, knockout=False, transfer=False)
    nd = operand_identify(model, tok, c.task, n_samples=c.n_samples, seed=c.seed, knockout=False)
    write_results(op, out / "operator", model_name=c.model_name)
    write_results(nd, out / "operand", model_name=c.model_name)
    overlap = counterfactual_overlap(op.effects, nd.effects, c.task)
    results.write_step(
        out,
        "counterfactuals",
        {"counterfactual_overlap.json": overlap},
        {"parameters": c.recorded(), "operand_task": c.task},
    )
    return read(out, c)


def summary(result: Result) -> str:
    """The command line's summary: the heads each counterfactual finds and those both find."""
    return json.dumps({k: result.overlap[k] for k in ("a", "b", "shared")})
