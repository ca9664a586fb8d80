"""Table 1's claims as rules, and their deciders: what precise SFT learns, against full SFT and random heads, and what
it costs.

Each claim takes the verdict of its rule over whole learning-rate curves (:mod:`arithmech.table1.curves`: every rate
of every arm's grid, intervals over runs and test items, leave-one-rate-out) on the primary math measure (pooled over
operations), ``finetune/table1.json`` and its records. Each decider takes a :class:`~arithmech.claims.evidence.Context`
and returns ``(here, holds)``; without an arms run, or without a run of an arm the rule reads, the claim is missing;
where the model's scope or a collapse rules the test out, its ``here`` says "not testable" and why. :data:`FINETUNE`
holds each :class:`~arithmech.claims.rule.Rule` with its decider.
"""

from __future__ import annotations

from arithmech.claims.evidence import Context, Missing
from arithmech.claims.rule import Rule
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


_CUT = (
    "; a rate the plan cuts (--no-replicate-ends: not in table1.json's replicated) is outside the grid "
    "these rules read and outside N"
)
_CROSSED = (
    "; every interval is crossed (table1/curves.py, seventh version): the spread of the run means plus the spread "
    "over the shared test items of the per-item change (of the per-item difference, for two points), "
    "each term studentized by its own degrees of freedom and added in quadrature (eighth version)"
)
_FRONTIER = (
    "; tenth version (written after the 149 SmolLM2 runs were read: exploratory): some and every range over each "
    "arm's validation frontier (the live points no other point of the arm beats on validation math and validation "
    "text loss), so a point whose math diverged decides nothing; the math rules are testable only where full SFT's "
    "validation gain over base has, at some rate, a 95% interval above +5 points (was: 50% validation accuracy)"
)
FINETUNE: tuple[Rule, ...] = (
    Rule(
        "precise-learns-math",
        "Precise SFT improves math",
        "+15 points on average over four math sets (Table 1)",
        "over whole learning-rate grids (table1/curves.py, rule 1): holds iff some rate of precise-key has a math "
        "gain over base on the primary math measure whose interval (over runs and the shared test items, ≥ 3 runs a "
        "point) lies above 0; does not hold iff every rate's interval lies at or below 0; inconclusive otherwise, and "
        "when leaving out any one grid point's runs gives the opposite verdict; collapsed points decide nothing; every "
        "interval the rule reads is at level 1 − 0.05/N for the N intervals it reads over the whole grid "
        "(Bonferroni: a verdict either way is wrong with probability at most 5%), leave-one-rate-out at the same N; "
        "a point collapsed when more than half of its runs did, and every run enters its point's mean and interval, "
        "collapsed or not (at least 3 runs)" + _CUT + _CROSSED + _FRONTIER,
        version=2,
        decider=precise_learns_math,
    ),
    Rule(
        "precise-learns-beyond-format",
        "Precise SFT learns more than the answer format (beyond the paper)",
        "not tested (no few-shot base)",
        "rule 1 of table1/curves.py against base with K solved examples in the prompt (base-shots: the answer format "
        "without the arithmetic) instead of base: holds iff some rate of precise-key gains over base-shots, its "
        "per-item change minus base-shots' item by item, with an interval (over runs and the shared test items, ≥ 3 "
        "runs a point) above 0 on the primary math measure; does not hold iff every rate's lies at or below 0; "
        "inconclusive otherwise, and when leaving out any one grid point's runs gives the opposite verdict; not yet "
        "run without a base-shots record; not testable on a suite with no base-shots control (no solved examples to "
        "show before an item: the toy and planted suites); levels, collapse and runs as in precise-learns-math"
        + _CUT
        + _CROSSED
        + _FRONTIER,
        version=3,
        decider=precise_learns_beyond_format,
    ),
    Rule(
        "precise-matches-full",
        "Precise SFT improves math about as much as full SFT",
        "+15 points on average, ≥ full SFT (Table 1)",
        "over whole learning-rate grids (table1/curves.py, rule 2): holds iff some rate of precise-key is, against "
        "every rate of full SFT, at most 5 points below it (interval of precise − full on the primary math "
        "measure over runs and the shared test items, ≥ 3 runs a point: lower end above −5 points); does not "
        "hold iff every precise-key rate lies more than 5 points below some full rate (upper end below −5); "
        "inconclusive otherwise, and when leaving out any one grid point's runs gives the opposite verdict; "
        "collapsed points decide nothing; every interval the rule reads is at level 1 − 0.05/N for the N "
        "intervals it reads over the whole grid (Bonferroni: a verdict either way is wrong with probability at most "
        "5%), leave-one-rate-out at the same N; a point collapsed when more than half of its runs did, and every "
        "run enters its point's mean and interval, collapsed or not (at least 3 runs)" + _CUT + _CROSSED + _FRONTIER,
        version=14,
        decider=precise_matches_full,
    ),
    Rule(
        "selection-matters",
        "The identified heads matter for precise SFT (beyond the paper)",
        "not tested (no random-head arm)",
        "over whole learning-rate grids (table1/curves.py, rule 4): holds iff some rate of precise-key beats every "
        "rate of precise-random (layer-matched random heads, draws and seeds as runs) on the primary math measure "
        "(interval of key − random over runs and the shared test items, ≥ 3 runs a point: above 0); does not "
        "hold iff at every key rate some random rate comes within +5 points (upper end below +5); inconclusive "
        "otherwise, and when leaving out any one grid point's runs gives the opposite verdict; every interval the "
        "rule reads is at level 1 − 0.05/N for the N intervals it reads over the whole grid (Bonferroni: a "
        "verdict either way is wrong with probability at most 5%), leave-one-rate-out at the same N; a point "
        "collapsed when more than half of its runs did, and every run enters its point's mean and interval, "
        "collapsed or not (at least 3 runs)" + _CUT + _CROSSED + _FRONTIER,
        version=12,
        decider=selection_matters,
    ),
    Rule(
        "precise-keeps-generic",
        "Full SFT costs generic skill, precise SFT keeps it",
        "MMLU/CSQA: full −5.5/−5.8, precise +0.4/−0.2 (Table 1)",
        "over whole learning-rate grids (table1/curves.py, rule 3), both halves: (a) full SFT costs general skill "
        "at some rate (interval over runs and test items of its primary general change below 0, or a collapsed run "
        "at a rate of ≥ 3 runs; does not iff every rate's lower end is above −5 points) and (b) some "
        "precise-key rate that learns the skill is dominated by no full-SFT rate (dominated: full's math gain and "
        "general change both decidedly above it, intervals of the difference above 0); holds iff both hold, does "
        "not hold iff either does not; inconclusive otherwise, and when leaving out any one grid point's runs gives "
        "the opposite verdict; every interval the rule reads is at level 1 − 0.05/N for the N intervals it reads "
        "over the whole grid (Bonferroni: a verdict either way is wrong with probability at most 5%), "
        "leave-one-rate-out at the same N; a point collapsed when more than half of its runs did, and every run "
        "enters its point's mean and interval, collapsed or not (at least 3 runs); decided on the pooled math "
        "measure (the claim) and, for carry, on addition and subtraction apart (rows beside it)"
        + _CUT
        + _CROSSED
        + _FRONTIER,
        version=15,
        decider=precise_keeps_generic,
    ),
)
