"""The rules that score the method against the planted model, written before any run on it decides them.

The planted model (:mod:`arithmech.embedded.planted`) fixes in its weights which heads carry the operands to the last
position: under the paper's first answer token (the last token is not a digit) only the three **movers**
(:data:`arithmech.embedded.planted.MOVERS`) have any effect there; every other head's output at the last position is
the same for two prompts that differ only in their operands and operator (checked on the shipped weights). So each
method that names heads can be *scored*: precision (the share of the heads it names that are movers) and recall (the
share of the movers it names). The composer (0.0) is planted too, but it reads only at operand positions and its
output at the last position is a constant, so no last-position method can or should find it; it is not counted.

A method's found set depends on the problems it was run on, so precision and recall get **95% intervals over problem
clusters** (an operation and an unordered operand pair): each resample draws clusters with replacement, reruns the
method's rule on the drawn prompts (the rule's own interval resamples within them) and scores the set it finds
(:mod:`arithmech.planted.run`).

**Three-way verdicts** (as :mod:`arithmech.accounts.rules`, whose :func:`~arithmech.accounts.rules.side` decides each
interval): a criterion *passes* when every interval it names lies on the pass side of its threshold, *fails* when one
lies wholly on the other side, and is *inconclusive* otherwise; *not testable* when the run holds fewer than
:data:`MIN_CLUSTERS` problem clusters. The rules' text and thresholds are hashed (:func:`rules_sha256`): the results
record the hash they were decided under, and a test checks that this file's first commit precedes theirs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from arithmech.accounts.rules import FAIL, INCONCLUSIVE, NOT_TESTABLE, PASS, side
from arithmech.data.answers import MIN_CLUSTERS

# Thresholds (each used by the criteria below; changing one changes the rules' hash).
RECALL_MIN = 0.6  # a method recovers the movers: recall's whole interval at least this (2 of 3 movers)...
PRECISION_MIN = 0.6  # ... and precision's whole interval at least this (most of what it names is planted)
KNOCKOUT_DROP_MIN = 0.2  # mean-ablating the movers lowers first-answer-token accuracy by at least this (whole interval)
KNOCKOUT_RANDOM_MAX = 0.05  # ... and as many random non-planted heads by at most this (whole interval)
HEAD_DROP_MIN = 0.0  # the per-head knockout names a head when the whole interval of its accuracy drop lies above this


@dataclass(frozen=True)
class Criterion:
    """One scored question: ``id`` (a results key), ``method`` (what is scored), ``text`` (what must hold)."""

    id: str
    method: str
    text: str


_RECOVERS = (
    f"recovers the planted movers: recall's whole 95% cluster interval >= {RECALL_MIN} and precision's whole "
    f"interval >= {PRECISION_MIN}"
)
RECOVERY: tuple[Criterion, ...] = (
    Criterion(
        "identify-paper",
        "identify's key heads, the paper's rule (the whole 95% interval of the relative effect on the answer "
        "logit below identify's threshold)",
        _RECOVERS,
    ),
    Criterion(
        "identify-share",
        "identify's key heads, the share rule (the whole 95% interval of the head's share of the counterfactual's "
        "logit-difference effect below identify's share threshold)",
        _RECOVERS,
    ),
    Criterion(
        "eap",
        "attribution patching (EAP, gradient at X_r) with the paper's rule on its estimated effect",
        _RECOVERS,
    ),
    Criterion(
        "eap-ig",
        "EAP-IG (gradients along the X_r -> X_c path) with the paper's rule on its estimated effect",
        _RECOVERS,
    ),
    Criterion(
        "knockout-heads",
        "the knockout, one head at a time (mean-ablated at the last position): the heads whose accuracy drop's "
        f"whole 95% interval lies above {HEAD_DROP_MIN}",
        _RECOVERS,
    ),
)
KNOCKOUT: tuple[Criterion, ...] = (
    Criterion(
        "knockout-planted",
        "the knockout of the planted movers together",
        f"mean-ablating the movers at the last position lowers first-answer-token accuracy by at least "
        f"{KNOCKOUT_DROP_MIN} (whole 95% cluster interval of the paired drop)",
    ),
    Criterion(
        "knockout-random",
        "the control: as many random non-planted heads (matched size, drawn from the heads outside the planted set)",
        f"mean-ablating them lowers accuracy by at most {KNOCKOUT_RANDOM_MAX} (whole 95% cluster interval of the "
        "paired drop, averaged over the draws)",
    ),
)
CRITERIA = RECOVERY + KNOCKOUT


def rules_record() -> dict:
    """The rules as JSON: every criterion and threshold (what :func:`rules_sha256` hashes)."""
    thresholds = {k: v for k, v in globals().items() if k.isupper() and isinstance(v, (int, float))}
    return {"criteria": [asdict(c) for c in CRITERIA], "thresholds": dict(sorted(thresholds.items()))}


def rules_sha256() -> str:
    """The sha256 of :func:`rules_record`'s canonical JSON: results record it; a changed rule changes it."""
    return hashlib.sha256(json.dumps(rules_record(), sort_keys=True).encode()).hexdigest()


def recovers(score: dict) -> str:
    """A recovery criterion's verdict from a method's ``score`` (``{"clusters", "recall": {value, lo, hi},
    "precision": {value, lo, hi}}``; a precision ``value`` of None: the method named no head)."""
    if score["clusters"] < MIN_CLUSTERS:
        return NOT_TESTABLE
    r, p = score["recall"], score["precision"]
    verdicts = [side((r["value"], r["lo"], r["hi"]), RECALL_MIN, above=True)]
    verdicts.append(FAIL if p["value"] is None else side((p["value"], p["lo"], p["hi"]), PRECISION_MIN, above=True))
    return FAIL if FAIL in verdicts else PASS if all(v == PASS for v in verdicts) else INCONCLUSIVE


def knockout_verdicts(ko: dict) -> dict:
    """The two knockout criteria from ``ko``: ``{"clusters", "drop_planted": (mean, lo, hi), "drop_random": (mean,
    lo, hi)}``."""
    if ko["clusters"] < MIN_CLUSTERS:
        return {"knockout-planted": NOT_TESTABLE, "knockout-random": NOT_TESTABLE}
    return {
        "knockout-planted": side(ko["drop_planted"], KNOCKOUT_DROP_MIN, above=True),
        "knockout-random": side(ko["drop_random"], KNOCKOUT_RANDOM_MAX, above=False),
    }


def decide(numbers: dict) -> dict:
    """Every criterion's verdict: ``numbers`` holds ``"methods"`` (criterion id -> score, as :func:`recovers` reads
    it) and ``"knockout"`` (as :func:`knockout_verdicts` reads it)."""
    out = {c.id: recovers(numbers["methods"][c.id]) for c in RECOVERY}
    return out | knockout_verdicts(numbers["knockout"])


SEEDS_RULE = (
    "across training seeds of the planted model (the same command, --seed): a method recovers the planted movers "
    "across seeds when its criterion passes on every seed scored, fails across seeds when it fails on every seed, "
    "and is mixed otherwise (k of n seeds pass); a seed whose criterion is inconclusive or not testable counts as "
    "not passing; at least 3 seeds, else not testable"
)
"""Written before any seed other than 0 was scored; it adds no threshold, so :func:`rules_sha256` is unchanged."""


def across_seeds(verdicts: list[str]) -> str:
    """The :data:`SEEDS_RULE` verdict of one criterion from its verdict on each seed scored."""
    if len(verdicts) < 3:
        return NOT_TESTABLE
    if all(v == PASS for v in verdicts):
        return PASS
    if all(v == FAIL for v in verdicts):
        return FAIL
    return f"mixed: {sum(v == PASS for v in verdicts)} of {len(verdicts)} seeds pass"
