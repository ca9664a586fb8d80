"""Every rule's history: what changed, when, and whether the results it decides existed then.

A rule of :mod:`arithmech.claims.rules` can only be called *pre-registered* if it was written — and left
alone — before the results it decides existed. This module records, for every rule, each change to what
it decides, reconstructed from git (``git log --follow -p -- arithmech/claims/rules.py`` and the files the
rules lived in before: ``arithmech/experiments/claims.py``, ``arithmech/experiments/stability.py``,
``arithmech/experiments/casestudy.py``, ``arithmech/smollm.py``). A rule's ``version`` in
:data:`~arithmech.claims.rules.RULES` is the number of its entries here, and :data:`DIGEST` holds a
fingerprint of its current text and of the numbers its decider reads, so a rule edited without an entry fails ``tests/unit/claims/test_changelog.py``.

What counts as a change: anything that can move a verdict (a threshold, what is compared, a new
*inconclusive* outcome, which rows are read) or that makes the rule say something else. Moves between
modules, renames of a variable and the way numbers are printed are not changes.

``results`` says whether **the results this rule decides** existed at that commit, and which run: ``yes``
when a file or an executed chapter in git already held them (``results/`` is git-ignored but for SmolLM2's
folder, so the evidence for the embedded model is the executed chapters and the hand-off notes that quote
measured numbers); ``no`` when git holds none yet. A run made on someone's machine and never recorded cannot
be ruled out; ``no`` means "none recorded".

Adding or editing a rule: append an entry to :mod:`arithmech.claims.changelog_recent` (the next version, today's date, the commit that makes the change
— ``"this commit"`` until it has a hash — what changed, and whether results existed), bump the rule's
``version`` and update its :data:`DIGEST` (the failing test prints the new one).
"""
from __future__ import annotations

import hashlib
import json
import types
from typing import Callable, TypeGuard

from arithmech.claims.change import Change
from arithmech.claims.changelog_recent import RECENT, RECENT_DIGEST

# ------------------------------------------------------------------ what existed when (git's own record)
_NONE = "no: no result in git yet (the first executed chapters came with 8806093, 2026-11-22 04:31)"
_IDENTIFY = ("yes: both models' identify runs (executed chapters of 8806093 and the SmolLM2 appendix of 50bb471, "
             "2026-11-22; the introduction's results box of 0b55aca, 2026-11-23 17:10, decided claims on them)")
_TABLE1 = "yes: SmolLM2's Table 1 records (bf65612, 2026-11-23) and the embedded fine-tunes (8806093)"
_ARMS = "yes: the arms runner's Table 1 of the executed book (42d4952, 2026-11-23 19:51)"
_ATTN = "yes: the attention roles of both models' executed Analyze chapter (8806093, 50bb471)"
_KO = "yes: knockout curves of both models (8806093, 50bb471) and the knockout sanity rows (46b1e47)"
_SHARE_NONE = ("no: no effects.csv in git had share columns (the first: SmolLM2's K = 2 re-run, f87978a, "
               "2026-11-25 10:54); older results were there, without the share, on which the rule is inconclusive")
_STAB_NONE = "no: the first stability numbers in git are the hand-off of 1ba0e62 (2026-11-23 18:40)"
_CONTROL = ("the identify claims are inconclusive where identify's primary task fails its control (its answer is "
            "guessable from what the prompt carries: conditioned floor on its X_r ≥ CONTROL_FLOOR)")

_CONTROL2 = ("issue #41: the control is recomputed from prompts.jsonl under version 2 (steps.control): the floor is "
             "the draw population's most probable answer token given the operation, the carried digits and one operand, "
             "counted over the population, X_r's distinct problems and its prompts (the highest decides), instead of "
             "the leave-one-prompt-out conditioned floor, which let a problem's copies in other templates vote for its "
             "own answer; a task with fewer than MIN_PROBLEMS = 20 distinct problems is insufficient (inconclusive, "
             "left out of all); where the control passes one task and the run's all pooled others, the claims are "
             "decided on that task's own rows, and are inconclusive where it passes several")
_S2_RUNS = ("yes: both SmolLM2 identify runs (results/smollm2-135m/, K = 4, and zero-shot/, K = 0) and the science "
            "review's floors by three estimators (shared/science-review.md §2.2)")

CHANGELOG: tuple[Change, ...] = (
    # -- identify: the paper's key heads
    Change("key-heads-exist", 1, "2026-11-23", "4cef7ec", "written: holds iff at least one head's effect is below "
           "−5% (its bootstrap interval below −5% where effects.csv has intervals); before, the count was only "
           "printed beside few-heads (aa10f33)", _IDENTIFY),
    Change("key-heads-exist", 2, "2026-11-23", "df2b14d", "the bootstrap interval is always required (effects.csv "
           "without intervals is refused instead of decided on the mean)", _IDENTIFY),
    Change("key-heads-exist", 3, "2026-11-25", "d13afbe", _CONTROL, _IDENTIFY),
    Change("key-heads-exist-share", 1, "2026-11-25", "3535de0", "written with the calibrated measure: holds iff a "
           "head's share interval lies below −5% of the counterfactual's LD effect; inconclusive without share "
           "columns", _SHARE_NONE),
    Change("key-heads-exist-share", 2, "2026-11-25", "d13afbe", _CONTROL, _SHARE_NONE),
    Change("few-heads", 1, "2026-11-22", "aa10f33", "written (arithmech/smollm.py claims): holds iff the top 10 "
           "heads hold ≥ 50% of all heads' negative logit change", _NONE),
    Change("few-heads", 2, "2026-11-25", "d13afbe", _CONTROL, _IDENTIFY),
    Change("middle-layers", 1, "2026-11-22", "aa10f33", "written: holds iff the median relative depth of the top "
           "10 heads lies in [0.25, 0.75]", _NONE),
    Change("middle-layers", 2, "2026-11-23", "bf65612", "narrowed to the middle third [1/3, 2/3]", _IDENTIFY),
    Change("middle-layers", 3, "2026-11-23", "f157eb2", "the true median (the mean of the two middle depths for an "
           "even count, was the upper one); the claim names the top heads, not key heads", _IDENTIFY),
    Change("middle-layers", 4, "2026-11-25", "d13afbe", _CONTROL, _IDENTIFY),
    Change("logit-diff-ranking", 1, "2026-11-23", "4cef7ec", "written: holds iff the Spearman correlation between "
           "the per-head relative change and logit difference is ≥ 0.9", _IDENTIFY),
    Change("logit-diff-ranking", 2, "2026-11-25", "d13afbe", _CONTROL, _IDENTIFY),
    Change("logit-diff-ranking", 3, "2026-11-26", "41c3966", "rewritten because version 1 could not fail: both "
           "measures are means of the same per-prompt change, one divided by the prompt's answer logit (ρ = 1.00). "
           "Now the paper's relative change against the calibrated share of the counterfactual's LD effect, whose "
           "LD also moves with X_c's answer: holds iff their top 10 share ≥ 8 heads, does not hold iff ≤ 5, "
           "inconclusive in between and without share columns", _IDENTIFY),
    Change("knockout-key-vs-random", 1, "2026-11-22", "aa10f33", "written: holds iff the accuracy with the top 8 "
           "heads out lies below every random draw of 8", _NONE),
    Change("knockout-key-vs-random", 2, "2026-11-23", "4cef7ec", "where knockout.csv has intervals, holds only if "
           "the Wilson upper bound lies below the random draws' 5th percentile; inconclusive otherwise", _KO),
    Change("knockout-key-vs-random", 3, "2026-11-23", "769316c", "the rule says what the random draws exclude "
           "(the top 8 and the key heads)", _KO),
    Change("knockout-key-vs-random", 4, "2026-11-25", "d13afbe", _CONTROL, _KO),
    Change("knockout-random-flat", 1, "2026-11-22", "aa10f33", "written: holds iff intact − random mean ≤ 2 points",
           _NONE),
    Change("knockout-random-flat", 2, "2026-11-23", "52e47a0", "the intact accuracy read from the sanity row "
           "(nothing knocked out) at END", _KO),
    Change("knockout-random-flat", 3, "2026-11-23", "f157eb2", "|intact − random mean| ≤ 2 points (a random "
           "knockout that raises accuracy no longer passes)", _KO),
    Change("knockout-random-flat", 4, "2026-11-23", "769316c", "the rule says what the random draws exclude", _KO),
    Change("knockout-random-flat", 5, "2026-11-25", "d13afbe", _CONTROL, _KO),
    Change("mlps-late", 1, "2026-11-22", "aa10f33", "written: holds iff the MLPs after the median layer of the top "
           "10 heads change the logit more than twice as much as those up to it", _NONE),
    Change("mlps-late", 2, "2026-11-23", "f157eb2", "the true median layer; the claim names the top heads", _IDENTIFY),
    Change("mlps-late", 3, "2026-11-25", "d13afbe", _CONTROL, _IDENTIFY),
    Change("transfer", 1, "2026-11-22", "aa10f33", "written: holds iff knocking the key heads out lowers the held-out "
           "family's accuracy by ≥ 20% relative and below as many random heads", _NONE),
    Change("transfer", 2, "2026-11-23", "42d4952", "inconclusive when the model answers none of the held-out "
           "prompts", _IDENTIFY),
    Change("transfer", 3, "2026-11-23", "769316c", "inconclusive without key heads (it was decided on the top 10)",
           _IDENTIFY),
    Change("transfer", 4, "2026-11-25", "d13afbe", _CONTROL, _IDENTIFY),
    # -- analyze
    Change("attention-roles", 1, "2026-11-22", "aa10f33", "written: holds iff at least half of the top 10 heads "
           "put most of END's attention on operands or the operator", _NONE),
    Change("attention-roles", 2, "2026-11-23", "56aec07", "against the non-key heads: a head reads a role when its "
           "mass (first position excluded) lies above their 95th percentile by two standard errors; inconclusive "
           "in between", _ATTN),
    Change("attention-roles", 3, "2026-11-23", "769316c", "inconclusive without key heads (it was decided on the "
           "top 10)", _ATTN),
    Change("stages", 1, "2026-11-22", "aa10f33", "written: holds iff the answer curve's inflection layer is at or "
           "after the operand curve's", _NONE),
    # -- fine-tune (Table 1)
    Change("precise-matches-full", 1, "2026-11-22", "aa10f33", "written: holds iff full SFT's mean math change is "
           "positive and precise SFT's at least half of it", _NONE),
    Change("precise-matches-full", 2, "2026-11-23", "4cef7ec", "with intervals: does not hold iff precise's change "
           "interval lies below full's on any math measure; holds iff its mean change is ≥ full's − 5 points",
           _TABLE1),
    Change("precise-matches-full", 3, "2026-11-23", "52e47a0", "the arms runner's rule 2 where finetune/table1.json "
           "exists: the paired-bootstrap interval of precise-key − full within ±5 points", _TABLE1),
    Change("precise-matches-full", 4, "2026-11-25", "712c5b3", "the arms rule only (the older records' branch "
           "dropped), on the suite's primary math measure (the cpu suite's)", _ARMS),
    Change("selection-matters", 1, "2026-11-23", "52e47a0", "written: holds iff the paired-bootstrap interval of "
           "precise-key − precise-random lies above 0; does not hold iff its upper end is below +5 points",
           "no: no run had a random-head arm (the first: the executed book of 42d4952)"),
    Change("precise-keeps-generic", 1, "2026-11-22", "aa10f33", "written: holds iff full SFT's generic-text loss "
           "change lies above 0 and precise's change is below full's", _NONE),
    Change("precise-keeps-generic", 2, "2026-11-23", "4cef7ec", "precise's upper bound below full's lower bound; "
           "does not hold iff precise's change is larger with the intervals apart", _TABLE1),
    Change("precise-keeps-generic", 3, "2026-11-23", "f157eb2", "the arms runner's rule 4 where its files exist: "
           "precise-key − base on the primary general measure, lower end above −5 points", _TABLE1),
    Change("precise-keeps-generic", 4, "2026-11-25", "712c5b3", "rule 4 only; the cpu suite's general measure is the "
           "cloze sets whose base interval lies above chance, pooled", _ARMS),
    Change("precise-matches-full", 5, "2026-11-26", "b62da52", "the interval is a hierarchical bootstrap (each arm's seeds and the test items resampled together, core.stats.hierarchical_bootstrap) instead of the item-only paired bootstrap (issue #26: a rebuild flipped a verdict)", _ARMS),
    Change("selection-matters", 2, "2026-11-26", "b62da52", "the interval is a hierarchical bootstrap (each arm's seeds and the test items resampled together, core.stats.hierarchical_bootstrap) instead of the item-only paired bootstrap (issue #26: a rebuild flipped a verdict)", _ARMS),
    Change("precise-keeps-generic", 5, "2026-11-26", "b62da52", "the interval is a hierarchical bootstrap (each arm's seeds and the test items resampled together, core.stats.hierarchical_bootstrap) instead of the item-only paired bootstrap (issue #26: a rebuild flipped a verdict)", _ARMS),
    # -- stability (beyond the paper)
    Change("key-heads-stable", 1, "2026-11-23", "f5d29e8", "written (experiments/stability.py): stable iff the mean "
           "Jaccard of the key sets is ≥ 0.8 and none is below 0.5; unstable iff the mean is below 0.5", _STAB_NONE),
    Change("key-heads-stable", 2, "2026-11-23", "dce7cde", "decided per counterfactual (this claim: the operator "
           "counterfactual)", _STAB_NONE),
    Change("counterfactuals-agree", 1, "2026-11-23", "f5d29e8", "written: the two counterfactuals' key sets, same "
           "seed and size, mean Jaccard ≥ 0.8 and none below 0.5", _STAB_NONE),
    # -- beyond the paper: faithfulness (issue #26, item 4)
    Change("circuit-faithful", 1, "2026-11-26", "b6a601a", "written: the smallest top-n circuit (n ≤ 10) whose noising "
           "share's interval lies at or above 80% and above the random circuits' 95th percentile",
           "yes: written in methods.faithfulness before any run, but added here after an addition-only smoke run of the "
           "embedded model had been seen (never committed)"),
    Change("circuit-faithful", 2, "2026-11-26", "1f66c3a", "the claim names what is measured (the answer kept with "
           "every other component ablated at END, a share of the gap to all ablated, not of the counterfactual's "
           "effect); inconclusive where the primary task fails its control; random circuits of n drawn from every "
           "component outside the top n (they were drawn outside the top N, heads only on the embedded model)",
           "yes: the embedded model's first faithfulness run (b6a601a)"),
    Change("circuit-faithful", 3, "2026-11-26", "0323e63", "inconclusive with fewer than 20 problem clusters among "
           "the evaluation prompts (a percentile bootstrap over a handful of clusters cannot decide)",
           "yes: SmolLM2's first run kept 6 evaluation prompts over 4 clusters (its in-sample identify had ranked on "
           "almost every problem) and came out 'does not hold'"),
    # -- controls
    Change("answer-token-floor", 1, "2026-11-23", "52e47a0", "written: the most frequent answer token's share has "
           "its Wilson interval below 1/3", "yes: the answer-token shares of both models (hand-off b8574ee, 18:37)"),
    Change("ablation-removes-information", 1, "2026-11-23", "52e47a0", "written: every head out reaches down to the "
           "majority floor", _KO),
    Change("ablation-removes-information", 2, "2026-11-25", "d94a0b1", "the floor is the higher of the majority and "
           "the conditioned floor; inconclusive for a task that fails its control", _KO),
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
    Change("attention-roles", 4, "2026-11-27", "4516a33", "issue #41: decided on the share rule's key heads where "
           "the paper's rule finds none (it was inconclusive then, although 6 of SmolLM2's 7 share-key heads read "
           "operands or the operator); each head against the 95% interval of the other heads' 95th percentile (heads "
           "resampled) instead of the point percentile; read from attention_roles.csv (every head's attention), no "
           "longer from attention_baseline.csv and analyze.json's studied heads",
           "yes: SmolLM2's attention_roles.csv and the science review's count (shared/science-review.md §2.3)"),
    Change("key-heads-exist-share", 4, "2026-11-27", "bb1679f", "wording only (issue #41): the share renamed the LD "
           "ratio, whose name does not promise a fraction (one-at-a-time ratios need not add up: SmolLM2's heads sum "
           "to −214 %); no verdict can move", "yes: both SmolLM2 identify runs"),
    Change("logit-diff-ranking", 5, "2026-11-27", "bb1679f", "wording only (issue #41): the calibrated share renamed "
           "the LD ratio; no verdict can move", "yes: both SmolLM2 identify runs"),
    Change("few-heads", 4, "2026-11-27", "bb1679f", "issue #41: scaled to the model — the top 5% of its heads (the "
           "paper's fraction, rounded up: 14 of SmolLM2's 270, 3 of the embedded model's 48) instead of the top 10 "
           "(21% of 48 heads, 3.7% of 270); decided by the relative change and by the LD ratio, each ranked by its "
           "own measure, inconclusive where they disagree; the measure named a concentration of one-at-a-time "
           "changes, not a fraction of the effect",
           "yes: both SmolLM2 runs, and the science review's flip of version 3 (top 14 or the share: holds; §2.3)"),
    Change("selection-matters", 3, "2026-11-27", "4e7d5f4", "wording only (issue #41): no longer filed as a control "
           "(its claim said \"a control\"): it is a claim this book adds, counted with the others apart from the "
           "paper's own; no verdict can move", _ARMS),
    Change("ablation-removes-information", 3, "2026-11-27", "6a12fce", "two-sided: does not hold also where the "
           "interval lies wholly below a uniform guess among the task's answer tokens (over-ablation: more than the task "
           "removed; version 2 could not fail below the floor); the floor is the higher of the majority floor and the "
           "floor over distinct problems (the control, version 2, recomputed from prompts.jsonl); the Wilson interval "
           "over the problem clusters (n_clusters trials) where the file counts them; inconclusive also for a task "
           "with fewer than 20 distinct problems or knockout prompts from fewer than 20 problem clusters", _S2_RUNS),
    Change("knockout-key-vs-random", 6, "2026-11-27", "ee2ae51", "issue #41: the key heads' Wilson interval is "
           "over the problem clusters where knockout.csv counts them (accuracy × n_clusters of n_clusters trials, the "
           "most conservative design effect) instead of over prompts (128 prompts from 25 problems)", _S2_RUNS),
)

DROPPED: tuple[Change, ...] = (
    Change("precise-trains-faster", 1, "2026-11-22", "aa10f33", "written: holds iff precise SFT trains more "
           "samples per second than full SFT", _NONE),
    Change("precise-trains-faster", 2, "2026-11-23", "4cef7ec", "dropped: speed depends on the machine, not on "
           "the model (the benchmarks report it)", _TABLE1),
)
"""Rules that no longer exist, with their history (their ids are not in ``RULES``)."""

DIGEST: dict[str, str] = {
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


def digest(claim: str, rule: str, constants: dict | None = None) -> str:
    """12 hex digits of sha256 over a rule's claim, its rule text and the numbers its decider reads
    (:func:`decider_constants`): changes whenever what it says, or a threshold it decides with, changes."""
    numbers = "" if not constants else "\n" + json.dumps(constants, sort_keys=True)
    return hashlib.sha256(f"{claim}\n{rule}{numbers}".encode()).hexdigest()[:12]


_NUMBER = (int, float)


def _is_number(v) -> TypeGuard[int | float | tuple | frozenset]:
    return (isinstance(v, _NUMBER) and not isinstance(v, bool)) or (
        isinstance(v, (tuple, frozenset)) and bool(v) and all(isinstance(x, _NUMBER) for x in v))


def _codes(code: types.CodeType):
    """``code`` and every code object nested in it (comprehensions, inner functions, lambdas)."""
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def decider_constants(fn: Callable) -> dict[str, float | int | list]:
    """The module-level numbers that decider ``fn`` reads, directly or through the arithmech functions it calls
    (closures included, as :func:`arithmech.claims.rules._controlled` wraps a decider), keyed
    ``module.NAME``: the thresholds a verdict moves with even where the rule's text does not print them
    (e.g. ``arithmech.methods.faithfulness_rule.MIN_CLUSTERS``), and the number literals in their code
    (``share >= 0.5``), keyed ``module.function:literals``. Strings are left out: a message's wording decides
    nothing."""
    out: dict[str, float | int | list] = {}
    seen, todo = set(), [fn]
    while todo:
        f = todo.pop()
        if not isinstance(f, types.FunctionType) or f in seen or not f.__module__.startswith("arithmech"):
            continue
        seen.add(f)
        todo += [c.cell_contents for c in (f.__closure__ or ()) if callable(getattr(c, "cell_contents", None))]
        literals = set()
        for code in _codes(f.__code__):                 # one walk: its number literals, then the names it reads
            literals |= {c for c in code.co_consts if isinstance(c, _NUMBER) and not isinstance(c, bool)}
            for name in code.co_names:
                v = f.__globals__.get(name)
                if _is_number(v):
                    out[f"{f.__module__}.{name}"] = sorted(v) if isinstance(v, frozenset) else \
                        list(v) if isinstance(v, tuple) else v
                elif isinstance(v, types.FunctionType):
                    todo.append(v)
        if literals:
            out[f"{f.__module__}.{f.__qualname__}:literals"] = sorted(literals, key=repr)
    return out


def history(rule_id: str) -> list[Change]:
    """The entries of ``rule_id``, oldest first."""
    return sorted((c for c in CHANGELOG if c.rule == rule_id), key=lambda c: c.version)


def version(rule_id: str) -> int:
    """How many times ``rule_id`` was written or changed (its number of entries)."""
    return len(history(rule_id))


def pre_registered(rule_id: str) -> bool:
    """True iff no version of ``rule_id`` was written after the results it decides existed."""
    h = history(rule_id)
    return bool(h) and not any(c.after_results for c in h)


CHANGELOG += RECENT          # the entries appended since (arithmech.claims.changelog_recent), in time order
DIGEST.update(RECENT_DIGEST)
