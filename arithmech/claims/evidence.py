"""What a claim's decider reads: one results folder, each file read once, a missing file an exception.

:class:`Context` wraps ``results/<model>/`` for the deciders of :mod:`arithmech.claims.decide`;
:class:`Missing` is what a decider raises when a file it needs is absent (the claim is then inconclusive).
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path

import pandas as pd

from arithmech.core import results
from arithmech.core.safe_read import ResultsError
from arithmech.core.stats import wilson_interval
from arithmech.data import pairs
from arithmech.steps.control import recomputed
from arithmech.table1.result import Table1Result

Z95 = 1.959964  # the 95% two-sided normal quantile (wilson_interval's default)


class Missing(Exception):
    """A file a rule needs is not in the results folder (the claim is then inconclusive)."""


class Context:
    """Lazy access to one results folder for the deciders (each file read once)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._cache: dict[Hashable, object] = {}

    def read(self, name: str):
        """A file of the folder through :func:`arithmech.core.results.read`; :class:`Missing` if absent."""

        def load():
            if not results.exists(self.folder, name):
                raise Missing(f"{name} is missing")
            return results.read(self.folder, name)

        return self.memo(name, load)

    def memo(self, key: Hashable, compute):
        """``compute()`` once per ``key`` for this folder (files, and tables derived from them)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def table1(self) -> Table1Result:
        """The folder's arms run (:class:`~arithmech.table1.result.Table1Result`, read once); :class:`Missing`
        where none was made."""
        if not Table1Result.ran(self.folder):
            raise Missing("no arms run (python -m arithmech table1)")
        return self.memo("table1", lambda: Table1Result.load(self.folder))

    def samples(self) -> list:
        """``prompts.jsonl`` as samples; [] where it is absent or its rows are not prompts (an old or a
        hand-made file: the deciders then keep what the run wrote)."""

        def load():
            try:
                return pairs.samples(self.folder) if results.exists(self.folder, "prompts.jsonl") else []
            except ResultsError:
                return []

        return self.memo("samples", load)

    def control(self) -> dict:
        """Identify's per-task control *recomputed* from ``prompts.jsonl`` under the current rule
        (:func:`arithmech.steps.control.task_control`, its current version), so results made under an older control are
        decided under this one; the tasks are ``key_heads.json``'s (its ``control.floors``, else its ``task``),
        each task's prompts those of that operation. Where a task names no operation of the prompts (a
        template-pair file), the control written by the run is kept (``recomputed`` False)."""
        return self.memo("control", lambda: recomputed(self.read("key_heads.json"), self.samples()))

    def primary(self) -> tuple[str, str | None]:
        """The task the identify claims are decided on, and why none can be (else None): the run's pooled task
        (``all`` where several tasks were patched) where the control pools the same tasks the run pooled; the
        one task the control passes where the run pooled others and its files hold that task's own rows; else
        the run's task with a reason (its pooled rows mix tasks that fail the control: re-run identify)."""

        def compute():
            eff = self.read("effects.csv")
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
        eff = self.read("effects.csv")
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
    ko = ctx.read("knockout.csv")
    if "task" in ko and len(ko):
        ko = ko[ko.task == ctx.primary()[0]]
    if "positions" in ko:
        ko = ko[ko.positions == ("end" if (ko.positions == "end").any() else ko.positions.iloc[0])]
    return ko
