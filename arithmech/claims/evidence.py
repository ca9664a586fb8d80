"""What a claim's decider reads: one results folder, as the Results of the steps that wrote it, each file read once,
a missing file an exception.

:class:`Context` is the deciders' view of ``results/<model>/`` for :mod:`arithmech.claims.decide`: it reads nothing
itself; each file is reached through the config-free reader of the step that wrote it (identify's
:class:`~arithmech.identify.result.IdentifyFiles`, stability's :class:`~arithmech.identify.result.StabilityFiles`,
analyze's :class:`~arithmech.analyze.result.AnalyzeFiles`, faithfulness's
:class:`~arithmech.circuits.result.FaithfulnessFiles`, Table 1's :class:`~arithmech.table1.result.Table1Result`).
:class:`Missing` is what a decider raises when a file it needs is absent (the claim is then inconclusive).
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from arithmech.analyze.result import AnalyzeFiles
from arithmech.circuits.result import FaithfulnessFiles
from arithmech.core.safe_read import ResultsError
from arithmech.core.stats import wilson_interval
from arithmech.identify.result import IdentifyFiles, StabilityFiles
from arithmech.methods.ablation.crossfit import pooled
from arithmech.pipeline.ensure import folder_of
from arithmech.steps.control import recomputed
from arithmech.table1.confirmation import Confirmation
from arithmech.table1.result import Table1Result

Z95 = 1.959964  # the 95% two-sided normal quantile (wilson_interval's default)
T = TypeVar("T")


class Missing(Exception):
    """A file a rule needs is not in the results folder (the claim is then inconclusive)."""


def need(value: T | None, name: str) -> T:
    """``value``, a file a step's Result read; :class:`Missing` (``"<name> is missing"``) where the folder has none."""
    if value is None:
        raise Missing(f"{name} is missing")
    return value


class Context:
    """One results folder as the deciders read it: the config-free Results of the steps that wrote it
    (``identify_files``, ``stability_files``, ``analyze_files``, ``faithfulness_files``; :meth:`table1`,
    :meth:`confirmation`), each file read once, on first use; the accessors below raise :class:`Missing` for an
    absent file, and :meth:`memo` keeps what is computed from them."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.identify_files = IdentifyFiles(self.folder)
        self.stability_files = StabilityFiles(self.folder)
        self.analyze_files = AnalyzeFiles(self.folder)
        self.faithfulness_files = FaithfulnessFiles(self.folder)
        self._cache: dict[Hashable, object] = {}

    @classmethod
    def of(cls, result: Any) -> Context:
        """The deciders' view of the folder a step's Result was read from, so a page handed the Result names no path:
        a Result that keeps its folder (``Table1Result``, a config-free ``*Files`` reader) gives it, a step's
        ``Result`` the folder its config's run writes (:func:`arithmech.pipeline.ensure.folder_of`, where
        :func:`~arithmech.pipeline.ensure.ensure` read it). A new view: each file is read on its first use."""
        folder = getattr(result, "folder", None)
        return cls(folder if folder is not None else folder_of(result.config))

    def memo(self, key: Hashable, compute):
        """``compute()`` once per ``key`` for this folder (tables derived from its files)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    # identify's files (IdentifyFiles)
    def key_heads(self) -> dict:
        """``key_heads.json``."""
        return need(self.identify_files.key_heads, "key_heads.json")

    def all_effects(self) -> pd.DataFrame:
        """``effects.csv``, every task's rows (:meth:`effects`: the primary task's)."""
        return need(self.identify_files.effects, "effects.csv")

    def effect_clusters(self) -> pd.DataFrame:
        """``effects_clusters.csv``' rows of the primary task (:meth:`primary`): each head's mean effect per problem
        cluster (identify writes it from issue 63 on)."""
        c = need(self.identify_files.effect_clusters, "effects_clusters.csv")
        return c[c.task == self.primary()[0]]

    def knockout(self) -> pd.DataFrame:
        """``knockout.csv``, every task's rows (:func:`end_rows`: the primary task's at END)."""
        return need(self.identify_files.knockout, "knockout.csv")

    def crossfit(self):
        """``knockout_crossfit.csv``'s primary-task rows pooled over their folds
        (:class:`~arithmech.methods.ablation.crossfit.CrossFit`); ``None`` where the folder has none."""
        f = self.identify_files.crossfit
        if f is None:
            return None
        f = f[f.task == self.primary()[0]]
        return self.memo("crossfit", lambda: pooled(f) if len(f) else None)

    def answer_tokens(self) -> pd.DataFrame:
        """``answer_tokens.csv``."""
        return need(self.identify_files.answer_tokens, "answer_tokens.csv")

    def heldout(self) -> dict:
        """``heldout.json``."""
        return need(self.identify_files.heldout, "heldout.json")

    def prompts(self) -> list[dict]:
        """``prompts.jsonl``'s rows (:meth:`samples`: as samples)."""
        return need(self.identify_files.prompts, "prompts.jsonl")

    def run(self) -> dict:
        """identify's record of ``run.json``."""
        return need(self.identify_files.run, "run.json's identify record")

    # the other steps' files
    def stability(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``stability.csv`` and ``stability_runs.csv`` (StabilityFiles' ``table`` and ``runs``)."""
        return need(self.stability_files.table, "stability.csv"), need(self.stability_files.runs, "stability_runs.csv")

    def attention_roles(self) -> pd.DataFrame:
        """``attention_roles.csv`` (AnalyzeFiles' ``roles``)."""
        return need(self.analyze_files.roles, "attention_roles.csv")

    def analyze_summary(self) -> dict:
        """``analyze.json`` (AnalyzeFiles' ``summary``)."""
        return need(self.analyze_files.summary, "analyze.json")

    def faithfulness(self) -> pd.DataFrame:
        """``faithfulness.csv`` (FaithfulnessFiles' ``frame``)."""
        return need(self.faithfulness_files.frame, "faithfulness.csv")

    def table1(self) -> Table1Result:
        """The folder's arms run (:class:`~arithmech.table1.result.Table1Result`, read once); :class:`Missing`
        where none was made."""
        if not Table1Result.ran(self.folder):
            raise Missing("no arms run (python -m arithmech table1)")
        return self.memo("table1", lambda: Table1Result.load(self.folder))

    def confirmation(self) -> Confirmation | None:
        """The folder's confirmation of Table 1 on fresh seeds (:class:`~arithmech.table1.confirmation.Confirmation`,
        read once), or ``None`` where no protocol was written there (pages show it; no rule decides on it)."""
        return self.memo("confirmation", lambda: Confirmation.written(self.folder))

    def samples(self) -> list:
        """``prompts.jsonl`` as samples; [] where it is absent or its rows are not prompts (an old or a
        hand-made file: the deciders then keep what the run wrote)."""

        def load():
            try:
                return self.identify_files.samples or []
            except ResultsError:
                return []

        return self.memo("samples", load)

    def control(self) -> dict:
        """Identify's per-task control *recomputed* from ``prompts.jsonl`` under the current rule
        (:func:`arithmech.steps.control.task_control`, its current version), so results made under an older control are
        decided under this one; the tasks are ``key_heads.json``'s (its ``control.floors``, else its ``task``),
        each task's prompts those of that operation. Where a task names no operation of the prompts (a
        template-pair file), the control written by the run is kept (``recomputed`` False)."""
        return self.memo("control", lambda: recomputed(self.key_heads(), self.samples()))

    def primary(self) -> tuple[str, str | None]:
        """The task the identify claims are decided on, and why none can be (else None): the run's pooled task
        (``all`` where several tasks were patched) where the control pools the same tasks the run pooled; the
        one task the control passes where the run pooled others and its files hold that task's own rows; else
        the run's task with a reason (its pooled rows mix tasks that fail the control: re-run identify)."""

        def compute():
            eff = self.all_effects()
            task = "all" if (eff.task == "all").any() else eff.task.iloc[0]
            c = self.control()
            pooled, ran = c.get("pooled", [task]), c.get("stored_pooled", c.get("pooled", [task]))
            if not c.get("recomputed") or set(pooled) == set(ran) or task != "all":
                return task, None
            if len(pooled) == 1 and (eff.task == pooled[0]).any():
                return pooled[0], None
            return task, (
                f"the run's task all pools {', '.join(ran)}, the control passes {', '.join(pooled)}: re-run identify"
            )

        return self.memo("primary", compute)

    def effects(self) -> pd.DataFrame:
        """Rows of the primary task (:meth:`primary`)."""
        eff = self.all_effects()
        return eff[eff.task == self.primary()[0]]

    def heads(self) -> pd.DataFrame:
        """Head rows of the primary task, most negative effect first (ties: layer, head)."""
        hd = self.effects()
        hd = hd[hd["head"] != "mlp"].assign(head=lambda d: d["head"].astype(int))
        return hd.sort_values(["effect", "layer", "head"], kind="stable")


def cluster_interval(row, z: float = Z95) -> tuple[float, float, str]:
    """A knockout.csv row's interval aware of its problem clusters (95% for the default ``z``): the Wilson interval
    with the clusters as the trials (``accuracy × n_clusters`` of ``n_clusters``: as if every prompt of a problem were
    right or wrong together) where the row has ``n_clusters``. With clusters of equal size that is the most
    conservative design effect; with unequal sizes the effective number of trials is smaller still (Kish: ``n² /
    Σ n_i²``), which knockout.csv cannot give (it records the clusters' number, not their sizes), so the interval
    is then a little too narrow; else the Wilson interval over prompts (the file's own at 95%). Returns ``(low,
    high, what)``."""
    m = getattr(row, "n_clusters", None)
    if m is not None and m == m and int(m) > 0:
        m = int(m)
        lo, hi = wilson_interval(float(row.accuracy) * m, m, z)
        return lo, hi, f"Wilson over {m} problem clusters"
    if z != Z95:
        n = int(row.n)
        return (*wilson_interval(float(row.accuracy) * n, n, z), "Wilson over prompts")
    return float(row.ci_low), float(row.ci_high), "Wilson over prompts"


def end_rows(ctx: Context) -> pd.DataFrame:
    """knockout.csv's rows of the primary task (:meth:`~arithmech.claims.evidence.Context.primary`) at END (or at the
    one position setting the run has): another task's key-vs-random rows at the same k are not the primary's curve."""
    ko = ctx.knockout()
    if "task" in ko and len(ko):
        ko = ko[ko.task == ctx.primary()[0]]
    if "positions" in ko:
        ko = ko[ko.positions == ("end" if (ko.positions == "end").any() else ko.positions.iloc[0])]
    return ko
