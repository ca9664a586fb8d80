"""The stability step's :class:`Result`: its three files read back, with the config they were made with
(:mod:`arithmech.steps.stability` computes and writes them; this module reads them, through
:mod:`arithmech.core.results`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from arithmech.core import results
from arithmech.identify.config import Stability as Config

FILENAMES = ("stability.csv", "stability_runs.csv", "stability_heads.csv")
"""The step's files, in the order of :class:`Result`'s ``table``, ``runs``, ``heads``."""


@dataclass(frozen=True)
class Result:
    """A stability run's files as a run made with ``config`` wrote them (:func:`read`; what
    :func:`arithmech.steps.stability.run` and :func:`arithmech.pipeline.ensure.ensure` return for a :class:`Stability`
    config), each read and checked:

    * ``table`` — ``stability.csv``: the Jaccard comparisons (size vs largest, between seeds, kinds, families);
    * ``runs`` — ``stability_runs.csv``: each run (kind, seed, size, family): its prompts, key and top sets;
    * ``heads`` — ``stability_heads.csv``: per head and kind, how often it is key / in the top, and its effect with
      its interval in the reference run;
    * ``record`` — the ``stability`` record of ``run.json`` (parameters, timings, versions, the estimate);
    * ``config`` — the config the files were made with (or reused for)."""

    config: Config
    table: pd.DataFrame
    runs: pd.DataFrame
    heads: pd.DataFrame
    record: dict


def read(folder: str | Path, config: Config) -> Result:
    """The stability files of ``folder`` (checked reads) and the step's ``run.json`` record, as the :class:`Result`
    of a run made with ``config``."""
    table, runs, heads = (results.read(folder, n) for n in FILENAMES)
    record = results.read_run(folder)["steps"]["stability"]
    return Result(config=config, table=table, runs=runs, heads=heads, record=record)
