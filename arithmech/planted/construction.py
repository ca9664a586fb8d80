"""Whether the planted construction still holds after each run of the planted model's Table 1.

Table 1's runs keep their scores, not their weights, and tuning trains the construction's fixed entries like any
other. ``results/planted/construction/construction.py`` trains each run again from its record, checks that its test
scores come out item for item as recorded, and measures the construction on it (its README says how); this module
reads what it wrote. No rule decides it: the Planted chapter shows it beside the Table 1 verdicts, since a verdict
about the movers speaks of a *tuned* model's circuit only where the construction still holds (the ``planted-table1``
design).

    >>> c = Construction.made()
    >>> c.runs["precise-key-s0-lr3e-07"]["holds"]
    >>> table(c, t)          # t: the planted model's Table1Result
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from arithmech.core.results import ResultsError
from arithmech.table1 import curves as curve_rules
from arithmech.table1 import frontier
from arithmech.table1.result import Table1Result

CONSTRUCTION = Path(__file__).resolve().parents[2] / "results" / "planted" / "construction"
"""Where the construction check is shipped."""


@dataclass(frozen=True)
class Construction:
    """``construction.json``: ``bounds`` (the largest forbidden attention and non-planted output change under which
    the construction *holds*) and ``runs`` (a run's tag → its arm, rate, seed, draw, ``reproduced``, the fixed
    entries' largest deviation, ``forbidden_attention_max`` per role, ``nonplanted_output_change_max``, ``holds``)."""

    bounds: dict
    runs: dict[str, dict]

    @classmethod
    def made(cls, folder: str | Path = CONSTRUCTION) -> Construction | None:
        """The check in ``folder``, or None where it was not made."""
        path = Path(folder) / "construction.json"
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        return cls(bounds=data["bounds"], runs=data["runs"])


def _checked(c: Construction, t: Table1Result) -> dict[str, dict]:
    """``c``'s runs of ``t``'s plan, refused unless it covers every one (a check made on another grid is no check).
    Records the plan no longer names (a frontier seed of an earlier plan's top) may be in ``c``: no rule reads them,
    and neither does this."""
    missing = sorted(set(t.runs) - set(c.runs))  # t.runs: every run the plan names
    if missing:
        raise ResultsError(
            f"construction.json misses {len(missing)} runs of table1.json ({', '.join(missing[:3])}): run "
            "results/planted/construction/construction.py again"
        )
    return {tag: c.runs[tag] for tag in sorted(t.runs)}


def unread(c: Construction, t: Table1Result) -> list[str]:
    """The checked runs that ``t``'s plan does not name (records of an earlier plan, read by no rule)."""
    return sorted(set(c.runs) - set(_checked(c, t)))


def table(c: Construction, t: Table1Result) -> pd.DataFrame:
    """Per arm and rate: runs, how many reproduce their recorded test scores, how many keep the construction, the
    mean gain on the suite's primary math measure with its 95 % crossed interval over runs and test items (where the
    point has the 3 runs a rule reads and did not collapse; :func:`arithmech.table1.frontier.gain`), the largest
    forbidden attention, the roles (blind, off, composer) that attend to a forbidden token in some run, and the
    largest non-planted output change over the runs."""
    checked = _checked(c, t)
    curves = frontier.curves_of(t)
    points = {(arm, p.lr): p for arm, ps in curves.points.items() for p in ps}
    rows: dict[tuple[str, float], list[dict]] = {}
    for r in checked.values():
        rows.setdefault((r["arm"], r["lr"]), []).append(r)
    out = []
    for (arm, lr), rs in sorted(rows.items(), key=lambda kv: (list(t.plan["arms"]).index(kv[0][0]), kv[0][1])):
        p = points[(arm, lr)]
        lo, hi = frontier.gain(p, curves.math)
        bound = c.bounds["forbidden_attention"]
        roles = sorted({role for r in rs for role, a in r["forbidden_attention_max"].items() if a > bound})
        out.append(
            {
                "arm": arm,
                "rate": f"{lr:.0e}",
                "runs": len(rs),
                "reproduced": sum(r["reproduced"] for r in rs),
                "construction holds": sum(r["holds"] for r in rs),
                f"{curves.math} gain, points": f"{100 * p.mean(curves.math):+.1f}"
                + (f" [{100 * lo:+.1f}, {100 * hi:+.1f}]" if lo is not None and hi is not None else "")
                + (" (collapsed: no interval)" if p.gone else ""),
                "forbidden attention, max": f"{max(max(r['forbidden_attention_max'].values()) for r in rs):.2g}",
                "roles attending where forbidden": ", ".join(roles) or "none",
                "non-planted output change, max": f"{max(r['nonplanted_output_change_max'] for r in rs):.2g}",
            }
        )
    return pd.DataFrame(out)


def best_kept(c: Construction, t: Table1Result) -> dict[str, tuple[frontier.Point, float, float | None, float | None]]:
    """Per arm, its point of largest mean gain (primary math measure) among the rates where every run kept the
    construction: ``(point, mean, lo, hi)``, the interval the 95 % crossed one over runs and test items (None where
    the point decides nothing); arms broken at every rate are left out."""
    runs, curves = _checked(c, t), frontier.curves_of(t)
    out = {}
    for arm, ps in curves.points.items():
        whole = [p for p in ps if all(runs[tag]["holds"] for tag in p.tags)]
        best = max(whole, key=lambda p: p.mean(curves.math), default=None)
        if best is not None:
            out[arm] = (best, best.mean(curves.math), *frontier.gain(best, curves.math))
    return out


def _gain(best: tuple) -> str:
    p, mean, lo, hi = best
    ci = f" [{100 * lo:+.1f}, {100 * hi:+.1f}]" if lo is not None and hi is not None else ""
    return f"{100 * mean:+.1f} points{ci} ({p.lr:.0e}, {p.n} runs)"


def _decided_tops(c: Construction, t: Table1Result) -> list[tuple[int, dict, frontier.Point, int]]:
    """For each verdict the rules decided (holds / does not hold: the curve rules' verdict rows), the frontier top of
    each arm it compares (:func:`arithmech.table1.frontier.top`) and how many of that point's runs keep the
    construction: ``(row number, row, point, kept)``."""
    runs, curves = _checked(c, t), frontier.curves_of(t)
    out = []
    for i, r in enumerate(curve_rules.verdict_rows(curves).to_dict("records")):
        if r["verdict"] in ("holds", "does not hold"):
            for arm in (a for a in str(r["comparison"]).split(" − ") if a in curves.points):
                p = frontier.top(curves, arm, r["measure"])
                if p is not None:
                    out.append((i, r, p, sum(runs[tag]["holds"] for tag in p.tags)))
    return out


def summary(c: Construction, t: Table1Result) -> str:
    """The chapter's opening line on Table 1: per arm the largest gain where the construction held in every run (with
    its 95 % interval), and each decided verdict with how many runs of the point it rests on keep the construction."""
    kept, math = best_kept(c, t), frontier.curves_of(t).math
    gains = "; ".join(f"{arm}{' (the movers)' if arm == 'precise-key' else ''} {_gain(b)}" for arm, b in kept.items())
    decided = [
        f"*{r['claim']}* {r['verdict']} at {p.arm} {p.lr:.0e}, where {k} of {p.n} runs keep it"
        for _, r, p, k in _decided_tops(c, t)
    ]
    return (
        f"**Table 1 on this model** (exploration, {len(t.runs)} runs; its section below): the largest mean gain on "
        f"{math} where every run keeps the construction (a maximum over each arm's rates, picked after the "
        f"fact; that point's 95 % interval over runs and test items): {gains}"
        + (". Decided: " + "; ".join(decided) if decided else "; no verdict decided")
        + "."
    )


def line(c: Construction, t: Table1Result) -> str:
    """How many runs reproduce and keep the construction; per arm, the lowest rate of a run that broke it (and how
    many runs keep it from there on) and the largest mean gain (primary math measure) over the rates where every run
    kept it."""
    runs = _checked(c, t)
    n, same, kept = len(runs), sum(r["reproduced"] for r in runs.values()), sum(r["holds"] for r in runs.values())
    curves, kept_best = frontier.curves_of(t), best_kept(c, t)
    parts = []
    for arm, ps in curves.points.items():
        by_rate = {p.lr: [runs[tag]["holds"] for tag in p.tags] for p in ps}
        broke = min((lr for lr, h in by_rate.items() if not all(h)), default=None)
        after = [h for lr, hs in by_rate.items() if broke is not None and lr >= broke for h in hs]
        best = kept_best.get(arm)
        parts.append(
            f"{arm}: "
            + (
                "kept in every run"
                if broke is None
                else f"broken in every run from {broke:.0e}"
                if not any(after)
                else f"broken from {broke:.0e} on, kept in {sum(after)} of {len(after)} runs there"
            )
            + (f", largest mean gain where every run keeps it {_gain(best)}" if best else ", broken at every rate")
        )
    extra = unread(c, t)
    return (
        f"Trained again from their records, {same} of {n} runs reproduce their test scores item for item. The "
        f"construction holds (forbidden attention at most {c.bounds['forbidden_attention']:g}, non-planted output "
        f"change at most {c.bounds['nonplanted_output_change']:g}) after {kept} of {n} runs. On {curves.math}: "
        + "; ".join(parts)
        + "."
        + (
            f" {len(extra)} records of an earlier plan, which no rule reads, are checked too: {', '.join(extra)}."
            if extra
            else ""
        )
    )


def verdicts_line(c: Construction, t: Table1Result) -> str | None:
    """For each verdict the rules decided (holds / does not hold: the curve rules' verdict rows), the frontier
    top of each arm it compares (:func:`arithmech.table1.frontier.top`), how many of that point's runs keep the
    construction, the command its records were made by, and the rule's verdict with that point's runs left out.
    None where no row is decided."""
    curves = frontier.curves_of(t)
    by_row: dict[int, tuple[dict, list[str]]] = {}  # one entry per decided row, its tops in order
    for i, r, p, k in _decided_tops(c, t):
        made = sorted({t.runs[tag]["command"] for tag in p.tags})
        left = curve_rules.verdict_rows(curves.without(p.arm, p.lr))
        same = left[(left.claim == r["claim"]) & (left.comparison == r["comparison"]) & (left.measure == r["measure"])]
        by_row.setdefault(i, (r, []))[1].append(
            f"{p.arm}'s frontier top at {p.lr:.0e}, where {k} of {p.n} runs keep the construction, its records made by "
            + " and ".join(f"`{m}`" for m in made)
            + (f"; with that point's runs left out the rule reads {same.verdict.iloc[0]}" if len(same) else "")
        )
    out = [f"*{r['claim']}* {r['verdict']} ({r['comparison']}) reads " + "; ".join(tops) for r, tops in by_row.values()]
    return "Each decided verdict, and the runs it rests on: " + " — ".join(out) + "." if out else None
