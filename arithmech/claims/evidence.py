"""What a claim's decider reads: one results folder, each file read once, a missing file an exception.

:class:`Context` wraps ``results/<model>/`` for the deciders of :mod:`arithmech.claims.rules`;
:class:`Missing` is what a decider raises when a file it needs is absent (the claim is then inconclusive).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from arithmech.core import results


class Missing(Exception):
    """A file a rule needs is not in the results folder (the claim is then inconclusive)."""


class Context:
    """Lazy access to one results folder for the deciders (each file read once)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._cache: dict[str, object] = {}

    def read(self, name: str):
        """A file of the folder through :func:`arithmech.core.results.read`; :class:`Missing` if absent."""
        def load():
            if not results.exists(self.folder, name):
                raise Missing(f"{name} is missing")
            return results.read(self.folder, name)
        return self.memo(name, load)

    def memo(self, key: str, compute):
        """``compute()`` once per ``key`` for this folder (files, and tables derived from them)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def effects(self) -> pd.DataFrame:
        """Rows of the primary task (``all`` when several tasks were patched)."""
        eff = self.read("effects.csv")
        task = "all" if (eff.task == "all").any() else eff.task.iloc[0]
        return eff[eff.task == task]

    def heads(self) -> pd.DataFrame:
        """Head rows of the primary task, most negative effect first (ties: layer, head)."""
        hd = self.effects()
        hd = hd[hd["head"] != "mlp"].assign(head=lambda d: d["head"].astype(int))
        return hd.sort_values(["effect", "layer", "head"], kind="stable")
