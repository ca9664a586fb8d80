"""One rule of :mod:`arithmech.claims.rules`: a claim of the paper (or of this book) and how a results folder decides
it; its history is :mod:`arithmech.claims.changelog` (entries: :class:`arithmech.claims.change.Change`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One claim of the paper and the rule that decides it on a run; ``version``: how many times the rule was
    written or changed (its entries in :data:`arithmech.claims.changelog.CHANGELOG`)."""

    id: str
    claim: str
    paper: str
    rule: str
    version: int = 0
