"""The rules' history reconstructed from git (2026-11-22 to 11-26), second part: analyze, Table 1, stability,
faithfulness and the controls, the dropped rules, and every rule's digest as of then.

It follows :mod:`arithmech.claims.changelog_git_identify` (whose strings say which results existed) in
:mod:`arithmech.claims.changelog`'s ``CHANGELOG``; the digests of the entries appended since
(:mod:`arithmech.claims.changelog_nov27`, :mod:`arithmech.claims.changelog_recent`) update :data:`GIT_DIGEST` there.
Logged content: never edited.
"""

from __future__ import annotations

from arithmech.claims.change import Change
from arithmech.claims.changelog_git_identify import (
    ARMS,
    ATTN,
    KO,
    NONE,
    STAB_NONE,
    TABLE1,
)

OTHER_HISTORY: tuple[Change, ...] = (
    # -- analyze
    Change(
        "attention-roles",
        1,
        "2026-11-22",
        "aa10f33",
        "written: holds iff at least half of the top 10 heads put most of END's attention on operands or the operator",
        NONE,
    ),
    Change(
        "attention-roles",
        2,
        "2026-11-23",
        "56aec07",
        "against the non-key heads: a head reads a role when its "
        "mass (first position excluded) lies above their 95th percentile by two standard errors; inconclusive "
        "in between",
        ATTN,
    ),
    Change(
        "attention-roles",
        3,
        "2026-11-23",
        "769316c",
        "inconclusive without key heads (it was decided on the top 10)",
        ATTN,
    ),
    Change(
        "stages",
        1,
        "2026-11-22",
        "aa10f33",
        "written: holds iff the answer curve's inflection layer is at or after the operand curve's",
        NONE,
    ),
    # -- fine-tune (Table 1)
    Change(
        "precise-matches-full",
        1,
        "2026-11-22",
        "aa10f33",
        "written: holds iff full SFT's mean math change is positive and precise SFT's at least half of it",
        NONE,
    ),
    Change(
        "precise-matches-full",
        2,
        "2026-11-23",
        "4cef7ec",
        "with intervals: does not hold iff precise's change "
        "interval lies below full's on any math measure; holds iff its mean change is ≥ full's − 5 points",
        TABLE1,
    ),
    Change(
        "precise-matches-full",
        3,
        "2026-11-23",
        "52e47a0",
        "the arms runner's rule 2 where finetune/table1.json "
        "exists: the paired-bootstrap interval of precise-key − full within ±5 points",
        TABLE1,
    ),
    Change(
        "precise-matches-full",
        4,
        "2026-11-25",
        "712c5b3",
        "the arms rule only (the older records' branch dropped), on the suite's primary math measure (the cpu suite's)",
        ARMS,
    ),
    Change(
        "selection-matters",
        1,
        "2026-11-23",
        "52e47a0",
        "written: holds iff the paired-bootstrap interval of "
        "precise-key − precise-random lies above 0; does not hold iff its upper end is below +5 points",
        "no: no run had a random-head arm (the first: the executed book of 42d4952)",
    ),
    Change(
        "precise-keeps-generic",
        1,
        "2026-11-22",
        "aa10f33",
        "written: holds iff full SFT's generic-text loss change lies above 0 and precise's change is below full's",
        NONE,
    ),
    Change(
        "precise-keeps-generic",
        2,
        "2026-11-23",
        "4cef7ec",
        "precise's upper bound below full's lower bound; "
        "does not hold iff precise's change is larger with the intervals apart",
        TABLE1,
    ),
    Change(
        "precise-keeps-generic",
        3,
        "2026-11-23",
        "f157eb2",
        "the arms runner's rule 4 where its files exist: "
        "precise-key − base on the primary general measure, lower end above −5 points",
        TABLE1,
    ),
    Change(
        "precise-keeps-generic",
        4,
        "2026-11-25",
        "712c5b3",
        "rule 4 only; the cpu suite's general measure is the cloze sets whose base interval lies above chance, pooled",
        ARMS,
    ),
    Change(
        "precise-matches-full",
        5,
        "2026-11-26",
        "b62da52",
        "the interval is a hierarchical bootstrap (each arm's seeds and the test items resampled together, "
        "core.stats.hierarchical_bootstrap) instead of the item-only paired bootstrap (issue #26: a rebuild flipped "
        "a verdict)",
        ARMS,
    ),
    Change(
        "selection-matters",
        2,
        "2026-11-26",
        "b62da52",
        "the interval is a hierarchical bootstrap (each arm's seeds and the test items resampled together, "
        "core.stats.hierarchical_bootstrap) instead of the item-only paired bootstrap (issue #26: a rebuild flipped "
        "a verdict)",
        ARMS,
    ),
    Change(
        "precise-keeps-generic",
        5,
        "2026-11-26",
        "b62da52",
        "the interval is a hierarchical bootstrap (each arm's seeds and the test items resampled together, "
        "core.stats.hierarchical_bootstrap) instead of the item-only paired bootstrap (issue #26: a rebuild flipped "
        "a verdict)",
        ARMS,
    ),
    # -- stability (beyond the paper)
    Change(
        "key-heads-stable",
        1,
        "2026-11-23",
        "f5d29e8",
        "written (experiments/stability.py): stable iff the mean "
        "Jaccard of the key sets is ≥ 0.8 and none is below 0.5; unstable iff the mean is below 0.5",
        STAB_NONE,
    ),
    Change(
        "key-heads-stable",
        2,
        "2026-11-23",
        "dce7cde",
        "decided per counterfactual (this claim: the operator counterfactual)",
        STAB_NONE,
    ),
    Change(
        "counterfactuals-agree",
        1,
        "2026-11-23",
        "f5d29e8",
        "written: the two counterfactuals' key sets, same seed and size, mean Jaccard ≥ 0.8 and none below 0.5",
        STAB_NONE,
    ),
    # -- beyond the paper: faithfulness (issue #26, item 4)
    Change(
        "circuit-faithful",
        1,
        "2026-11-26",
        "b6a601a",
        "written: the smallest top-n circuit (n ≤ 10) whose noising "
        "share's interval lies at or above 80% and above the random circuits' 95th percentile",
        "yes: written in methods.faithfulness before any run, but added here after an addition-only smoke run of the "
        "embedded model had been seen (never committed)",
    ),
    Change(
        "circuit-faithful",
        2,
        "2026-11-26",
        "1f66c3a",
        "the claim names what is measured (the answer kept with "
        "every other component ablated at END, a share of the gap to all ablated, not of the counterfactual's "
        "effect); inconclusive where the primary task fails its control; random circuits of n drawn from every "
        "component outside the top n (they were drawn outside the top N, heads only on the embedded model)",
        "yes: the embedded model's first faithfulness run (b6a601a)",
    ),
    Change(
        "circuit-faithful",
        3,
        "2026-11-26",
        "0323e63",
        "inconclusive with fewer than 20 problem clusters among "
        "the evaluation prompts (a percentile bootstrap over a handful of clusters cannot decide)",
        "yes: SmolLM2's first run kept 6 evaluation prompts over 4 clusters (its in-sample identify had ranked on "
        "almost every problem) and came out 'does not hold'",
    ),
    # -- controls
    Change(
        "answer-token-floor",
        1,
        "2026-11-23",
        "52e47a0",
        "written: the most frequent answer token's share has its Wilson interval below 1/3",
        "yes: the answer-token shares of both models (hand-off b8574ee, 18:37)",
    ),
    Change(
        "ablation-removes-information",
        1,
        "2026-11-23",
        "52e47a0",
        "written: every head out reaches down to the majority floor",
        KO,
    ),
    Change(
        "ablation-removes-information",
        2,
        "2026-11-25",
        "d94a0b1",
        "the floor is the higher of the majority and "
        "the conditioned floor; inconclusive for a task that fails its control",
        KO,
    ),
)

DROPPED: tuple[Change, ...] = (
    Change(
        "precise-trains-faster",
        1,
        "2026-11-22",
        "aa10f33",
        "written: holds iff precise SFT trains more samples per second than full SFT",
        NONE,
    ),
    Change(
        "precise-trains-faster",
        2,
        "2026-11-23",
        "4cef7ec",
        "dropped: speed depends on the machine, not on the model (the benchmarks report it)",
        TABLE1,
    ),
)
"""Rules that no longer exist, with their history (their ids are not in ``RULES``)."""

GIT_DIGEST: dict[str, str] = {
    "key-heads-exist": "fd7e0cde4517",
    "key-heads-exist-share": "ff48e234f00c",
    "few-heads": "b2faf1a3d2f5",
    "middle-layers": "0ec9d40a7cd0",
    "logit-diff-ranking": "ad2b44b7144f",
    "knockout-key-vs-random": "4e56bce9f645",
    "knockout-random-flat": "d4d19508fad6",
    "mlps-late": "35ac30ca5969",
    "transfer": "a6b6f831420c",
    "attention-roles": "5b439fdbd530",
    "stages": "c09955693707",
    "precise-matches-full": "5d7c748d7811",
    "selection-matters": "4c0e9adc6e5c",
    "precise-keeps-generic": "6ad85759f86a",
    "key-heads-stable": "da76cbdf4314",
    "counterfactuals-agree": "3d48ceac0d3e",
    "answer-token-floor": "f84680017dce",
    "ablation-removes-information": "f216f4e9ae00",
    "circuit-faithful": "396635782901",
}
"""A fingerprint (:func:`digest`) of each rule's current claim, rule text and decider numbers
(:func:`decider_constants`), as of its latest entry: a rule whose text or thresholds change without a new
entry fails its test. (Recomputed on 2026-11-26 when the numbers joined the fingerprint; no rule changed. On
2026-11-27 ``answer-token-floor``'s decider moved to :mod:`arithmech.claims.controls`, which renames the keys of its
numbers: a move, not a change, so no entry.)"""
