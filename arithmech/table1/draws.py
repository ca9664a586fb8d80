"""Whether Table 1's random-arm comparisons lean on the draws' shared training seeds.

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

import re
from collections.abc import Callable

import pandas as pd

from arithmech.core.stats import one_way_f
from arithmech.table1 import curves, frontier
from arithmech.table1.frontier import Curves, Point

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
        a: [runs_where(p, lambda t: seed_of(t) != seed) for p in ps] if a in curves.RANDOM else ps
        for a, ps in c.points.items()
    }
    return Curves(c.suite, c.math, c.general, c.variants, pts, c.base, c.shots, c.pooled, c.scope)


def seed_table(c: Curves) -> pd.DataFrame:
    """One row per rule × measure that reads a random arm: its verdict over the whole grid, and with each training
    seed's draws left out (one column a seed), decided at the whole grid's number of intervals; ``opposite``: the
    seeds without whose draws the verdict turns into its opposite (empty: the verdict does not rest on one seed)."""
    seeds = sorted({seed_of(t) for a in curves.RANDOM for p in c.points.get(a, []) for t in p.tags})
    rows = []
    for claim, comp, arms, v, fn, size in curves.rules(c):
        if not any(a in curves.RANDOM for a in arms):
            continue
        n = size(c)
        whole = curves.whole_verdict(c, arms, fn, n, claim)
        row = {"claim": claim, "comparison": comp, "measure": v, "whole grid": whole.split(":")[0]}
        flips = []
        for s in seeds:
            d = without_seed(c, s)
            w = curves.whole_verdict(d, arms, fn, n, claim).split(":")[0]
            row[f"without seed {s}'s draws"] = w
            flips += [str(s)] if w == curves.OPPOSITE.get(row["whole grid"]) else []
        row["opposite"] = ", ".join(flips)
        rows.append(row)
    return pd.DataFrame(rows)


def seed_effects(c: Curves) -> pd.DataFrame:
    """One row per random point whose runs span two seeds or more (and outnumber them): arm, rate, runs, seeds, and
    the one-way F of the runs' primary math gains grouped by training seed with its degrees of freedom and p-value."""
    rows = []
    for a in curves.RANDOM:
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
    decided = t[t["whole grid"].isin(list(curves.OPPOSITE))]
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
