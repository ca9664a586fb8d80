"""The rule changes of 2026-11-27 (issues #40 and #41), in time order: what changed, when, and which results existed.

First the issue-#41 block that closed the history reconstructed from git (the control over distinct problems,
version 2, and the two-sided ablation rule), then the entries appended that day. :mod:`arithmech.claims.changelog`
adds :data:`NOV27` to its ``CHANGELOG`` after the reconstructed history
(:mod:`arithmech.claims.changelog_git_identify`, :mod:`arithmech.claims.changelog_git_other_rules`) and before
:mod:`arithmech.claims.changelog_recent`, and :data:`NOV27_DIGEST` to its ``DIGEST``. Logged content: never edited;
new entries go at the end of :mod:`arithmech.claims.changelog_recent`.
"""

from __future__ import annotations

from arithmech.claims.change import Change
from arithmech.claims.changelog_git_identify import ARMS

_CONTROL2 = (
    "issue #41: the control is recomputed from prompts.jsonl under version 2 (steps.control): the floor is "
    "the draw population's most probable answer token given the operation, the carried digits and one operand, "
    "counted over the population, X_r's distinct problems and its prompts (the highest decides), instead of "
    "the leave-one-prompt-out conditioned floor, which let a problem's copies in other templates vote for its "
    "own answer; a task with fewer than MIN_PROBLEMS = 20 distinct problems is insufficient (inconclusive, "
    "left out of all); where the control passes one task and the run's all pooled others, the claims are "
    "decided on that task's own rows, and are inconclusive where it passes several"
)
_S2_RUNS = (
    "yes: both SmolLM2 identify runs (results/smollm2-135m/, K = 4, and zero-shot/, K = 0) and the science "
    "review's floors by three estimators (shared/science-review.md §2.2)"
)


NOV27: tuple[Change, ...] = (
    # -- issue #41: the control over distinct problems (version 2) and the two-sided ablation rule
    Change("key-heads-exist", 4, "2026-11-27", "6a12fce", _CONTROL2, _S2_RUNS),
    Change("key-heads-exist-share", 3, "2026-11-27", "6a12fce", _CONTROL2, _S2_RUNS),
    Change("few-heads", 3, "2026-11-27", "6a12fce", _CONTROL2, _S2_RUNS),
    Change("middle-layers", 5, "2026-11-27", "6a12fce", _CONTROL2, _S2_RUNS),
    Change("logit-diff-ranking", 4, "2026-11-27", "6a12fce", _CONTROL2, _S2_RUNS),
    Change("knockout-key-vs-random", 5, "2026-11-27", "6a12fce", _CONTROL2, _S2_RUNS),
    Change("knockout-random-flat", 6, "2026-11-27", "6a12fce", _CONTROL2, _S2_RUNS),
    Change("mlps-late", 4, "2026-11-27", "6a12fce", _CONTROL2, _S2_RUNS),
    Change("transfer", 5, "2026-11-27", "6a12fce", _CONTROL2, _S2_RUNS),
    Change("circuit-faithful", 4, "2026-11-27", "6a12fce", _CONTROL2, _S2_RUNS),
    Change(
        "attention-roles",
        4,
        "2026-11-27",
        "4516a33",
        "issue #41: decided on the share rule's key heads where "
        "the paper's rule finds none (it was inconclusive then, although 6 of SmolLM2's 7 share-key heads read "
        "operands or the operator); each head against the 95% interval of the other heads' 95th percentile (heads "
        "resampled) instead of the point percentile; read from attention_roles.csv (every head's attention), no "
        "longer from attention_baseline.csv and analyze.json's studied heads",
        "yes: SmolLM2's attention_roles.csv and the science review's count (shared/science-review.md §2.3)",
    ),
    Change(
        "key-heads-exist-share",
        4,
        "2026-11-27",
        "bb1679f",
        "wording only (issue #41): the share renamed the LD "
        "ratio, whose name does not promise a fraction (one-at-a-time ratios need not add up: SmolLM2's heads sum "
        "to −214 %); no verdict can move",
        "yes: both SmolLM2 identify runs",
    ),
    Change(
        "logit-diff-ranking",
        5,
        "2026-11-27",
        "bb1679f",
        "wording only (issue #41): the calibrated share renamed the LD ratio; no verdict can move",
        "yes: both SmolLM2 identify runs",
    ),
    Change(
        "few-heads",
        4,
        "2026-11-27",
        "bb1679f",
        "issue #41: scaled to the model — the top 5% of its heads (the "
        "paper's fraction, rounded up: 14 of SmolLM2's 270, 3 of the embedded model's 48) instead of the top 10 "
        "(21% of 48 heads, 3.7% of 270); decided by the relative change and by the LD ratio, each ranked by its "
        "own measure, inconclusive where they disagree; the measure named a concentration of one-at-a-time "
        "changes, not a fraction of the effect",
        "yes: both SmolLM2 runs, and the science review's flip of version 3 (top 14 or the share: holds; §2.3)",
    ),
    Change(
        "selection-matters",
        3,
        "2026-11-27",
        "4e7d5f4",
        "wording only (issue #41): no longer filed as a control "
        '(its claim said "a control"): it is a claim this book adds, counted with the others apart from the '
        "paper's own; no verdict can move",
        ARMS,
    ),
    Change(
        "ablation-removes-information",
        3,
        "2026-11-27",
        "6a12fce",
        "two-sided: does not hold also where the "
        "interval lies wholly below a uniform guess among the task's answer tokens (over-ablation: more than the task "
        "removed; version 2 could not fail below the floor); the floor is the higher of the majority floor and the "
        "floor over distinct problems (the control, version 2, recomputed from prompts.jsonl); the Wilson interval "
        "over the problem clusters (n_clusters trials) where the file counts them; inconclusive also for a task "
        "with fewer than 20 distinct problems or knockout prompts from fewer than 20 problem clusters",
        _S2_RUNS,
    ),
    Change(
        "knockout-key-vs-random",
        6,
        "2026-11-27",
        "ee2ae51",
        "issue #41: the key heads' Wilson interval is "
        "over the problem clusters where knockout.csv counts them (accuracy × n_clusters of n_clusters trials, the "
        "most conservative design effect) instead of over prompts (128 prompts from 25 problems)",
        _S2_RUNS,
    ),
)
NOV27_DIGEST: dict[str, str] = {}

# -- issue #40 (frontier branch): Table 1 decided over whole learning-rate curves. Appended as its own block, written
# on 2026-11-27 before the first record of the issue-#40 arms runner (precise-share, precise-random-any, base-shots,
# seeds at every rate); the shipped SmolLM2 records it also reads existed and had been read (the review of
# 2026-11-27, §2.1).
_CURVES = (
    "over every rate of each arm's grid (arithmech.claims.curves): each part compares two grid points on "
    "Welch t intervals over run means (≥ 3 runs a point; a point against base: Student t), parts combined with "
    "some/every in three-valued logic; inconclusive when leaving out any one grid point's runs gives the "
    "opposite verdict; collapsed points (interval gate) decide nothing"
)
_SHIPPED = (
    "yes: the shipped SmolLM2 Table 1 records (4 rates per arm, 3 seeds at each chosen rate) and the "
    "review's reading of them (2026-11-27 §2.1); written before any record of the issue-#40 runner"
)
NOV27 += (
    Change(
        "precise-matches-full",
        6,
        "2026-11-27",
        "b8a69c7",
        "decided " + _CURVES + ": holds iff some "
        "precise-key rate is within 5 points of (or above) every full rate; does not hold iff every precise-key "
        "rate is more than 5 points below some full rate (was: one chosen rate per arm, hierarchical bootstrap, "
        "within ±5 points)",
        _SHIPPED,
    ),
    Change(
        "selection-matters",
        4,
        "2026-11-27",
        "b8a69c7",
        "decided " + _CURVES + ": holds iff some precise-key "
        "rate beats every precise-random rate; does not hold iff at every key rate some random rate comes within "
        "+5 points (was: one chosen rate, percentile bootstrap over 3 runs, which undercovers; numbered 4 when merged "
        "after version 3's wording change, which was written later the same day)",
        _SHIPPED,
    ),
    Change(
        "precise-keeps-generic",
        6,
        "2026-11-27",
        "b8a69c7",
        "decided " + _CURVES + "; both halves of the "
        "claim: (a) full SFT costs general skill at some rate, (b) some learning precise-key rate is dominated by "
        "no full rate (was: precise-key − base only, lower end above −5 points, at one chosen rate; full SFT's "
        "cost was never tested)",
        _SHIPPED,
    ),
)
NOV27_DIGEST.update(
    {
        "precise-matches-full": "613c9aea9a49",
        "selection-matters": "b3f9e3ce5763",
        "precise-keeps-generic": "e674d32a4f40",
    }
)


# -- issue #40, second rule version (2026-11-27, new session): written before any precise-arm record of the arms
# runner (its records then: base, base-shots and full SFT at seed 0 on three rates), from the hostile reading's
# findings of the first version.
_MULT = (
    "a part that a 'some' reads (one per precise rate) is decided at level 1 − 0.05/m for its m rates "
    "(Bonferroni), so more grid rates no longer make 'holds somewhere' likelier; a grid point collapsed when more "
    "than half of its runs collapsed (was: any run, which dropped 10-draw random points more often than 3-seed "
    "key points)"
)
_ARMS2 = (
    "yes: the arms runner's base, base-shots and full-SFT seed-0 records (3 rates), no precise record; the "
    "rules read precise-key, so nothing they decide existed"
)
NOV27 += (
    Change("precise-matches-full", 7, "2026-11-27", "fea7d1a", _MULT, _ARMS2),
    Change("selection-matters", 5, "2026-11-27", "fea7d1a", _MULT, _ARMS2),
    Change("precise-keeps-generic", 7, "2026-11-27", "fea7d1a", _MULT, _ARMS2),
)
NOV27_DIGEST.update(
    {
        "precise-matches-full": "67815e3b929d",
        "selection-matters": "a59b4d901770",
        "precise-keeps-generic": "221b40f6a980",
    }
)


# -- issue #41 item 4 (faith branch, 2026-11-27): circuit-faithful on a bounded measure, noising and denoising both,
# with a circuit across positions. Written before any run of the new measure or of the cross-position circuit; the
# END-only ratio-of-means curves of both models existed and had been read (the review of 2026-11-27, §2.5).
NOV27 += (
    Change(
        "circuit-faithful",
        5,
        "2026-11-27",
        "9d56147",
        "decided on a bounded recovery (each prompt's share of its "
        "own effect clipped to [0, 1], prompts with no positive effect left out; mean over prompts, cluster "
        "bootstrap) in both directions: a candidate is faithful iff noising and denoising each lie at or above 80% "
        "and above the 95th percentile of its random circuits; candidates are the END top-n (n ≤ 10) and a "
        "cross-position circuit (operand-reading heads at A, B, operator and END plus the key heads at END) "
        "against layer-matched random circuits at the same positions (was: the noising share alone, a ratio of "
        "means whose interval reached −3.0 on SmolLM2, END only, denoising ignored)",
        "yes: the END-only faithfulness.csv of both models (noising share, its converse, denoising; SmolLM2: "
        "noising −0.37 to −0.11, denoising 0.75–0.86) and the review's reading of them (§2.5); no bounded "
        "recovery and no cross-position circuit had been computed. One clause was made explicit after the embedded "
        "model's first version-5 run (--n-max 6, 11 problem clusters: inconclusive either way): 'every candidate "
        "fails' needs every candidate measured (the top n for each n ≤ 10 and the cross-position circuit)",
    ),
)
NOV27_DIGEST.update({"circuit-faithful": "f0a32dc89929"})


# -- issue #41, the control's version 3 (2026-11-27, second session): the floor decided with its interval.
_CONTROL3 = (
    "issue #41: the control (steps.control, version 3) passes a task only when the upper end of its floor's "
    "95% Wilson interval over the task's distinct problems lies below CONTROL_FLOOR = 0.5; an interval that "
    "reaches it is uncertain and fails (version 2 decided on the point: zero-shot addition passed at 48% "
    "[31%, 65%] over 31 problems)"
)
_S3_RUNS = (
    "yes: both SmolLM2 identify runs, and the previous session's note that zero-shot addition passes by 2 "
    "points without an interval"
)
NOV27 += tuple(
    Change(r, v, "2026-11-27", "0bfa8d9", _CONTROL3, _S3_RUNS)
    for r, v in (
        ("key-heads-exist", 5),
        ("key-heads-exist-share", 5),
        ("few-heads", 5),
        ("middle-layers", 6),
        ("logit-diff-ranking", 6),
        ("knockout-key-vs-random", 7),
        ("knockout-random-flat", 7),
        ("mlps-late", 5),
        ("transfer", 6),
        ("circuit-faithful", 6),
        ("ablation-removes-information", 4),
    )
)
NOV27_DIGEST.update({"ablation-removes-information": "cb9e0cad5776"})


# -- issue #40, third rule version (2026-11-27, after the hostile reading of the second): written while every grid
# point had one run (none could decide), so nothing it decides existed.
_CLEAN = (
    "a grid point is read on its runs that did not collapse (at least 3 of them): a minority of collapsed runs "
    "no longer enters a mean or an interval (with the second version's majority rule, 5 collapsed of 10 random "
    "draws pulled the random arm's mean down and made key − random hold on a synthetic case where the clean "
    "draws gave +1.3 points [−2.9, +5.5]); for full SFT's cost any collapsed run at a point of ≥ 3 runs counts"
)
_ONE_RUN = (
    "yes: the arms runner's seed-0 records (base, base-shots, full, precise-key, precise-share, precise-random "
    "draw 0; one run a point, so no point could decide)"
)
NOV27 += (
    Change("precise-matches-full", 8, "2026-11-27", "fcca4d0", _CLEAN, _ONE_RUN),
    Change("selection-matters", 6, "2026-11-27", "fcca4d0", _CLEAN, _ONE_RUN),
    Change("precise-keeps-generic", 8, "2026-11-27", "fcca4d0", _CLEAN, _ONE_RUN),
)
NOV27_DIGEST.update(
    {
        "precise-matches-full": "49709c9bc6c0",
        "selection-matters": "2ba8aa370592",
        "precise-keeps-generic": "35aadee36f38",
    }
)
