"""The paper's claims, decided on a results folder.

Every sentence of the book that states a finding comes from here. A claim is a :class:`~arithmech.claims.rule.Rule`:
what the paper says, and the test that decides it on *this* run — the same for every model. :data:`RULES` lists them
all, in the order the book states them; :func:`claims` decides them on ``results/<model>/``, as the
:class:`~arithmech.claims.evidence.Context` over its steps' Results, and returns one row per rule::

    id | claim | paper (LLaMA2-7B) | rule | here | holds

    >>> claims(Context("results/smollm2-135m"), ["few-heads"]).holds[0]
    True

``holds`` is ``True`` (holds), ``False`` (does not hold) or ``None`` (inconclusive: the results the rule needs are
missing, or their intervals cannot separate the two outcomes). ``here`` gives the numbers the rule was applied to,
each with its sample size or interval.

A chapter shows :func:`rules_markdown` of its claims *before* its results and the decided rows after them
(:func:`arithmech.report.views.pages.claim_lines`); the tests check that the rendered text and this table agree.
Each rule carries its ``version``; :mod:`arithmech.claims.changelog` says what each version changed, when, and
whether the results it decides existed then (most rules were written or changed after some results existed: the
book says so, computed from the changelog).

Adding or changing a claim: write its :class:`~arithmech.claims.rule.Rule` beside its decider (identify's in
:mod:`~arithmech.identify.claims`, analyze's and faithfulness's in :mod:`~arithmech.analyze.claims`, Table 1's in
:mod:`~arithmech.table1.claims`, the controls in :mod:`~arithmech.claims.controls`), list it in
:data:`RULES`, then log it in ``changelog.toml`` and bump its ``version``.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from arithmech.analyze.claims import ANALYZE
from arithmech.circuits.claims import CIRCUIT_FAITHFUL
from arithmech.claims.controls import CONTROLS
from arithmech.claims.evidence import Context, Missing
from arithmech.claims.rule import Rule
from arithmech.data.answers import MIN_CLUSTERS
from arithmech.identify.claims import IDENTIFY, STABILITY
from arithmech.identify.config import CONTROL_FLOOR
from arithmech.table1.claims import FINETUNE

RULES: tuple[Rule, ...] = (*IDENTIFY, *ANALYZE, *FINETUNE, *STABILITY, *CONTROLS, CIRCUIT_FAITHFUL)
BY_ID = {r.id: r for r in RULES}
ADDED = (
    "key-heads-exist-share",
    "precise-learns-beyond-format",
    "logit-diff-ranking",
    "key-heads-stable",
    "counterfactuals-agree",
    "circuit-faithful",
    "selection-matters",
    "knockout-ld-key-vs-random",
)
"""Claims this book adds, not the paper's: counted apart from the paper's own claims
(:func:`arithmech.report.views.findings.tally`)."""


def claims(ctx: Context, ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Decide the rules ``ids`` (all of :data:`RULES` by default) on ``ctx``, one results folder's step Results, each
    read once (:class:`~arithmech.claims.evidence.Context`, with what it has read already).

    Returns rows ``id, claim, paper (LLaMA2-7B), rule, here, holds``; a rule whose files are missing is
    inconclusive with ``here`` saying which file.
    """
    rows = []
    for rule in select(ids):
        try:
            here, holds = rule.decide(ctx)
        except Missing as e:
            here, holds = f"not measured: {e}", None
        rows.append((rule.id, rule.claim, rule.paper, rule.rule, here, None if holds is None else bool(holds)))
    df = pd.DataFrame(rows, columns=["id", "claim", "paper (LLaMA2-7B)", "rule", "here", "holds"])
    df["holds"] = pd.Series([r[-1] for r in rows], dtype=object)  # True / False / None, never numpy bools
    return df


def select(ids: Iterable[str] | None) -> list[Rule]:
    """The rules named ``ids`` (all when ``None``); an unknown id is a ``ValueError`` naming the known ones."""
    if ids is None:
        return list(RULES)
    ids = list(ids)
    unknown = [i for i in ids if i not in BY_ID]
    if unknown:
        raise ValueError(f"unknown claim id(s) {unknown}; known: {', '.join(BY_ID)}")
    return [BY_ID[i] for i in ids]


def rules_markdown(ids: Iterable[str]) -> str:
    """The rules ``ids`` as a markdown list, each with its version, for a chapter to state *before* its results
    (before them on the page: whether before the results existed is the changelog's to say)."""
    note = lambda r: (
        f"; inconclusive where the task does not pass its control (the simultaneous 95% interval of its floor "
        f"over problem clusters on X_r reaches {CONTROL_FLOOR:.0%}: fails where its X_r readings' interval lies at or "
        f"above it, undecided otherwise) or has fewer than {MIN_CLUSTERS} problem clusters"
        if r.gate is not None
        else ""
    )
    return "\n".join(
        (f"* **{r.claim}** (paper: {r.paper}) — {r.rule}{note(r)} (`{r.id}`, version {r.version}).")
        for r in select(ids)
    )
