"""The rule changes of 2026-11-28 up to the seventh session (issues #40 and #41), in time order: each block says what
changed, when, and which results existed (those of 2026-11-27 are in :mod:`arithmech.claims.changelog_nov27`, later
ones in :mod:`arithmech.claims.changelog_recent`). Logged content: never edited; :mod:`arithmech.claims.changelog`
adds :data:`NOV28` to its ``CHANGELOG`` and :data:`NOV28_DIGEST` to its ``DIGEST``.
"""

from __future__ import annotations

from arithmech.claims.change import Change

NOV28: tuple[Change, ...] = ()
NOV28_DIGEST: dict[str, str] = {}


# -- issue #40, fourth rule version (2026-11-28, from the hostile reading of the third): written while every grid point
# still had one run (none could decide), before the runner's second round of seeds and draws.
_FAMILY = (
    "every interval a rule reads is at level 1 − 0.05/N, N the number of intervals it reads over the whole grid "
    "(learns |K|, matches |K|·|F|, keeps |F| + |K| + 2·|K|·|F|, selection |K|·|R|): when all cover, no part is "
    "decided wrongly and the three-valued combination is never wrong, so either verdict is wrong with "
    "probability at most 5% (was: only the parts an outer 'some' reads were adjusted, so 'does not hold', a "
    "union over the inner 'every' parts, was unadjusted); leave-one-rate-out re-decides at the whole grid's N "
    "(was: a smaller N with a point left out, narrowing the other intervals); the frontier tops' interval is "
    "shown at the rule's level (was: 95%, unadjusted); the rule texts no longer say '95%'. Rule 1 of "
    "claims/curves.py (precise SFT learns the skill), which has no claim id, follows the same level; its "
    "second-version adjustment had no line here"
)
_STILL_ONE = (
    "yes: the arms runner's seed-0 records (base, base-shots, full at 3 rates, the four precise arms at 3 "
    "rates each; one run a point, so no point could decide)"
)
NOV28 += (
    Change("precise-matches-full", 9, "2026-11-28", "ea3435f", _FAMILY, _STILL_ONE),
    Change("selection-matters", 7, "2026-11-28", "ea3435f", _FAMILY, _STILL_ONE),
    Change("precise-keeps-generic", 9, "2026-11-28", "ea3435f", _FAMILY, _STILL_ONE),
)
NOV28_DIGEST.update(
    {
        "precise-matches-full": "e5038d3f8018",
        "selection-matters": "6bf8d2b0153a",
        "precise-keeps-generic": "76002d7fc81b",
    }
)


# -- issue #41, the control's version 4 (2026-11-28, third session, B2): each reading of the floor with its effective
# number of problems. Written before its results were computed from the shipped prompts.jsonl files (which existed and
# had been read under version 3).
_CONTROL4 = (
    "issue #41 (B2): the control (steps.control, version 4) reads each of the floor's three counts (the draw "
    "population, X_r's distinct problems, its prompts) with Kish's effective number of the problems it weighs, "
    "(Σw)²/Σw² (the draw probabilities; 1 each; each problem's copies), as the Wilson interval's trials, and "
    "passes a task only when no count's upper end reaches CONTROL_FLOOR = 0.5 (version 3 gave every count X_r's "
    "number of distinct problems as its trials, so a prompt count dominated by a few problems kept many times "
    "was read as that many independent problems; equal weights are unchanged)"
)
_S4_RUNS = (
    "yes: both SmolLM2 identify runs (K = 4 and zero-shot/) and their version-3 controls (K = 4: addition and "
    "subtraction pass; zero-shot: every task fails)"
)
NOV28 += tuple(
    Change(r, v, "2026-11-28", "55c5363", _CONTROL4, _S4_RUNS)
    for r, v in (
        ("key-heads-exist", 6),
        ("key-heads-exist-share", 6),
        ("few-heads", 6),
        ("middle-layers", 7),
        ("logit-diff-ranking", 7),
        ("knockout-key-vs-random", 8),
        ("knockout-random-flat", 8),
        ("mlps-late", 6),
        ("transfer", 7),
        ("circuit-faithful", 7),
        ("ablation-removes-information", 5),
    )
)


# -- issue #41, B3 (2026-11-28, third session): the ablation rule reads the floor as an estimate. Written before it
# was applied to any results file; the SmolLM2 sanity rows existed and had been read (every head out 17% [7%, 36%]
# against a floor of 26%: holds under version 4).
NOV28 += (
    Change(
        "ablation-removes-information",
        6,
        "2026-11-28",
        "55c5363",
        "issue #41 (B3): the floor is compared as "
        "an interval, not a point: the higher of the majority floor (Wilson over the knockout prompts' problem "
        "clusters) and the floor over distinct problems (the control's interval over its effective problems), its "
        "interval [the higher lower end, the higher upper end]; removes too little only where the ablated "
        "interval lies entirely above the floor's upper end, reaches the floor where the two intervals overlap; "
        "over-ablation (entirely below a uniform guess) unchanged (version 5 compared the ablated interval's lower "
        "end with the floor's point)",
        "yes: the SmolLM2 K = 4 and zero-shot knockout sanity rows, read under "
        "version 4 (K = 4: holds; zero-shot: inconclusive, every task fails its control)",
    ),
)
NOV28_DIGEST.update({"ablation-removes-information": "220203b649da"})


# -- issue #41, layer-matched random knockout (2026-11-28, third session): written before any knockout.csv had
# layer-matched rows (identify writes them from this commit on); the SmolLM2 knockout curves existed and had been read.
NOV28 += (
    Change(
        "knockout-key-vs-random",
        9,
        "2026-11-28",
        "e9fcfcd",
        "issue #41: a second random control, head sets "
        "with as many heads in each layer as the top K (outside them and the key heads), decided by the same test as "
        "the unmatched draws; the claim holds only where both hold and does not where either does not; a file "
        "without layer-matched rows is decided on the unmatched draws alone, saying 'not run' (version 8: "
        "unmatched draws from every layer only, though the top 8 sit in layers 14–29 of SmolLM2's 30)",
        "yes: the SmolLM2 K = 4 and zero-shot knockout.csv (no layer-matched rows: 'not run', verdicts unchanged); no "
        "layer-matched row existed anywhere",
    ),
)
NOV28_DIGEST.update({"knockout-key-vs-random": "e52732c230bd"})


# -- issue #41 item 4, the hostile reading of circuit-faithful version 6 (faith2 branch, 2026-11-28): written after
# both models' version-5/6 faithfulness.csv existed and had been read, before any run of this version.
NOV28 += (
    Change(
        "circuit-faithful",
        8,
        "2026-11-28",
        "cc22d91",
        "the gaps of the hostile reading: (A2) the unclipped "
        "mean recovery and the share of used prompts above 1 are written beside the clipped one, and a candidate "
        "is faithful only if its unclipped interval reaches down to 120% or below, fails if it lies entirely above "
        "(was: per-prompt clipping to [0, 1] made an over-recovering circuit look perfectly faithful); (A3) the "
        "≥ 20 problem clusters are counted among the prompts the measure uses, per candidate and direction (was: "
        "among all prompts); (A4) a candidate decides only if at least half of its prompts are used (was: no "
        "gate); (A5) every interval the rule reads is at 1 − 0.05/11, Bonferroni over the 11 candidates, with "
        "≥ 10,000 resamples, for both verdicts (was: 95%, unadjusted); (A6) the cross-position denominator is "
        "stated: the effect of the tokens before END, as at END, with END's MLPs recomputed instead of set to "
        "their means (a baseline column; the step records the two denominators' ratio); (B6) faithful needs the "
        "lower end above the largest of the ≥ 20 random circuits (was: their 95th percentile, interpolated near "
        "the second largest); failing still reads the 95th percentile. A file without these columns is "
        "inconclusive with a re-run hint",
        "yes: the embedded model's and SmolLM2's version-5/6 faithfulness.csv (SmolLM2: does not hold, 0 of 11 "
        "candidates faithful; embedded: --n-max 6, 11 problem clusters, inconclusive) and the hostile review of "
        "version 6 (issue #41 item 4)",
    ),
)
NOV28_DIGEST.update({"circuit-faithful": "a48824895aa0"})


# -- issue #41 item 5 (2026-11-28): one sample per question. Analyze's attention roles and MLP stages were measured on
# the prompts of every operation while the heads they study were ranked on the operations that pass the control
# (SmolLM2 K=4: addition and subtraction; multiplication fails it, division has too few problems).
_POOLED = (
    "measured on identify's prompts of the operations that pass its control (analyze --operations pooled, the "
    "default: the tasks its pooled task holds, where the key heads were ranked; was: every operation, e.g. "
    "SmolLM2's 1,942 prompts of which multiplication and division had failed the control)"
)
_POOLED_RUNS = (
    "yes: both models' analyze files on every operation (SmolLM2: attention-roles holds, 6 of 7 share-rule "
    "heads; stages does not hold, operands 1–19–20, answer 3–8–12)"
)
NOV28 += (
    Change("attention-roles", 5, "2026-11-28", "a1c5fa2", _POOLED, _POOLED_RUNS),
    Change("stages", 2, "2026-11-28", "a1c5fa2", _POOLED, _POOLED_RUNS),
)
NOV28_DIGEST.update({"attention-roles": "05b9d99586fe", "stages": "ed1454a94224"})


# -- issue #41, the hostile reading of circuit-faithful version 8 (2026-11-28, third session): written after
# SmolLM2's version-8 faithfulness.csv existed (does not hold: every candidate fails, below the target) and the
# embedded model's (inconclusive: 11 problem clusters).
NOV28 += (
    Change(
        "circuit-faithful",
        9,
        "2026-11-28",
        "1003075",
        "faithful needs the unclipped interval to lie at or "
        "below 120% (was: reach down to 120%, which an interval covering an over-recovery of 150% does, so clipping "
        "could still make a candidate faithful while every interval covered); a candidate with fewer than 20 random "
        "circuits cannot decide (was: stated, never checked)",
        "yes: both models' version-8 faithfulness.csv; "
        "no candidate of either was faithful or near the unclipped gate, so no verdict moves",
    ),
)
NOV28_DIGEST.update({"circuit-faithful": "4b93b49c41ba"})
NOV28 += (
    Change(
        "ablation-removes-information",
        7,
        "2026-11-28",
        "1003075",
        "holds only where the ablated interval lies "
        "at or below the floor interval's upper end (and reaches up to a uniform guess); an interval straddling that "
        "upper end is inconclusive (was, version 6: holds wherever the two intervals overlapped, so 60% [35%, 80%] "
        "against a floor of 26% [15%, 42%] held; the rule text said 'overlaps')",
        "yes: the SmolLM2 K = 4 sanity "
        "rows (every head out 17% [7%, 36%] against a floor of 26% [15%, 45%]: holds under both versions)",
    ),
)
NOV28_DIGEST.update({"ablation-removes-information": "3f1a8a13c277"})


# -- issue #41 item 5, its hostile reading (2026-11-28, third session): analyze read the control stored at identify
# time (SmolLM2's: version 1), and a folder where every task fails its control still decided its analyze claims.
_POOLED2 = (
    "the operations analyze reads are those that pass identify's control recomputed under its current version "
    "from prompts.jsonl (steps.control.recomputed, as every claim reads it; was: the control stored at identify "
    "time, version 1 for the shipped SmolLM2 run, which pools the same two tasks today but could diverge); "
    "inconclusive where the primary task fails its control (was: decided, and labelled 'the operations that "
    "pass' where every task had failed)"
)
_POOLED2_RUNS = (
    "yes: SmolLM2's analyze files on the pooled operations (addition, subtraction; attention-roles holds, "
    "stages does not hold) and its zero-shot folder, where every task fails"
)
NOV28 += (
    Change("attention-roles", 6, "2026-11-28", "1003075", _POOLED2, _POOLED2_RUNS),
    Change("stages", 3, "2026-11-28", "1003075", _POOLED2, _POOLED2_RUNS),
)
NOV28_DIGEST.update({"attention-roles": "67c5dd833a0e", "stages": "f60ad9c9cf30"})


# -- issue #40, fifth rule version (2026-11-28, fourth session): from the hostile reading of the fourth version; written
# while every grid point of the arms runner still had one run (no part of any rule could decide).
_ITT = (
    "a grid point's mean and intervals read every run, collapsed or not (was, third version: only the runs that did "
    "not collapse, so a point's mean was its survivors' and a full-SFT point whose collapsed runs counted as a cost "
    "could dominate a precise point on its survivors' means); rule 3a's text names what the code counts (a collapsed "
    "run at a point of at least 3 runs; it said 'a collapsed rate'); every rule function's default N is its family"
)
_ONE_RUN = (
    "yes: the arms runner's 32 records, one run at every grid point (seed 0, draw 0), so no point could decide "
    "and every rule was inconclusive under both versions"
)
NOV28 += (
    Change("precise-matches-full", 10, "2026-11-28", "6328667", _ITT, _ONE_RUN),
    Change("selection-matters", 8, "2026-11-28", "6328667", _ITT, _ONE_RUN),
    Change("precise-keeps-generic", 10, "2026-11-28", "6328667", _ITT, _ONE_RUN),
)
NOV28_DIGEST.update(
    {
        "precise-matches-full": "374b804d9542",
        "selection-matters": "f02377362f14",
        "precise-keeps-generic": "68e546cbc2a9",
    }
)


# -- issue #41, the hostile reading's findings 15, 16 and 18 (2026-11-28, fourth session): the control's version 5 and
# the ablation floor's simultaneous interval. Written after both SmolLM2 identify runs' files existed and had been read
# under the control's version 4 and ablation-removes-information version 7.
_CONTROL5 = (
    "issue #41 (hostile reading 15, 16): the control (steps.control, version 5) reads the floor's population "
    "count as exact (the draw population is enumerated: a point, was a Wilson interval) and gives every grouping "
    "of its two sampled counts (X_r's distinct problems, its prompts: 6 estimates) a Wilson interval at 1 − 0.05/6, "
    "so [the highest lower end, the highest upper end] is a 95% interval of the floor, their maximum (version 4: "
    "each count's highest grouping at 95%, which is not); a task passes only when no upper end reaches 0.5"
)
_ABLATION8 = (
    "the floor's interval is simultaneous: the majority row and every sampled grouping of each task's floor at "
    "1 − 0.05/m for their number m (was: each at 95%, read as [the highest lower end, the highest upper end]); "
    "task all's floor over distinct problems is the pooled tasks' mixture weighted by their share of the all "
    "knockout prompts (was: the highest task's floor, 42% for SmolLM2 K = 4 against a mixture of about 23%)"
)
_S5_RUNS = (
    "yes: both SmolLM2 identify runs (K = 4 and zero-shot/) and their version-4 controls (K = 4: addition and "
    "subtraction pass; zero-shot: every task fails), the K = 4 sanity rows (every head out 17% [7%, 36%]: holds)"
)
NOV28 += tuple(
    Change(r, v, "2026-11-28", "73aa552", _CONTROL5, _S5_RUNS)
    for r, v in (
        ("key-heads-exist", 7),
        ("key-heads-exist-share", 7),
        ("few-heads", 7),
        ("middle-layers", 8),
        ("logit-diff-ranking", 8),
        ("knockout-key-vs-random", 10),
        ("knockout-random-flat", 9),
        ("mlps-late", 7),
        ("transfer", 8),
        ("circuit-faithful", 10),
    )
)
_STALE = (
    "; analyze's claims are inconclusive where analyze ran on other operations than the control, recomputed under "
    "its current version, now pools (was: decided on the operations recorded at analyze time)"
)
NOV28 += tuple(
    Change(r, v, "2026-11-28", "73aa552", _CONTROL5 + _STALE, _S5_RUNS)
    for r, v in (
        ("attention-roles", 7),
        ("stages", 4),
    )
)
NOV28 += (Change("ablation-removes-information", 8, "2026-11-28", "73aa552", _CONTROL5 + "; " + _ABLATION8, _S5_RUNS),)
NOV28_DIGEST.update({"knockout-key-vs-random": "f250c1ddf3ac", "ablation-removes-information": "48c7695375dd"})


# -- issue #41, the hostile reading's finding 19 (2026-11-28, fifth session): "does not hold" read on a point. Committed
# 40 s before the SmolLM2 addition-alone identify run (results/smollm2-135m/addition/, in progress since 07:09 and
# resumed from its checkpoint) wrote its files; version 11 moves a verdict only between "does not hold" and
# inconclusive, and that run's verdict (holds) is the same under version 10.
_KNOCK11 = (
    "issue #41 (hostile reading 19): does not hold needs the top k's interval, not its point: the top k at or "
    "above the lowest random draw does not hold only where its interval's lower end lies at or above the "
    "draws' 5th percentile (it cannot lie below the band), inconclusive in between (version 10: does not hold "
    "whenever the point is at or above the lowest draw); the same for the layer-matched draws"
)
_S6_RUNS = (
    "yes: the SmolLM2 K = 4 folder (no head curve for its decided task: not measured) and zero-shot/ (below "
    "the lowest draw, inconclusive under its control): verdicts unchanged; the embedded model's knockout is "
    "made by the book build"
)
NOV28 += (Change("knockout-key-vs-random", 11, "2026-11-28", "99606e0", _KNOCK11, _S6_RUNS),)
NOV28_DIGEST.update({"knockout-key-vs-random": "e765ed334c96"})


# -- issue #40 item 6 (2026-11-28, fifth session): the grid-point cut. Written while no grid point had 3 runs (no
# part of any Table 1 rule could decide), after a hostile reading of the cut (c52a4b8) found that its end rates, kept
# below 3 runs for good, would leave every "every" over their arm undecided.
_CUT6 = (
    "issue #40 item 6: a rate the plan cuts (--no-replicate-ends: table1.json's replicated lacks it; "
    "steps.arms_grid.replicated) is outside the grid the rule reads and outside N (version 5: every grid point, "
    "so a cut end, below 3 runs for good, left every 'every' over its arm undecided)"
)
_NO3 = "no: no grid point had 3 runs (SmolLM2: 47 runs over 30 points), so every verdict was and is inconclusive"
NOV28 += (
    Change("precise-matches-full", 11, "2026-11-28", "cb24b15", _CUT6, _NO3),
    Change("selection-matters", 9, "2026-11-28", "cb24b15", _CUT6, _NO3),
    Change("precise-keeps-generic", 11, "2026-11-28", "cb24b15", _CUT6, _NO3),
)
NOV28_DIGEST.update(
    {
        "precise-matches-full": "ef093da5fcfe",
        "selection-matters": "cd3591379a3a",
        "precise-keeps-generic": "8b1cfb30881a",
    }
)


# -- issue #40 item 3 (2026-11-28, sixth session): intervals that see the test set. Written while no grid point had
# 3 runs (SmolLM2: 50 runs, none of its 20 readable points at 3), so no part of any Table 1 rule could decide.
_CROSSED7 = (
    "issue #40 item 3: every interval is crossed, over runs and the shared test items (core.stats."
    "crossed_interval: run means' spread plus the per-item change's spread, Welch–Satterthwaite df); "
    "version 6 read Student t (a point) and Welch t (two points) over run means, which see the training "
    "spread only: 3 runs scoring alike gave an interval of width zero; against base-shots the reference is "
    "subtracted item by item (was: one number)"
)
_NO3_7 = (
    "no: no grid point had 3 runs (SmolLM2: 50 runs over 30 points), so every verdict was and is "
    "inconclusive; the toy (made by the book build) is re-read in the closing note"
)
NOV28 += (
    Change("precise-matches-full", 12, "2026-11-28", "80b2f80", _CROSSED7, _NO3_7),
    Change("selection-matters", 10, "2026-11-28", "80b2f80", _CROSSED7, _NO3_7),
    Change("precise-keeps-generic", 12, "2026-11-28", "80b2f80", _CROSSED7, _NO3_7),
)
NOV28_DIGEST.update(
    {
        "precise-matches-full": "74bf34aa55e8",
        "selection-matters": "2af6e1992055",
        "precise-keeps-generic": "b6891bf2c9e4",
    }
)


# -- #41's left item (2026-11-28, sixth session): the simultaneous-interval quantile written out in the floor control
# (steps/control) and here moved to core.stats.bonferroni_z; the digest follows the numbers a decider reads, so it
# moved with the literal. The same quantile, the same verdicts (claims and controls tests unchanged).
_BONF9 = (
    "no change of what is decided: the floor's simultaneous quantile z_{1 − 0.025/m} is core.stats.bonferroni_z "
    "(the control step and this rule each wrote it out)"
)
NOV28 += (Change("ablation-removes-information", 9, "2026-11-28", "8fd0614", _BONF9, "no: the same numbers"),)
NOV28_DIGEST.update({"ablation-removes-information": "52ba56ad15ac"})


# -- issue #40 item 3, a hostile reading of the seventh version (2026-11-28, sixth session): written while SmolLM2's
# only points with 3 runs were full SFT's four interior rates (58 runs) and every verdict was inconclusive.
_CROSSED8 = (
    "issue #40 item 3 (hostile reading of version 7): each term of the crossed interval (each side's run means, the "
    "items) studentized by its own degrees of freedom and added in quadrature (core.stats.studentized_half_width); "
    "version 7 put one Welch–Satterthwaite t on the summed variance, which at 3 runs and 1 − 0.05/40 missed "
    "3 to 14 times as often as the level says where the run spread is most of the error; a side needs two runs"
)
_ONLY_FULL3 = (
    "no: SmolLM2's only points with 3 runs were full SFT's (58 runs; none of precise-key's), so every verdict was and "
    "is inconclusive; the toy's verdicts read 'not testable' (its scope) under versions 6, 7 and 8"
)
NOV28 += (
    Change("precise-matches-full", 13, "2026-11-28", "650a9ca", _CROSSED8, _ONLY_FULL3),
    Change("selection-matters", 11, "2026-11-28", "650a9ca", _CROSSED8, _ONLY_FULL3),
    Change("precise-keeps-generic", 13, "2026-11-28", "650a9ca", _CROSSED8, _ONLY_FULL3),
)
NOV28_DIGEST.update(
    {
        "precise-matches-full": "1ef9fad4c071",
        "selection-matters": "8a789c77f177",
        "precise-keeps-generic": "a57c4311be1f",
    }
)
