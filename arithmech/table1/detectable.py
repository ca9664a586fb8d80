"""How far from a Table 1 rule's bound an observed difference must lie to decide, with the runs the plan gives a
point (what the design can detect).

A rule of :mod:`arithmech.table1.curves` decides a comparison only when its crossed interval (runs × the shared test
items, :func:`arithmech.core.stats.crossed_interval`) at the rule's Bonferroni level ``1 − 0.05/N`` lies on one
side of its bound (0, or the 5-point margin). The interval's **half-width**, projected to the runs a point will
have, is the distance from that bound an *observed* difference needs:

    half-width = √( t²_{Ra−1} · s²_run,a / Ra  +  t²_{Rb−1} · s²_run,b / Rb  +  t²_{I−1} · s²_item / I ),
    each t at 1 − 0.025/N (:func:`arithmech.core.stats.studentized_half_width`)

with, per comparison (each measured on the records, never assumed):

* the compared points: the two arms' frontier tops, the points :func:`arithmech.table1.curves.headline` compares
  (picked on validation scores; one arm against base: its top);
* ``s²_run`` — a compared point's spread of run means (unknown, and the row says so, below two runs; at two runs
  an estimate of one degree of freedom, uncertain by a factor of several: a first reading, re-made as runs arrive);
* ``s²_item`` — the spread over the I shared test items of the per-item difference between the compared points
  (one arm: its top's per-item change from base), read from the runs so far (it still holds their residual
  noise, so at more runs it overstates the item term a little);
* ``Ra``, ``Rb`` — the runs of each compared point: 3 (:data:`arithmech.table1.frontier.MIN_RUNS`, the runs every
  replicated point gets) or 5 for both, or what the design gives each (:func:`design_runs`: a random arm's draws, a
  frontier rate's seeds); ``N`` —
  the rule's :func:`~curves.family` on the grid as it stands.

It is a half-width, not a power calculation: a true difference lying exactly that far from the bound is decided
about half the time, and noise can decide a smaller one. It describes the design (runs, items, grid size) from the
spreads seen so far; it decides nothing and is shown beside the verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from arithmech.core.stats import sample_variance, studentized_half_width
from arithmech.table1 import curves as curve_rules
from arithmech.table1.frontier import MIN_RUNS, Curves, Point, top
from arithmech.table1.grid import RANDOM, grid_of

COMPARISONS: tuple[tuple[str, str, str | None, str], ...] = (
    ("precise SFT learns the skill", "learns", None, "math"),
    ("precise matches full", "matches", "full", "math"),
    ("precise keeps general skills better than full", "keeps", "full", "general"),
    ("the selection matters", "selection", "precise-random", "math"),
    ("the selection matters", "selection", "precise-random-any", "math"),
)
"""``(claim, family name, the arm precise-key is compared with (None: base), measure)`` — one row each."""


def run_variance(p: Point, what: str) -> float | None:
    """The spread (sample variance) of a point's run means on ``what``; None below two runs."""
    xs = p.values(what)
    return sample_variance(xs) if len(xs) >= 2 else None


def _item_means(p: Point, what: str) -> list[float]:
    runs = p.table(what)
    return [sum(col) / len(runs) for col in zip(*runs)]


def half_width(
    c: Curves, family: str, other: str | None, measure: str, runs: int | Callable[[str, float], int] = MIN_RUNS
) -> dict:
    """One comparison's projected half-width (module docstring) with what it is made of; ``half_width`` None where
    a spread is not known yet (an arm without a point of two runs, an arm without runs). ``runs``: the runs each
    compared point is projected to, one number for both or ``runs(arm, lr)`` (:func:`design_runs`: what the design
    gives that point)."""
    per = (lambda p: runs(p.arm, p.lr)) if callable(runs) else (lambda p: runs)
    what = c.math if measure == "math" else "general"
    arms = ["precise-key"] + ([other] if other else [])
    found = [top(c, a, c.math) for a in arms]
    tops = [t for t in found if t is not None]
    n = curve_rules.family(c, family, "precise-key", other or "precise-random")
    row: dict = {
        "measure": c.math if measure == "math" else c.general,
        "N": n,
        "runs a point": runs if isinstance(runs, int) else "",
        "items": None,
        "run sd": None,
        "item sd": None,
        "half_width": None,
        "at": "",
    }
    if len(tops) < len(arms):
        return {**row, "why": f"no run of {', '.join(a for a, t in zip(arms, found) if t is None)}"}
    item = _item_means(tops[0], what)
    if other:
        item = [x - y for x, y in zip(item, _item_means(tops[1], what))]
    n_items = len(item)
    s2_item = sample_variance(item)
    spreads = [run_variance(t, what) for t in tops]
    row.update(
        {
            "items": n_items,
            "item sd": math.sqrt(s2_item),
            "at": " vs ".join(f"{t.arm} {t.lr:.0e} ({t.n} runs)" for t in tops),
            "runs a point": " vs ".join(str(per(t)) for t in tops),
        }
    )
    if any(s is None for s in spreads):
        unknown = [f"{t.arm} {t.lr:.0e}" for t, s in zip(tops, spreads) if s is None]
        verb = "has one run" if len(unknown) == 1 else "have one run each"
        return {**row, "why": f"run spread unknown: {', '.join(unknown)} {verb}"}
    known = [s for s in spreads if s is not None]
    terms = [(s2 / per(t), per(t) - 1) for t, s2 in zip(tops, known)] + [(s2_item / n_items, n_items - 1)]
    hw = studentized_half_width(terms, 1 - 0.05 / n)
    return {**row, "run sd": [math.sqrt(s2) for s2 in known], "half_width": hw, "why": ""}


def table(c: Curves, runs: int | Callable[[str, float], int] = MIN_RUNS) -> pd.DataFrame:
    """One row per comparison of :data:`COMPARISONS` whose arms the plan has: claim, comparison, measure, N, runs a
    point, items, the run spreads and the item spread seen so far, and the projected half-width (None with why)."""
    rows = []
    for claim, family, other, measure in COMPARISONS:
        if other and other not in c.points:
            continue
        comp = f"precise-key − {other or 'base'}"
        rows.append({"claim": claim, "comparison": comp, **half_width(c, family, other, measure, runs)})
    return pd.DataFrame(rows)


def design_runs(plan: dict) -> Callable[[str, float], int]:
    """``runs(arm, lr)``: the runs the design (``table1.json``'s plan) gives an arm's point at a rate — a random
    arm's its ``draws``, a frontier rate's ``frontier_seeds`` (at least the seeds), another rate's seeds, and a rate
    the plan cuts (not in ``replicated``) its one first run."""
    seeds, front = len(plan["seeds"]), max(plan.get("frontier_seeds", 0), len(plan["seeds"]))
    has = lambda rates, lr: any(math.isclose(lr, r, rel_tol=1e-9) for r in rates)

    def runs(arm: str, lr: float) -> int:
        a = plan["arms"][arm]
        if not has((plan.get("replicated") or {}).get(grid_of(arm), a["grid"]), lr):
            return 1
        if arm in RANDOM:
            return plan["draws"]
        return front if has(a.get("frontier_rates") or [], lr) else seeds

    return runs
