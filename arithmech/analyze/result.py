"""Analyze's files read back: the one reader of the analyze wing's files, each read and checked through
:mod:`arithmech.core.results`. :class:`AnalyzeResult` and :func:`read` (:mod:`arithmech.analyze.run` computes and
writes the files); the pages take an :class:`AnalyzeResult`, never the folder. :class:`AnalyzeFiles`: the same files
without the config that made them, each read on first use (what the claims read,
:class:`arithmech.claims.evidence.Context`).

Later wings import this module, never analyze's computing modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from arithmech.analyze.config import Analyze as Config
from arithmech.core import results
from arithmech.identify.result import load_key_heads
from arithmech.methods.attention import label_heads

FILES = ("attention_roles.csv", "attention_baseline.csv", "mlp_projection.csv", "top_numbers.csv", "analyze.json")
"""The step's files, in the order the command names them."""


@dataclass(frozen=True)
class AnalyzeResult:
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

    @property
    def heads_from(self) -> str:
        """Where the studied heads come from (``analyze.json``'s ``heads_from``): the key heads, or the top ones by
        effect rank where none passes."""
        return self.summary["heads_from"]

    @property
    def specific_stages(self) -> dict:
        """The answer- and operand-specific curves' knots with 95% intervals over problem clusters and the interval of
        their inflections' difference (``analyze.json``'s ``specific_stages``: :func:`arithmech.methods.stages.
        stage_intervals`); {} for a run made before them or a model of fewer than 5 layers."""
        return self.summary.get("specific_stages") or {}

    @property
    def stages(self) -> dict[str, tuple[int, ...]]:
        """The start–inflection–end layers of each curve, as the run found them (``analyze.json``'s ``stages``)."""
        return {k: tuple(v) for k, v in self.summary["stages"].items()}


def of(config: Config) -> AnalyzeResult:
    """The analyze files of ``config``'s model folder (where :func:`arithmech.analyze.run.compute` writes them), read
    as by :func:`read`: what a page that ran analyze reads back, never naming the folder."""
    return read(results.model_folder(config.results, config.model_name), config)


def read(folder: str | Path, config: Config) -> AnalyzeResult:
    """The analyze files of ``folder`` (checked) as the :class:`AnalyzeResult` of a run made with ``config``."""
    roles = results.read(folder, "attention_roles.csv")
    return AnalyzeResult(
        config=config,
        roles=roles,
        labels=label_heads(roles, load_key_heads(folder)[0]),
        baseline=results.read(folder, "attention_baseline.csv"),
        mlp=results.read(folder, "mlp_projection.csv"),
        top=results.read(folder, "top_numbers.csv"),
        summary=results.read(folder, "analyze.json"),
    )


class AnalyzeFiles(results.Files):
    """Analyze's files of a folder without the config that made them (:class:`arithmech.core.results.Files`: each read
    and checked on first use, once; ``None`` where absent), named as :class:`AnalyzeResult`'s fields: what the claims'
    deciders read."""

    @property
    def roles(self) -> pd.DataFrame | None:
        """``attention_roles.csv``: every head's attention by token role."""
        return self.file("attention_roles.csv")

    @property
    def summary(self) -> dict | None:
        """``analyze.json``: the key heads' summary, where they came from, the operations, the stages."""
        return self.file("analyze.json")
