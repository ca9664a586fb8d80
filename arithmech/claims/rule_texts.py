"""The rules' texts: what each claim says, the paper's number, and the test in words, with its version.

:data:`RULES` holds one :class:`~arithmech.claims.rule.Rule` per claim — the sentence a chapter states before its
results (:func:`arithmech.claims.rules.rules_markdown`) and the rules page lists with its history. How each rule
is *decided* on a results folder (its decider) lives in :mod:`arithmech.claims.rules`; the numbers below are the
ones both the texts print and the deciders read (their values are logged: :mod:`arithmech.claims.changelog` fingerprints
them).

Editing a rule's text here is a change of the rule: log it in :mod:`arithmech.claims.changelog_recent` and bump
its ``version``.
"""

from __future__ import annotations

from arithmech.claims.rule import Rule
from arithmech.identify.config import CONTROL_FLOOR, MIN_PROBLEMS, Identify
from arithmech.methods.effects import TOP  # "the top heads": the first TOP by effect rank (studied where none is key)
from arithmech.paper import KEY_THRESHOLD

THRESHOLD = KEY_THRESHOLD  # the paper's key-head threshold (relative change of the answer logit)
SHARE_THRESHOLD = Identify.share_threshold  # the LD-ratio rule's: a ratio to the counterfactual's LD effect
FEW_FRACTION = 0.05  # few-heads: the paper's "below 5% of heads" (Fig. 2), scaled to each model
K = 8  # heads knocked out in the knockout claims
AGREE_HOLDS, AGREE_FAILS = 8, 5  # logit-diff-ranking: top-TOP heads two measures must share (holds) / at most (fails)


def signed_percent(x: float) -> str:
    """``x`` as a signed whole percent with a true minus sign: ``-0.14`` → ``"−14%"``."""
    return f"{x:+.0%}".replace("-", "−")


_CUT = (
    "; a rate the plan cuts (--no-replicate-ends: not in table1.json's replicated) is outside the grid "
    "these rules read and outside N"
)
_CROSSED = (
    "; every interval is crossed (claims/curves.py, seventh version): the spread of the run means plus the spread "
    "over the shared test items of the per-item change (of the per-item difference, for two points), "
    "each term studentized by its own degrees of freedom and added in quadrature (eighth version)"
)
RULES: tuple[Rule, ...] = (
    Rule(
        "key-heads-exist",
        "Some heads pass the key-head threshold",
        "heads below −5% exist (head 12.22: −14.0%); no count given beyond fewer than 5% of heads mattering",
        "holds iff at least one head's effect is below −5% (with its bootstrap interval entirely below −5% where "
        "effects.csv has intervals); does not hold iff none is",
        version=8,
    ),
    Rule(
        "key-heads-exist-share",
        "Some heads pass the key-head threshold, measured as a ratio to the counterfactual's effect",
        "not measured in the paper (the LD ratio, beside the paper's measure)",
        "a head's LD ratio = (mean over prompts of its change of LD = logit(answer) − logit(X_c's answer) when it "
        "alone is patched) / (mean change of LD by the whole counterfactual), −1 when patching it alone moves LD "
        "as much as the whole counterfactual; heads are patched one at a time, so the ratios of several heads need "
        "not add up (they are not shares of one effect: effects.csv's column is still named share); holds iff at "
        f"least one head's bootstrap interval of its ratio lies entirely below {signed_percent(SHARE_THRESHOLD)}; "
        "does not hold iff none does; inconclusive where effects.csv has no share column (results made before it was "
        "measured)",
        version=7,
    ),
    Rule(
        "few-heads",
        "A few heads carry the effect",
        "few key heads among 1024 (Fig. 2: below 5% of heads)",
        f"scaled to the model: the top {FEW_FRACTION:.0%} of its heads (rounded up), the paper's fraction; their "
        "concentration = their sum of negative one-at-a-time changes over every head's (a concentration of the "
        "ranking, not a fraction of the effect: one-at-a-time changes need not add up), by the paper's relative "
        "change and by the LD ratio, each ranked by its own measure: holds iff both are ≥ 50%, does not hold iff "
        "both are below; inconclusive where they disagree (decided on the first alone where effects.csv has no "
        "LD ratio); no interval (effects.csv keeps no per-prompt effects)",
        version=7,
    ),
    Rule(
        "middle-layers",
        "The top heads sit in the middle layers",
        "layers 12–17 of 32 (depth layer/(L−1): 0.39–0.55)",
        f"holds iff the median relative depth layer/(L−1) of the top {TOP} heads lies in the middle third [1/3, 2/3]",
        version=9,
    ),
    Rule(
        "logit-diff-ranking",
        "The paper's relative change and the LD ratio pick the same top heads",
        "ranks by the relative change (§4.1)",
        f"the top {TOP} heads by the paper's relative change of the answer logit against the top {TOP} by their ratio "
        "to the counterfactual's LD effect (LD = logit(answer) − logit(X_c's answer), which also moves with X_c's "
        f"answer): holds iff they share ≥ {AGREE_HOLDS} heads, does not hold iff ≤ {AGREE_FAILS}; inconclusive in "
        "between (ranks near the cut are within noise) and where effects.csv has no share",
        version=8,
    ),
    Rule(
        "knockout-key-vs-random",
        f"Knocking out the top {K} heads hurts more than {K} random ones",
        "sharp drop by effect rank (Fig. 3)",
        f"holds iff the accuracy with the top {K} heads out lies below every random draw of {K} heads outside the "
        f"top {K} and the key heads (and, where "
        "the file has intervals, its Wilson interval lies below the random draws' 5th percentile — over the problem "
        "clusters where the file counts them, as if each problem's prompts were one trial); does not hold iff it "
        "lies at or above the lowest draw and its interval's lower end at or above the draws' 5th percentile (it "
        "cannot lie below the band); inconclusive in between; the same test against layer-matched random "
        f"draws (as many heads in each layer as the top {K}, outside them and the key heads) where knockout.csv has "
        "them (both must hold; either failing: does not hold), else those are 'not run'",
        version=11,
    ),
    Rule(
        "knockout-random-flat",
        f"Random knockout of {K} heads keeps accuracy within 2 points",
        "within 2% (Fig. 3)",
        f"holds iff the mean accuracy over random draws of {K} heads (outside the top {K} and "
        "the key heads) is within 2 points of "
        "the intact accuracy",
        version=9,
    ),
    Rule(
        "mlps-late",
        "MLPs after the top heads matter more than those before",
        "MLPs 0–16 ≈ ±0%, after 17 ≈ ±10%",
        f"holds iff the mean |logit change| of the MLPs after the median layer of the top {TOP} heads is more than "
        "twice that of the MLPs up to it",
        version=7,
    ),
    Rule(
        "transfer",
        "Key heads transfer to an unseen template family",
        "SVAMP: −66% relative after knockout",
        "holds iff knocking the key heads (found without the held-out family) out lowers the held-out family's "
        "accuracy by ≥ 20% relative and below the mean of as many random heads; inconclusive without key heads",
        version=8,
    ),
    Rule(
        "attention-roles",
        "Key heads read operands or operators more than the other heads",
        "heads 13.11 and 12.22 read the operands, heads 14.2 and 11.8 the operator (Fig. 5)",
        "decided on the heads that carry the effect: the paper's key heads, or where its rule finds none the share "
        "rule's key heads (said so); a head reads a role when its END attention mass on it (first position "
        "excluded, rows renormalised) minus two standard errors lies above the upper end of the 95% interval of "
        "the other heads' 95th percentile (the other heads resampled), and does not when its mass plus two "
        "standard errors lies below the lower end; holds iff at least half of the analysed heads read the "
        "operands or the operator; does not hold iff fewer than half could (counting the inconclusive ones too); "
        "inconclusive otherwise, and without key heads under either rule; measured on the prompts of the operations "
        "that pass identify's control, where the heads were ranked",
        version=7,
    ),
    Rule(
        "stages",
        "Heads collect operands, then MLPs write the answer",
        "start–inflection–end 13-18-28 for both",
        "holds iff the inflection layer of the answer curve is at or after that of the operand curve (App. C), "
        "measured on the prompts of the operations that pass identify's control",
        version=4,
    ),
    Rule(
        "precise-learns-math",
        "Precise SFT improves math",
        "+15 points on average over four math sets (Table 1)",
        "over whole learning-rate grids (claims/curves.py, rule 1): holds iff some rate of precise-key has a math "
        "gain over base on the primary math measure whose interval (over runs and the shared test items, ≥ 3 runs a "
        "point) lies above 0; does not hold iff every rate's interval lies at or below 0; inconclusive otherwise, and "
        "when leaving out any one grid point's runs gives the opposite verdict; collapsed points decide nothing; every "
        "interval the rule reads is at level 1 − 0.05/N for the N intervals it reads over the whole grid "
        "(Bonferroni: a verdict either way is wrong with probability at most 5%), leave-one-rate-out at the same N; "
        "a point collapsed when more than half of its runs did, and every run enters its point's mean and interval, "
        "collapsed or not (at least 3 runs)" + _CUT + _CROSSED,
        version=1,
    ),
    Rule(
        "precise-learns-beyond-format",
        "Precise SFT learns more than the answer format (beyond the paper)",
        "not tested (no few-shot base)",
        "rule 1 of claims/curves.py against base with K solved examples in the prompt (base-shots: the answer format "
        "without the arithmetic) instead of base: holds iff some rate of precise-key gains over base-shots, its "
        "per-item change minus base-shots' item by item, with an interval (over runs and the shared test items, ≥ 3 "
        "runs a point) above 0 on the primary math measure; does not hold iff every rate's lies at or below 0; "
        "inconclusive otherwise, and when leaving out any one grid point's runs gives the opposite verdict; not yet "
        "run without a base-shots record; levels, collapse and runs as in precise-learns-math" + _CUT + _CROSSED,
        version=1,
    ),
    Rule(
        "precise-matches-full",
        "Precise SFT improves math about as much as full SFT",
        "+15 points on average, ≥ full SFT (Table 1)",
        "over whole learning-rate grids (claims/curves.py, rule 2): holds iff some rate of precise-key is, against "
        "every rate of full SFT, at most 5 points below it (interval of precise − full on the primary math "
        "measure over runs and the shared test items, ≥ 3 runs a point: lower end above −5 points); does not "
        "hold iff every precise-key rate lies more than 5 points below some full rate (upper end below −5); "
        "inconclusive otherwise, and when leaving out any one grid point's runs gives the opposite verdict; "
        "collapsed points decide nothing; every interval the rule reads is at level 1 − 0.05/N for the N "
        "intervals it reads over the whole grid (Bonferroni: a verdict either way is wrong with probability at most "
        "5%), leave-one-rate-out at the same N; a point collapsed when more than half of its runs did, and every "
        "run enters its point's mean and interval, collapsed or not (at least 3 runs)" + _CUT + _CROSSED,
        version=13,
    ),
    Rule(
        "selection-matters",
        "The identified heads matter for precise SFT (beyond the paper)",
        "not tested (no random-head arm)",
        "over whole learning-rate grids (claims/curves.py, rule 4): holds iff some rate of precise-key beats every "
        "rate of precise-random (layer-matched random heads, draws and seeds as runs) on the primary math measure "
        "(interval of key − random over runs and the shared test items, ≥ 3 runs a point: above 0); does not "
        "hold iff at every key rate some random rate comes within +5 points (upper end below +5); inconclusive "
        "otherwise, and when leaving out any one grid point's runs gives the opposite verdict; every interval the "
        "rule reads is at level 1 − 0.05/N for the N intervals it reads over the whole grid (Bonferroni: a "
        "verdict either way is wrong with probability at most 5%), leave-one-rate-out at the same N; a point "
        "collapsed when more than half of its runs did, and every run enters its point's mean and interval, "
        "collapsed or not (at least 3 runs)" + _CUT + _CROSSED,
        version=11,
    ),
    Rule(
        "precise-keeps-generic",
        "Full SFT costs generic skill, precise SFT keeps it",
        "MMLU/CSQA: full −5.5/−5.8, precise +0.4/−0.2 (Table 1)",
        "over whole learning-rate grids (claims/curves.py, rule 3), both halves: (a) full SFT costs general skill "
        "at some rate (interval over runs and test items of its primary general change below 0, or a collapsed run "
        "at a rate of ≥ 3 runs; does not iff every rate's lower end is above −5 points) and (b) some "
        "precise-key rate that learns the skill is dominated by no full-SFT rate (dominated: full's math gain and "
        "general change both decidedly above it, intervals of the difference above 0); holds iff both hold, does "
        "not hold iff either does not; inconclusive otherwise, and when leaving out any one grid point's runs gives "
        "the opposite verdict; every interval the rule reads is at level 1 − 0.05/N for the N intervals it reads "
        "over the whole grid (Bonferroni: a verdict either way is wrong with probability at most 5%), "
        "leave-one-rate-out at the same N; a point collapsed when more than half of its runs did, and every run "
        "enters its point's mean and interval, collapsed or not (at least 3 runs); decided on the pooled math "
        "measure (the claim) and, for carry, on addition and subtraction apart (rows beside it)" + _CUT + _CROSSED,
        version=14,
    ),
)
# Beyond the paper: is the key-head set a stable measurement? (arithmech.steps.stability)
RULES += (
    Rule(
        "key-heads-stable",
        "The key heads are the same for independent draws of prompts",
        "one draw, no interval (Fig. 2)",
        "operator counterfactual, largest sample size, key sets (whole bootstrap interval below −5%) of ≥ 3 seeds: "
        "holds iff their mean pairwise Jaccard overlap is ≥ 0.8 and none is below 0.5; does not hold iff the mean "
        "is below 0.5; inconclusive otherwise or when no run finds a key head",
        version=2,
    ),
    Rule(
        "counterfactuals-agree",
        "Operator and operand counterfactuals find the same key heads",
        "operator counterfactual only (§4.1)",
        "same seed and size, key sets of the two counterfactuals: holds iff the mean Jaccard over seeds is ≥ 0.8 "
        "and none is below 0.5; does not hold iff the mean is below 0.5; inconclusive otherwise",
        version=1,
    ),
)
# Controls: not claims of the paper, but conditions without which its claims cannot be read.
RULES += (
    Rule(
        "answer-token-floor",
        "No single answer token covers the task (control)",
        "not reported (the paper's {C} is the answer's first token)",
        "on the kept prompts of each task, the share of the most frequent answer token — the accuracy of always "
        "answering it — has its Wilson interval below 1/3 (holds), above 1/3 (does not hold), else inconclusive",
        version=1,
    ),
    Rule(
        "ablation-removes-information",
        "Mean ablation of every head removes the task (control)",
        "mean ablation over counterfactual data (§4.1)",
        "holds iff, at END, the Wilson interval of the accuracy with every head mean-ablated lies at or below the "
        "upper end of the floor's simultaneous 95% interval — the floor is the higher of the majority floor "
        "(always answering the most frequent answer token; Wilson over the knockout prompts' problem clusters) and "
        "the floor over distinct problems (the draw population's most probable answer token given the operation, "
        "the carried digits and one operand; the control's; task all: the pooled tasks' mixture by their share of "
        "the prompts), every sampled estimate at 1 − 0.05/m for their number m, its interval [the higher lower "
        "end, the higher upper end] — and reaches up to a uniform guess among the task's answer tokens; does not "
        "hold iff it lies entirely above the floor's upper end (removes too little) or entirely below the uniform "
        "guess (over-ablation: more than the task removed); inconclusive where it straddles the floor's upper end; the "
        "ablated interval is over the problem clusters where knockout.csv counts them (as if each problem's prompts "
        "were one trial); inconclusive for a task that fails its control (floor over distinct problems on its X_r "
        f"could be >= {CONTROL_FLOOR}: the 95% interval of some reading over its effective problems reaches it) or "
        f"has fewer than {MIN_PROBLEMS} distinct problems, and with fewer than {MIN_PROBLEMS} problem clusters among "
        "the knockout prompts",
        version=9,
    ),
)
BY_ID = {r.id: r for r in RULES}
ADDED = (
    "key-heads-exist-share",
    "precise-learns-beyond-format",
    "logit-diff-ranking",
    "key-heads-stable",
    "counterfactuals-agree",
    "circuit-faithful",
    "selection-matters",
)
"""Claims this book adds, not the paper's (issue #41): counted apart from the paper's own claims
(:func:`arithmech.report.views.findings.tally`)."""


# ------------------------------------------------------------------ faithfulness (issue #26, item 4)
# Decided by arithmech.methods.faithfulness_rule.faithful_verdict (version 7, issue #41 item 4: bounded and unclipped,
# both directions, across positions, adjusted over the candidates); see its changelog entries for what existed then.
RULES += (
    Rule(
        "circuit-faithful",
        "A small circuit keeps the answer when every other component is ablated and brings "
        "it back when patched into the counterfactual (beyond the paper)",
        "not measured in the paper (it knocks out heads; it does not run the circuit alone)",
        "a per-prompt recovery on evaluation-side prompts, (LD(run) − LD(baseline)) / (LD(X_r) − LD(baseline)), "
        "LD = logit(answer) − logit(X_c's answer), prompts whose own effect is not positive left out and counted; "
        "its mean over the used prompts clipped to [0, 1] and unclipped, each with a cluster-bootstrap interval at "
        "1 − 0.05/11 (Bonferroni over the 11 candidates), in both directions: noising (X_r, every other component "
        "ablated with reference-pool means; baseline: all ablated) and denoising (X_c with the circuit patched in "
        "from X_r; baseline: X_c). Candidates: the top-n components by effect rank at END for n ≤ 10, against ≥ 20 "
        "random circuits of n components outside the top n at END; and the cross-position circuit (the ≤ 5 heads "
        "attending most to the operands, above every head's 95th percentile, at the A, B, operator and END "
        "positions, plus the ≤ 5 first key heads at END; its noising ablates every other head at those positions, "
        "MLPs recomputed: its full effect is, as at END, the effect of the tokens before END, all of which reaches "
        "END through END's heads), against ≥ 20 random circuits of heads of the same layers at the same positions. "
        "A candidate decides only if in both directions at least half of its prompts are used, they ask at "
        "least 20 problem clusters and it has at least 20 random circuits. A deciding candidate is faithful iff in "
        "both directions its clipped interval lies at or above 80% and above the largest of its random circuits, "
        "and its unclipped interval lies at or below 120% (clipping alone cannot make it faithful); it fails iff in "
        "some direction its clipped interval lies entirely below 80% or reaches no higher than its random circuits' "
        "95th percentile, or its unclipped interval lies entirely above 120% (it over-recovers). Holds iff some "
        "candidate is faithful; does not hold iff every candidate, each of them measured, fails; inconclusive "
        "otherwise, or where faithfulness.csv is missing or lacks the unclipped recovery or intervals at the rule's "
        "level",
        version=10,
    ),
)
BY_ID = {r.id: r for r in RULES}
