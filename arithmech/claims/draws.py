"""Whether Table 1's selection verdicts survive the random arms' shared training seeds.

A random arm's draw ``d`` tunes its own heads and trains with seed ``d mod 3`` (``table1.json``'s rows): the draws
that share a seed share its data order and initial noise, while the selection rule's interval over a random point's
runs (:func:`arithmech.core.stats.crossed_interval`) takes them as independent. Where the seed mattered, the draws
of one seed would lean one way together. The check: re-decide every rule that reads a random arm with **one seed's
draws left out** of each random point (the other arms untouched), at the whole table's number of intervals (as the
leave-one-rate-out check, :func:`arithmech.claims.curves.loro`) — a verdict that turns into its opposite without one
seed's draws rests on that seed. It is a check shown beside the verdicts, not a rule: it decides nothing itself.

Shapes: :class:`~arithmech.claims.frontier.Point` keeps per-run lists aligned with its ``tags``; :func:`runs_where`
keeps the runs a predicate on the tag keeps, in every list at once.
"""

from __future__ import annotations

import re
from typing import Callable

import pandas as pd

from arithmech.claims import curves as C
from arithmech.claims.frontier import Curves, Point

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
    pick = lambda xs: [xs[i] for i in idx] if len(xs) == len(p.tags) else list(xs)
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
    )


def without_seed(c: Curves, seed: int) -> Curves:
    """``c`` with every random arm's runs of training seed ``seed`` left out (the other arms as they are)."""
    pts = {
        a: [runs_where(p, lambda t: seed_of(t) != seed) for p in ps] if a in C.RANDOM else ps
        for a, ps in c.points.items()
    }
    return Curves(c.suite, c.math, c.general, c.variants, pts, c.base, c.shots, c.pooled, c.scope)


def seed_table(c: Curves) -> pd.DataFrame:
    """One row per rule × measure that reads a random arm: its verdict over the whole grid, and with each training
    seed's draws left out (one column a seed), decided at the whole grid's number of intervals; ``opposite``: the
    seeds without whose draws the verdict turns into its opposite (empty: the verdict does not rest on one seed)."""
    seeds = sorted({seed_of(t) for a in C.RANDOM for p in c.points.get(a, []) for t in p.tags})
    rows = []
    for claim, comp, arms, v, fn, size in C.rules(c):
        if not any(a in C.RANDOM for a in arms):
            continue
        n = size(c)
        whole = C._gate(c, arms, claim) or C.WORD[fn(c, n)]
        row = {"claim": claim, "comparison": comp, "measure": v, "whole grid": whole.split(":")[0]}
        flips = []
        for s in seeds:
            d = without_seed(c, s)
            w = (C._gate(d, arms, claim) or C.WORD[fn(d, n)]).split(":")[0]
            row[f"without seed {s}'s draws"] = w
            flips += [str(s)] if w == C.OPPOSITE.get(row["whole grid"]) else []
        row["opposite"] = ", ".join(flips)
        rows.append(row)
    return pd.DataFrame(rows)


def seed_line(c: Curves) -> str:
    """One sentence on the table: how many of its verdicts turn into their opposite without one seed's draws."""
    t = seed_table(c)
    if t.empty:
        return "No rule reads a random arm here."
    bad = t[t.opposite != ""]
    head = (
        f"Random draws share training seeds (draw d trains with seed d mod 3): with one seed's draws left out of "
        f"every random point, {len(t) - len(bad)} of the {len(t)} verdicts that read a random arm keep theirs or "
        "become undecided"
    )
    if bad.empty:
        return head + "; none turns into its opposite."
    return (
        head
        + "; "
        + "; ".join(
            f"{r.comparison} ({r.measure}) turns into its opposite without seed {r.opposite}'s draws"
            for r in bad.itertuples()
        )
        + "."
    )
