"""The pipeline's steps, one :class:`Step` each (torch-free: the command line reads it before any model loads).

A step is its **config** (its wing's ``config``, e.g. :mod:`arithmech.identify.config`: the command's flags, each
checked once, and the run's memory estimate, ``config.memory``), its **module** (what it computes: ``run``), the
**record** it writes into ``run.json``, and a **summary** of a result for the command line. The command line
(:mod:`arithmech.cli`) is generated from :data:`STEPS`; the book and later steps call
:func:`arithmech.pipeline.ensure.ensure` with a config::

    >>> from arithmech.pipeline.ensure import ensure
    >>> from arithmech.analyze.config import Analyze
    >>> ensure(Analyze(model_name="embedded")).labels      # made once, then read back from the files

A step's module answers these names, all with the config whole (nothing unpacked on the way):

* ``run(config, **loaded)`` — compute and write the files (``loaded``: ``model``/``tok`` already in memory, where
  the step takes them) and return the step's ``Result`` read back from them (``read``), one return type for every
  step that ``ensure`` serves (finetune's and table1's return the record they wrote: they have no ``Result``);
* ``compute(config, **loaded)`` (identify and analyze only) — the same run, returning what it holds in memory beyond
  the files, for the chapters that draw from it: identify's library
  :class:`~arithmech.identify.pipeline.IdentifyResult` (each task's kept ``Sample`` objects, the timings
  unrounded) and analyze's :class:`~arithmech.analyze.run.Computed` with the loaded model and samples (attention
  strips, the prompt explorer). ``run``
  is ``compute`` then ``read``; a consumer that needs only the files calls ``ensure``;
* ``Result`` and ``read(folder, config)`` — the step's result: a frozen dataclass with typed fields (DataFrames,
  the JSON records as dicts) and ``config``, the config it was made with; ``read`` builds it from the files a run
  wrote, each read and checked through :mod:`arithmech.core.results`. One way for every step: a module-level
  ``read(folder, config)`` (not a classmethod), so that :func:`~arithmech.pipeline.ensure.ensure` calls each module
  alike; its docstring names each field's file. A wing's Result lives in its ``result`` module (identify's and
  stability's in :mod:`arithmech.identify.result`, analyze's ``AnalyzeResult`` in :mod:`arithmech.analyze.result`,
  beyond's and faithfulness's ``BeyondResult`` and ``FaithfulnessResult`` in :mod:`arithmech.circuits.result`);
  ``ensure`` is typed per config (overloads), so a consumer gets the step's ``Result`` type;
* ``recorded(config)`` — what ``run.json`` records of a run made with ``config`` (default: the config's
  :meth:`~arithmech.pipeline.config_base.ModelStep.recorded`: its reuse key, ``model_name`` recorded as ``model``); a
  record without one of these parameters is not reused (no value is assumed for it: the shipped records carry every
  one);
* ``needs(config)`` (optional) — ``(file, config)``: a file this step reads, and the config of the step that
  makes it when it is absent (beyond and faithfulness read identify's files);
* ``folder_of(config)`` (optional) — where the run writes, when not the model's folder (identify's ``--out``,
  counterfactuals' ``counterfactuals/``);
* ``summary(result)`` — what the command prints of ``run``'s result (its ``Result``: what the files hold).

Modules are imported only when a step runs, so torch loads after every argument was checked.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from arithmech.accounts import config as accounts_config
from arithmech.analyze import config as analyze_config
from arithmech.circuits import config as circuits_config
from arithmech.identify import config as identify_config
from arithmech.planted import config as planted_config
from arithmech.prompts import config as prompts_config
from arithmech.steps import config_training


@dataclass(frozen=True)
class Step:
    """One step: the command ``name``, its ``config`` class, the ``module`` whose ``run`` its command calls (with
    the command line too where ``takes_command``), and the ``record`` it writes in ``run.json``."""

    name: str
    config: type
    module: str
    record: str = ""
    takes_command: bool = False

    def load(self) -> ModuleType:
        """The step's module (imported now: torch loads here)."""
        return importlib.import_module(self.module)

    def summary(self, result: Any) -> str:
        """The command line's summary of ``result`` (the module's ``summary``)."""
        return self.load().summary(result)


STEPS: dict[str, Step] = {
    s.name: s
    for s in (
        Step("identify", identify_config.Identify, "arithmech.identify.run", record="identify"),
        Step("analyze", analyze_config.Analyze, "arithmech.analyze.run", record="analyze"),
        Step("beyond", circuits_config.Beyond, "arithmech.circuits.beyond", record="beyond"),
        Step("stability", identify_config.Stability, "arithmech.steps.stability", record="stability"),
        Step("faithfulness", circuits_config.Faithfulness, "arithmech.circuits.faithfulness", record="faithfulness"),
        Step("crossfit", identify_config.CrossFit, "arithmech.identify.crossfit", record="crossfit"),
        Step("accuracy-by-template", prompts_config.Accuracy, "arithmech.steps.accuracy", record="accuracy"),
        Step("shots", prompts_config.Shots, "arithmech.steps.shots", record="shots"),
        Step(
            "counterfactuals",
            identify_config.Counterfactuals,
            "arithmech.identify.counterfactuals",
            record="counterfactuals",
        ),
        Step("finetune", config_training.Finetune, "arithmech.table1.finetune", takes_command=True),
        Step("table1", config_training.Table1, "arithmech.table1.run", record="table1", takes_command=True),
        Step("confirm", config_training.Confirm, "arithmech.table1.confirm", takes_command=True),
        Step("accounts", accounts_config.Accounts, "arithmech.accounts.run"),
        Step("planted-score", planted_config.PlantedScore, "arithmech.planted.run"),
    )
}
"""Every step of the pipeline by its command's name."""


def step_of(config: Any) -> Step:
    """The :class:`Step` that ``config`` configures."""
    for s in STEPS.values():
        if type(config) is s.config:
            return s
    raise TypeError(f"{type(config).__name__} configures no step of arithmech.pipeline.registry.STEPS")
