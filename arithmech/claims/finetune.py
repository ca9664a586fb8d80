"""The fine-tuning claims' deciders (Table 1), for :mod:`arithmech.claims.rules`.

Each claim takes the verdict of the arms runner's pre-stated rule (:mod:`arithmech.claims.verdicts`:
hierarchical bootstrap over seeds and test items, ``finetune/table1.json``). Each decider takes a
:class:`~arithmech.claims.evidence.Context` and returns ``(here, holds)``; without an arms run the
claim is missing.
"""
from __future__ import annotations

from arithmech.claims.evidence import Context, Missing
from arithmech.claims.verdicts import verdicts
from arithmech.core import results

ARMS = {"precise-matches-full": "precise matches full", "selection-matters": "the selection matters",
        "precise-keeps-generic": "precise keeps general skills"}


def _arms(ctx: Context, cid: str):
    """The arms runner's verdict for claim ``cid`` (:mod:`arithmech.claims.verdicts`)."""
    if not results.exists(ctx.folder, "finetune/table1.json"):
        raise Missing("no arms run (python -m arithmech arms)")
    v = ctx.memo("verdicts", lambda: verdicts(ctx.folder).set_index("claim")).loc[ARMS[cid]]
    if v.verdict == "not run":
        raise Missing(f"the arms run has no {v.comparison}")
    here = (f"{v.comparison} on {v.measure}: {v.estimate:+.3f} [{v.ci_low:+.3f}, {v.ci_high:+.3f}] "
            "(hierarchical bootstrap over seeds and test items; arms runner)" + (f"; collapsed: {v.collapsed}" if v.get("collapsed") else ""))
    return here, {"holds": True, "does not hold": False}.get(v.verdict)


def selection_matters(ctx: Context):
    return _arms(ctx, "selection-matters")


def precise_matches_full(ctx: Context):
    return _arms(ctx, "precise-matches-full")


def precise_keeps_generic(ctx: Context):
    return _arms(ctx, "precise-keeps-generic")
