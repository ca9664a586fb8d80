"""The fine-tuning claims' deciders (Table 1), for :mod:`arithmech.table1.claims`.

Each claim takes the verdict of its rule over whole learning-rate curves (:mod:`arithmech.table1.curves`, issue
#40: every rate of every arm's grid, intervals over runs and test items, leave-one-rate-out) on the primary math measure
(pooled over operations), ``finetune/table1.json`` and its records. Each decider takes a
:class:`~arithmech.claims.evidence.Context` and returns ``(here, holds)``; without an arms run, or without a run
of an arm the rule reads, the claim is missing; where the model's scope or a collapse rules the test out, its
``here`` says "not testable" and why.
"""

from __future__ import annotations

from arithmech.claims.evidence import Context, Missing
from arithmech.table1 import curves
from arithmech.table1.curves import MARGIN
from arithmech.table1.frontier import MIN_RUNS, SCOPE_GAIN
from arithmech.table1.verdicts import COLLAPSE

NUMBERS = (MARGIN, MIN_RUNS, SCOPE_GAIN, COLLAPSE)
"""The numbers the curve rules decide with (margin, runs a point needs, the scope gate's gain, the collapse gate's
share of base's margin over chance): read by every decider, so each is part of its rule's digest."""

ARMS = {
    "precise-learns-math": ("precise SFT learns the skill", "precise-key − base"),
    "precise-learns-beyond-format": (curves.SHOTS, "precise-key − base-shots"),
    "precise-matches-full": ("precise matches full", "precise-key − full"),
    "selection-matters": ("the selection matters", "precise-key − precise-random"),
    "precise-keeps-generic": ("precise keeps general skills better than full", None),
}


def _pct(x) -> str:
    return f"{100 * x:+.1f}"


def _curves(ctx: Context, cid: str):
    """The curve rule's row for claim ``cid`` (:mod:`arithmech.table1.curves`), on the pooled math measure."""
    rows = ctx.memo(("curves", NUMBERS), lambda: curves.verdicts(ctx.table1()))
    claim, comp = ARMS[cid]
    r = rows[
        (rows.claim == claim) & (rows.measure == rows.measure.iloc[0]) & ((rows.comparison == comp) if comp else True)
    ].iloc[0]
    if r["whole grid"] == curves.NOT_RUN:
        raise Missing(r["why"])
    if r["whole grid"] == curves.UNTESTABLE or r["why"]:
        return r["why"], None
    num = (
        ""
        if r["estimate"] is None or r["estimate"] != r["estimate"]
        else (
            f"frontier tops {r['at']}: {_pct(r['estimate'])} points"
            + (
                f" [{_pct(r['ci_low'])}, {_pct(r['ci_high'])}] (crossed over runs and test items at "
                f"{100 * r['level']:.4g}%, the rule's level)"
                if r["ci_low"] is not None and r["ci_low"] == r["ci_low"]
                else " (no interval over runs)"
            )
        )
    )
    what = "" if comp is None else f", {r['measure']}"
    flipped = f"whole grid {r['whole grid']}, but " if r["whole grid"] != r["verdict"] else ""
    here = f"{r['comparison']} over every rate{what}: {num}; {flipped}{r['leave-one-rate-out'] or 'nothing to flip'}"
    return here, {curves.HOLDS: True, curves.NOT: False}.get(r["verdict"])


def precise_learns_math(ctx: Context):
    return _curves(ctx, "precise-learns-math")


def precise_learns_beyond_format(ctx: Context):
    return _curves(ctx, "precise-learns-beyond-format")


def selection_matters(ctx: Context):
    return _curves(ctx, "selection-matters")


def precise_matches_full(ctx: Context):
    return _curves(ctx, "precise-matches-full")


def precise_keeps_generic(ctx: Context):
    return _curves(ctx, "precise-keeps-generic")
