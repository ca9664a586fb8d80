"""One entry of a rule's history (:mod:`arithmech.claims.changelog`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Change:
    """One version of one rule: ``rule`` id, its ``version`` (1, 2, …), the ``date`` and ``commit`` that made
    it, ``what`` changed, and ``results``: "yes: <which run>" or "no: <why none>"."""

    rule: str
    version: int
    date: str
    commit: str
    what: str
    results: str

    @property
    def after_results(self) -> bool:
        """Whether the results this rule decides already existed when this version was written."""
        return self.results.startswith("yes")
