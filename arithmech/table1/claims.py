"""Table 1's claims as rules: what precise SFT learns, against full SFT and random heads, and what it costs.

Each :class:`~arithmech.claims.rule.Rule` is decided by its decider in :mod:`arithmech.table1.deciders`: the verdict
of its rule over whole learning-rate grids (:mod:`arithmech.table1.curves`).
"""

from __future__ import annotations

from arithmech.claims.rule import Rule
from arithmech.table1.deciders import (
    precise_keeps_generic,
    precise_learns_beyond_format,
    precise_learns_math,
    precise_matches_full,
    selection_matters,
)

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
        "run without a base-shots record; levels, collapse and runs as in precise-learns-math"
        + _CUT
        + _CROSSED
        + _FRONTIER,
        version=2,
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
