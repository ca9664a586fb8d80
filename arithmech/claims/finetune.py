"""The fine-tuning claims' deciders (Table 1), for :mod:`arithmech.claims.rules`.

With the arms runner's files (``finetune/table1.json``) a claim takes the verdict of
:mod:`arithmech.claims.verdicts` (paired bootstrap over test items); with the older Table 1 records
(:func:`arithmech.core.records.table1_frame`, per-arm intervals, no per-item scores) it compares the
intervals of each arm's change against base. Each decider takes a :class:`~arithmech.claims.evidence.Context`
and returns ``(here, holds)``.
"""
from __future__ import annotations

import pandas as pd

from arithmech.claims.evidence import Context, Missing
from arithmech.claims.verdicts import verdicts
from arithmech.core import results
from arithmech.core.records import table1_frame

MATH = ("heldout_phrasings", "two_digit", "addsub", "singleeq", "svamp")


ARMS = {"precise-matches-full": "precise matches full", "selection-matters": "the selection matters",
        "precise-keeps-generic": "precise keeps general skills"}


def _arms(ctx: Context, cid: str):
    """The arms runner's verdict for claim ``cid`` (:mod:`arithmech.claims.verdicts`), or None."""
    if not results.exists(ctx.folder, "finetune/table1.json"):
        return None
    v = ctx.memo("verdicts", lambda: verdicts(ctx.folder).set_index("claim")).loc[ARMS[cid]]
    if v.verdict == "not run":
        raise Missing(f"the arms run has no {v.comparison}")
    here = (f"{v.comparison} on {v.measure}: {v.estimate:+.3f} [{v.ci_low:+.3f}, {v.ci_high:+.3f}] "
            "(paired bootstrap over test items; arms runner)")
    return here, {"holds": True, "does not hold": False}.get(v.verdict)


def selection_matters(ctx: Context):
    got = _arms(ctx, "selection-matters")
    if got is None:
        raise Missing("no random-head arm (python -m arithmech table1-arms)")
    return got


def _table1(ctx: Context) -> pd.DataFrame:
    t = table1_frame(ctx.folder)
    if t.empty or not {"full", "precise"} <= set(t["mode"]):
        raise Missing("no Table 1 results (python -m arithmech table1-arms)")
    return t


def _row(t: pd.DataFrame, mode: str, measure: str):
    d = t[(t["mode"] == mode) & (t.measure == measure)]
    if d.empty:
        raise Missing(f"Table 1 has no {measure} for {mode}")
    return d.iloc[0]


def precise_matches_full(ctx: Context):
    got = _arms(ctx, "precise-matches-full")
    if got is not None:
        return got
    t = _table1(ctx)
    ms = [m for m in MATH if m in set(t.measure)
          and all(pd.notna(_row(t, mode, m)[c]) for mode in ("full", "precise") for c in ("delta_ci_low", "delta_ci_high"))]
    if not ms:
        raise Missing("Table 1 has no math measure with intervals")
    below = [m for m in ms if _row(t, "precise", m).delta_ci_high < _row(t, "full", m).delta_ci_low]
    mean = {mode: sum(_row(t, mode, m).delta for m in ms) / len(ms) for mode in ("full", "precise")}
    here = (f"mean change on {len(ms)} math measures: full {mean['full']:+.1%}, precise {mean['precise']:+.1%}; "
            f"precise's interval below full's on: {', '.join(below) or 'none'}")
    if below:
        return here, False
    return here, (True if mean["precise"] >= mean["full"] - 0.05 else None)


def precise_keeps_generic(ctx: Context):
    got = _arms(ctx, "precise-keeps-generic")
    if got is not None:
        return got
    t = _table1(ctx)
    f, p = _row(t, "full", "lm_loss"), _row(t, "precise", "lm_loss")
    if any(pd.isna(x[c]) for x in (f, p) for c in ("delta", "delta_ci_low", "delta_ci_high")):
        raise Missing("Table 1 has no interval for the generic-text loss")
    here = (f"generic-text loss change: full {f.delta:+.3f} [{f.delta_ci_low:+.3f}, {f.delta_ci_high:+.3f}], "
            f"precise {p.delta:+.3f} [{p.delta_ci_low:+.3f}, {p.delta_ci_high:+.3f}] nats")
    if f.delta_ci_low > 0 and p.delta_ci_high < f.delta_ci_low:
        return here, True
    if p.delta_ci_low > f.delta_ci_high:
        return here, False
    return here, None
