"""The planted model's Table 1 design, as a rule set logged in the changelog (``planted-table1``) ahead of its run.

The verdicts are the Fine-tune chapter's rules (:mod:`arithmech.table1.claims`, logged there) read on the ``planted``
suite; what this rule set fixes is everything those rules leave to the suite and the run: the items, the chance
levels, the step budget, the random arms' draws, and what a verdict means once a fine-tune may have moved the planted
weights. :func:`rules_sha256` hashes :data:`DESIGN` together with the numbers it names (the clusters of each side, the
phrasings, the budget rule), so changing any of them without a new changelog entry fails
``tests/unit/claims/test_changelog.py``.
"""

from __future__ import annotations

import hashlib
import json

from arithmech.data import planted_items
from arithmech.table1.plan import GRIDS
from arithmech.table1.train import BEND_RULE

MAX_EXTEND = 6
"""Grid extensions per grid until bracketed (``table1 --max-extend``; version 5)."""

CURVE_COMMAND = "python -m arithmech table1 --model planted --suite planted --top-k 3 --curve-only --curve-steps 1280"
"""The learning curve that sets the budget (full SFT at the middle of full's grid, 3e-7; about 4 minutes on 2 cores)."""

DESIGN = (
    "suite planted (arithmech.data.planted_items): the new skill is the 12 held-out phrasings of the four operations "
    "on App. A operands, retention is Fig. 8 on the same operands; a problem "
    "is a cluster (operation, unordered operand pair) and the 158 App. A clusters go one in three per operation, by "
    "a seeded hash, to train / validation / test (53 / 53 / 52), a pair and its mirror always on one side; every "
    "validation and test cluster is asked once a measure (a seeded phrasing, a seeded order), so every interval the "
    "rules draw over items is an interval over problem clusters, and a side under 20 clusters is refused by the test "
    "suite; the fine-tune's stream (the new phrasings and the Fig. 8 replay, alternately) draws train clusters only, "
    "so no retention problem is ever trained (a test intersects them: empty); each measure's chance is its side's "
    "per-operation majority share, computed from the items (every phrasing names its operation, so an operand-blind "
    "model that reads it writes its operation's most frequent answer: the share of items that answer gets within "
    "each operation, weighted by the operation's items; version 2, was the side's majority-answer share); the step "
    "budget is the learning curve's bend ("
    + BEND_RULE
    + "), read from `"
    + CURVE_COMMAND
    + "` and passed to the run as --steps; the random arms draw distinct head sets and stop at the number the draw "
    "rule can make (arithmech.table1.plan.distinct_draws: layer-matched to key heads 2.0-2.2 that is 6); the "
    "verdicts are the Fine-tune chapter's rules, unchanged. The construction is in the weights only: Table 1's "
    "fine-tunes train the fixed entries like any other, and tuning can break it (measured, 320 steps at the grids' "
    "top rates: full SFT, precise SFT of the movers and of layer-matched blind heads leave a blind or off head "
    "attending to slot tokens), so every tuned run's forbidden attention and non-planted output change are measured "
    "beside its scores, and a verdict about the key heads is a verdict about tuning the *base* model's movers; it "
    "speaks of a tuned model's circuit only for runs whose construction still holds (forbidden attention <= 1e-12, "
    "non-planted output change <= 1e-5). Version 4, the grids: full SFT's grid is 1e-7, 3e-7, 1e-6 and the precise "
    "arms' grid 3e-7, 1e-6, 3e-6 (one grid step higher, as every suite's), each bracketed on its own arm's validation "
    "gains and extended by the grid's ratio (arithmech.table1.plan.bracket_side, --max-extend); full's three rates are "
    "the three candidates of the exploration's second sweep (results/planted/exploration/, rates chosen after a "
    "diagnosis that read the validation clusters), so the validation clusters are spent on choosing rates and serve "
    "only the bracketing and the budget; the verdicts read the 52 test clusters, which no exploration scored; the "
    "training seeds, draws and frontier seeds are the table1 command's defaults (seeds 0, 1, 2; 10 draws, "
    "layer-matched capped at the sets the draw rule can make; 5 frontier seeds); every run counts as it scored. "
    "Version 5, the cap on extensions: up to 6 per grid (--max-extend 6; was the command's default, 3), so that the "
    "precise grid can reach 3e-3 (9e-6, 3e-5, 1e-4, 3e-4, 9e-4, 3e-3 above 3e-6), a grid step below 1e-2, where the "
    "exploration's 320-step check saw precise SFT of the movers break the construction. Version 6, text only: a record "
    "an earlier plan named and a later plan does not (version 4's extra seeds at its precise frontier top, 1e-4: "
    "precise-key and precise-share seeds 3 and 4) stays in the folder, and no rule reads it. Version 7, text only: "
    "version 5's entry corrected (see the changelog)"
)


def rules_record() -> dict:
    """What the digest covers: :data:`DESIGN` and the numbers it names."""
    return {
        "design": DESIGN,
        "bend_rule": BEND_RULE,
        "curve_command": CURVE_COMMAND,
        "phrasings": [t.id for t in planted_items.PHRASINGS],
        "sides": {s: [list(c) for c in cl] for s, cl in planted_items.sides().items()},
        "min_clusters": planted_items.MIN_CLUSTERS,
        "grids": {arm: list(rates) for arm, rates in GRIDS["planted"].items()},
        "max_extend": MAX_EXTEND,
    }


def rules_sha256() -> str:
    """The sha256 of :func:`rules_record`'s canonical JSON (the changelog's ``planted-table1`` digest)."""
    return hashlib.sha256(json.dumps(rules_record(), sort_keys=True).encode()).hexdigest()
