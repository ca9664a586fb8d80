"""One rule: a claim of the paper (or of this book) and how a results folder decides it.

A :class:`Rule` is everything about one claim in one value: what it says (``claim``), what the paper gives
(``paper``), the test in words (``rule``), how many times that test was written or changed (``version``: its entries
in :mod:`arithmech.claims.changelog`), the function that applies it (``decider``) and, for the rules that can only
be read where identify's task passes its control, that control (``gate``)::

    Rule(
        "middle-layers",
        "The top heads sit in the middle layers",
        "layers 12–17 of 32 (depth layer/(L−1): 0.39–0.55)",
        "holds iff the median relative depth layer/(L−1) of the top 10 heads lies in the middle third [1/3, 2/3]",
        version=9,
        decider=_middle_layers,  # ctx -> (here, holds)
        gate=controlled,  # inconclusive where the task fails its control
    )

A decider takes the results folder as a :class:`~arithmech.claims.evidence.Context` and returns ``(here, holds)``:
the numbers it read, each with its sample size or interval, and ``True``, ``False`` or ``None`` (inconclusive); it
raises :class:`~arithmech.claims.evidence.Missing` when a file it needs is absent. :attr:`Rule.decide` is the
decider behind its gate, the function :func:`arithmech.claims.decide.claims` calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from arithmech.claims.evidence import Context

Decider = Callable[[Context], tuple[str, bool | None]]


@dataclass(frozen=True)
class Rule:
    """One claim and the rule that decides it on a run (module docstring)."""

    id: str
    claim: str
    paper: str
    rule: str
    version: int
    decider: Decider
    gate: Callable[[Decider], Decider] | None = None

    @property
    def decide(self) -> Decider:
        """The decider as it runs: wrapped by its gate, where it has one."""
        return self.decider if self.gate is None else self.gate(self.decider)
