"""What Table 1's design can detect, and whether its random-arm verdicts lean on the draws' shared seeds: two
readings shown beside the verdicts, neither a rule.

**Detectable.** How far from a Table 1 rule's bound an observed difference must lie to decide, with the runs the
plan gives a point (what the design can detect).

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

**Draws.** Whether Table 1's random-arm comparisons lean on the draws' shared training seeds.

A random arm's draw ``d`` tunes its own heads and trains with seed ``d mod 3`` (``table1.json``'s rows): draws that
share a seed share its data order and initial noise, while the selection rule's interval over a random point's runs
(:func:`arithmech.core.stats.crossed_interval`) takes them as independent — too narrow where the seed matters. Two
checks, shown beside the verdicts; neither is a rule, neither decides anything:

* :func:`seed_effects` — at every random point, how much of the spread between its runs lies between seeds: the
  one-way F of the runs' math gains grouped by seed, and its p-value (:func:`arithmech.core.stats.one_way_f`).
  A seed effect would show as F well above 1.
* :func:`seed_table` — every rule that reads a random arm re-decided with one seed's draws left out of each random
  point (the other arms untouched), at the whole table's number of intervals (as leave-one-rate-out,
  :func:`arithmech.table1.curves.loro`). Leaving runs out only widens intervals, so this can only turn a *decided*
  verdict undecided or, where that seed's draws carried it, into its opposite: :func:`seed_line` says how many
  verdicts were decided, the only ones that can flip.

Shapes: :class:`~arithmech.table1.frontier.Point` keeps per-run lists aligned with its ``tags``; :func:`runs_where`
keeps the runs a predicate on the tag keeps, in every list at once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pandas as pd

from arithmech.core.stats import one_way_f, sample_variance, studentized_half_width
from arithmech.table1 import curves as curve_rules
from arithmech.table1 import frontier
from arithmech.table1.frontier import MIN_RUNS, Curves, Point, top
from arithmech.table1.plan import RANDOM, grid_of

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


SEED = re.compile(r"-s(\d+)-lr")
"""A run tag's training seed (``precise-random7-s1-lr3e-03`` → 1)."""


def seed_of(tag: str) -> int:
    """The training seed a run tag names."""
    m = SEED.search(tag)
    if not m:
        raise ValueError(f"run tag {tag!r} names no seed (-s<seed>-lr)")
    return int(m.group(1))


def runs_where(p: Point, keep: Callable[[str], bool]) -> Point:
    """``p`` with only the runs whose tag ``keep`` accepts: tags, per-variant gains, general and loss changes,
    collapse flags, validation scores and per-item tables (runs × items) cut alike."""
    idx = [i for i, t in enumerate(p.tags) if keep(t)]

    def pick(xs: list) -> list:
        if len(xs) not in (0, len(p.tags)):  # a per-run list that is neither empty nor one entry a run
            raise ValueError(f"{p.arm} {p.lr:.0e}: a per-run list of {len(xs)} entries for {len(p.tags)} runs")
        return [xs[i] for i in idx] if xs else []

    return Point(
        p.arm,
        p.lr,
        [p.tags[i] for i in idx],
        {k: pick(v) for k, v in p.math.items()},
        pick(p.general),
        pick(p.loss),
        pick(p.collapsed),
        pick(p.val_math),
        {k: pick(v) for k, v in p.items.items()},
        p.cut,
        val_loss=pick(p.val_loss),
        val_items=pick(p.val_items),
    )


def without_seed(c: Curves, seed: int) -> Curves:
    """``c`` with every random arm's runs of training seed ``seed`` left out (the other arms as they are)."""
    pts = {
        a: [runs_where(p, lambda t: seed_of(t) != seed) for p in ps] if a in curve_rules.RANDOM else ps
        for a, ps in c.points.items()
    }
    return Curves(c.suite, c.math, c.general, c.variants, pts, c.base, c.shots, c.pooled, c.scope)


def seed_table(c: Curves) -> pd.DataFrame:
    """One row per rule × measure that reads a random arm: its verdict over the whole grid, and with each training
    seed's draws left out (one column a seed), decided at the whole grid's number of intervals; ``opposite``: the
    seeds without whose draws the verdict turns into its opposite (empty: the verdict does not rest on one seed)."""
    seeds = sorted({seed_of(t) for a in curve_rules.RANDOM for p in c.points.get(a, []) for t in p.tags})
    rows = []
    for claim, comp, arms, v, fn, size in curve_rules.rules(c):
        if not any(a in curve_rules.RANDOM for a in arms):
            continue
        n = size(c)
        whole = curve_rules.whole_verdict(c, arms, fn, n, claim)
        row = {"claim": claim, "comparison": comp, "measure": v, "whole grid": whole.split(":")[0]}
        flips = []
        for s in seeds:
            d = without_seed(c, s)
            w = curve_rules.whole_verdict(d, arms, fn, n, claim).split(":")[0]
            row[f"without seed {s}'s draws"] = w
            flips += [str(s)] if w == curve_rules.OPPOSITE.get(row["whole grid"]) else []
        row["opposite"] = ", ".join(flips)
        rows.append(row)
    return pd.DataFrame(rows)


def seed_effects(c: Curves) -> pd.DataFrame:
    """One row per random point whose runs span two seeds or more (and outnumber them): arm, rate, runs, seeds, and
    the one-way F of the runs' primary math gains grouped by training seed with its degrees of freedom and p-value."""
    rows = []
    for a in curve_rules.RANDOM:
        for p in frontier.grid(c, a):
            by: dict[int, list[float]] = {}
            for t, x in zip(p.tags, p.values(c.math)):
                by.setdefault(seed_of(t), []).append(x)
            if len(by) < 2 or p.n <= len(by):
                continue
            f, d1, d2, pv = one_way_f(list(by.values()))
            rows.append(
                {
                    "arm": a,
                    "rate": f"{p.lr:.0e}",
                    "runs": p.n,
                    "seeds": len(by),
                    "F (seed)": round(f, 2),
                    "df": f"{d1}, {d2}",
                    "p": round(pv, 3),
                }
            )
    return pd.DataFrame(rows)


def seed_line(e: pd.DataFrame, t: pd.DataFrame) -> str:
    """Two sentences on :func:`seed_effects`' ``e`` and :func:`seed_table`'s ``t`` (a page computes them once and shows
    them too): the largest seed effect over the random points, and how many verdicts that read a random arm were
    decided (the only ones one seed's draws could carry) and whether one turns into its opposite without them."""
    if t.empty:
        return "No rule reads a random arm here."
    head = "Random draws share training seeds (draw d trains with seed d mod 3). "
    if not e.empty:
        big = e.loc[e["F (seed)"].idxmax()]
        head += (
            f"Runs grouped by seed at each of the {len(e)} random points: largest F = {big['F (seed)']:.2f} "
            f"({big['df']} df, p = {big['p']:.3f}; {big['arm']} {big['rate']}), {int((e.p < 0.05).sum())} of "
            f"{len(e)} points with p < 0.05 (no correction; {big['seeds']} seeds a point: little power) — a check "
            "of the independence the intervals assume, not a verdict. "
        )
    decided = t[t["whole grid"].isin(list(curve_rules.OPPOSITE))]
    bad = t[t.opposite != ""]
    tail = f"{len(decided)} of the {len(t)} verdicts that read a random arm are decided over the whole grid" + (
        " (undecided ones cannot turn into an opposite: this check has nothing to overturn)" if decided.empty else ""
    )
    if bad.empty:
        return head + tail + ("; none turns into its opposite without one seed's draws." if len(decided) else ".")
    return (
        head
        + tail
        + "; "
        + "; ".join(
            f"{r.comparison} ({r.measure}) turns into its opposite without seed {r.opposite}'s draws"
            for r in bad.itertuples()
        )
        + "."
    )
