"""The rules' history reconstructed from git (2026-11-22 to 11-26), first part: what existed when, and identify's rules.

:mod:`arithmech.claims.changelog` joins the parts, oldest first: this module's :data:`IDENTIFY_HISTORY` (the key
heads, few heads, middle layers, the logit-difference ranking, knockout, MLPs, transfer), then
:mod:`arithmech.claims.changelog_git_other_rules` (analyze, Table 1, stability, faithfulness, the controls), then the
entries appended since (:mod:`arithmech.claims.changelog_nov27`, :mod:`arithmech.claims.changelog_recent`). The
strings below say which results existed at a commit (the ``results`` of a :class:`~arithmech.claims.change.Change`);
the other parts read them too. Logged content: never edited, only appended to (in
:mod:`arithmech.claims.changelog_recent`).
"""

from __future__ import annotations

from arithmech.claims.change import Change

# ------------------------------------------------------------------ what existed when (git's own record)
NONE = "no: no result in git yet (the first executed chapters came with 8806093, 2026-11-22 04:31)"
IDENTIFY = (
    "yes: both models' identify runs (executed chapters of 8806093 and the SmolLM2 appendix of 50bb471, "
    "2026-11-22; the introduction's results box of 0b55aca, 2026-11-23 17:10, decided claims on them)"
)
TABLE1 = "yes: SmolLM2's Table 1 records (bf65612, 2026-11-23) and the embedded fine-tunes (8806093)"
ARMS = "yes: the arms runner's Table 1 of the executed book (42d4952, 2026-11-23 19:51)"
ATTN = "yes: the attention roles of both models' executed Analyze chapter (8806093, 50bb471)"
KO = "yes: knockout curves of both models (8806093, 50bb471) and the knockout sanity rows (46b1e47)"
SHARE_NONE = (
    "no: no effects.csv in git had share columns (the first: SmolLM2's K = 2 re-run, f87978a, "
    "2026-11-25 10:54); older results were there, without the share, on which the rule is inconclusive"
)
STAB_NONE = "no: the first stability numbers in git are the hand-off of 1ba0e62 (2026-11-23 18:40)"
CONTROL = (
    "the identify claims are inconclusive where identify's primary task fails its control (its answer is "
    "guessable from what the prompt carries: conditioned floor on its X_r ≥ CONTROL_FLOOR)"
)


IDENTIFY_HISTORY: tuple[Change, ...] = (
    # -- identify: the paper's key heads
    Change(
        "key-heads-exist",
        1,
        "2026-11-23",
        "4cef7ec",
        "written: holds iff at least one head's effect is below "
        "−5% (its bootstrap interval below −5% where effects.csv has intervals); before, the count was only "
        "printed beside few-heads (aa10f33)",
        IDENTIFY,
    ),
    Change(
        "key-heads-exist",
        2,
        "2026-11-23",
        "df2b14d",
        "the bootstrap interval is always required (effects.csv "
        "without intervals is refused instead of decided on the mean)",
        IDENTIFY,
    ),
    Change("key-heads-exist", 3, "2026-11-25", "d13afbe", CONTROL, IDENTIFY),
    Change(
        "key-heads-exist-share",
        1,
        "2026-11-25",
        "3535de0",
        "written with the calibrated measure: holds iff a "
        "head's share interval lies below −5% of the counterfactual's LD effect; inconclusive without share "
        "columns",
        SHARE_NONE,
    ),
    Change("key-heads-exist-share", 2, "2026-11-25", "d13afbe", CONTROL, SHARE_NONE),
    Change(
        "few-heads",
        1,
        "2026-11-22",
        "aa10f33",
        "written (arithmech/smollm.py claims): holds iff the top 10 "
        "heads hold ≥ 50% of all heads' negative logit change",
        NONE,
    ),
    Change("few-heads", 2, "2026-11-25", "d13afbe", CONTROL, IDENTIFY),
    Change(
        "middle-layers",
        1,
        "2026-11-22",
        "aa10f33",
        "written: holds iff the median relative depth of the top 10 heads lies in [0.25, 0.75]",
        NONE,
    ),
    Change("middle-layers", 2, "2026-11-23", "bf65612", "narrowed to the middle third [1/3, 2/3]", IDENTIFY),
    Change(
        "middle-layers",
        3,
        "2026-11-23",
        "f157eb2",
        "the true median (the mean of the two middle depths for an "
        "even count, was the upper one); the claim names the top heads, not key heads",
        IDENTIFY,
    ),
    Change("middle-layers", 4, "2026-11-25", "d13afbe", CONTROL, IDENTIFY),
    Change(
        "logit-diff-ranking",
        1,
        "2026-11-23",
        "4cef7ec",
        "written: holds iff the Spearman correlation between "
        "the per-head relative change and logit difference is ≥ 0.9",
        IDENTIFY,
    ),
    Change("logit-diff-ranking", 2, "2026-11-25", "d13afbe", CONTROL, IDENTIFY),
    Change(
        "logit-diff-ranking",
        3,
        "2026-11-26",
        "41c3966",
        "rewritten because version 1 could not fail: both "
        "measures are means of the same per-prompt change, one divided by the prompt's answer logit (ρ = 1.00). "
        "Now the paper's relative change against the calibrated share of the counterfactual's LD effect, whose "
        "LD also moves with X_c's answer: holds iff their top 10 share ≥ 8 heads, does not hold iff ≤ 5, "
        "inconclusive in between and without share columns",
        IDENTIFY,
    ),
    Change(
        "knockout-key-vs-random",
        1,
        "2026-11-22",
        "aa10f33",
        "written: holds iff the accuracy with the top 8 heads out lies below every random draw of 8",
        NONE,
    ),
    Change(
        "knockout-key-vs-random",
        2,
        "2026-11-23",
        "4cef7ec",
        "where knockout.csv has intervals, holds only if "
        "the Wilson upper bound lies below the random draws' 5th percentile; inconclusive otherwise",
        KO,
    ),
    Change(
        "knockout-key-vs-random",
        3,
        "2026-11-23",
        "769316c",
        "the rule says what the random draws exclude (the top 8 and the key heads)",
        KO,
    ),
    Change("knockout-key-vs-random", 4, "2026-11-25", "d13afbe", CONTROL, KO),
    Change(
        "knockout-random-flat",
        1,
        "2026-11-22",
        "aa10f33",
        "written: holds iff intact − random mean ≤ 2 points",
        NONE,
    ),
    Change(
        "knockout-random-flat",
        2,
        "2026-11-23",
        "52e47a0",
        "the intact accuracy read from the sanity row (nothing knocked out) at END",
        KO,
    ),
    Change(
        "knockout-random-flat",
        3,
        "2026-11-23",
        "f157eb2",
        "|intact − random mean| ≤ 2 points (a random knockout that raises accuracy no longer passes)",
        KO,
    ),
    Change("knockout-random-flat", 4, "2026-11-23", "769316c", "the rule says what the random draws exclude", KO),
    Change("knockout-random-flat", 5, "2026-11-25", "d13afbe", CONTROL, KO),
    Change(
        "mlps-late",
        1,
        "2026-11-22",
        "aa10f33",
        "written: holds iff the MLPs after the median layer of the top "
        "10 heads change the logit more than twice as much as those up to it",
        NONE,
    ),
    Change("mlps-late", 2, "2026-11-23", "f157eb2", "the true median layer; the claim names the top heads", IDENTIFY),
    Change("mlps-late", 3, "2026-11-25", "d13afbe", CONTROL, IDENTIFY),
    Change(
        "transfer",
        1,
        "2026-11-22",
        "aa10f33",
        "written: holds iff knocking the key heads out lowers the held-out "
        "family's accuracy by ≥ 20% relative and below as many random heads",
        NONE,
    ),
    Change(
        "transfer",
        2,
        "2026-11-23",
        "42d4952",
        "inconclusive when the model answers none of the held-out prompts",
        IDENTIFY,
    ),
    Change(
        "transfer",
        3,
        "2026-11-23",
        "769316c",
        "inconclusive without key heads (it was decided on the top 10)",
        IDENTIFY,
    ),
    Change("transfer", 4, "2026-11-25", "d13afbe", CONTROL, IDENTIFY),
)
