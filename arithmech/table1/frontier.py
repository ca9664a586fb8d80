"""Table 1 over whole learning-rate curves: every run of every arm grouped into grid points with their intervals,
each arm's frontier on the trade-off plane, and the parts the rules of :mod:`arithmech.table1.curves` are made of.

A **point** is one arm at one learning rate: its runs (seeds; for a random arm, its draws), each scored on the
same test items. Per run: the **math gain** (primary math measure − base; for the ``carry`` measure also its
addition and its subtraction items apart: :func:`arithmech.data.splits.carry_items` alternates them, even items
addition) and the **general change** (primary general measure − base; the ``cpu`` suite's: the deciding cloze
sets pooled, :func:`arithmech.table1.verdicts.pool`); the text loss's change is shown, never decided on.

Per point, three intervals of the mean over its runs (:func:`point_table`): the **crossed** interval over runs and
test items at once (:func:`arithmech.core.stats.crossed_interval`; the rules decide on it, and only at points with
at least :data:`MIN_RUNS` runs); the **hierarchical bootstrap** of :mod:`arithmech.table1.verdicts` (a second
estimator of the same spread) and **Student t over the run means** (the training spread only), shown beside it.
Their coverage at n = 3, 5, 10 runs is checked on simulated runs.

A point **collapsed** when more than half of its runs collapsed on the primary general measure under the interval gate
(:func:`arithmech.table1.verdicts.collapsed`); collapsed points are drawn, never on a frontier, and decide nothing. A
point's mean and intervals read **every** run, collapsed or not. An arm's **frontier** is the Pareto set of its other
points on (mean math gain, mean general change).

The rules' parts: three-valued logic (true, false, undecided), the words the tables say it in, and Kleene's *some*,
*every* and *both*; one comparison decided on an interval; a point's change from base (or from base-shots, item by
item) and two points' difference, each crossed over runs and test items at a rule's Bonferroni level; each arm's
frontier top (:func:`top`); and the notes an undecided verdict carries (:func:`thin`, :func:`would_decide`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pandas as pd

from arithmech.core.stats import crossed_interval, hierarchical_bootstrap, t_interval
from arithmech.table1 import verdicts
from arithmech.table1.plan import grid_of
from arithmech.table1.result import Table1Result

MIN_RUNS = 3
"""Runs a grid point needs before a rule reads its interval (fewer: the point is shown, and is inconclusive)."""
SCOPE_GAIN = 0.05
"""The validation gain over base (5 points, the rules' margin) whose interval full SFT must clear somewhere for the math
rules to be testable (:func:`scope`)."""
OPS = ("addition", "subtraction")


@dataclass
class Point:
    """One arm at one learning rate: per run, its math gain by measure variant, its general change and text-loss
    change; whether a run collapsed; its runs' tags."""

    arm: str
    lr: float
    tags: list[str] = field(default_factory=list)
    math: dict[str, list[float]] = field(default_factory=dict)  # variant → one gain per run
    general: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    collapsed: list[bool] = field(default_factory=list)
    val_math: list[float] = field(default_factory=list)
    items: dict[str, list[list[float]]] = field(default_factory=dict)  # what → per run, per test item, change
    cut: bool = False  # a rate the plan replicates no further (--no-replicate-ends): outside the rules' grid
    val_loss: list[float] = field(default_factory=list)  # per run: its validation text loss, where recorded
    val_items: list[list[float]] = field(default_factory=list)  # per run: its validation math items' change from base

    @property
    def n(self) -> int:
        return len(self.tags)

    @property
    def gone(self) -> bool:
        """More than half of the point's runs collapsed (any number of runs is treated alike)."""
        return 2 * sum(self.collapsed) > len(self.collapsed)

    @property
    def decides(self) -> bool:
        """At least :data:`MIN_RUNS` runs, and the point did not collapse (its mean reads every run, collapsed
        or not)."""
        return self.n >= MIN_RUNS and not self.gone

    def mean(self, what: str) -> float:
        xs = self.values(what)
        return sum(xs) / len(xs) if xs else float("nan")

    def table(self, what: str) -> list[list[float]]:
        """Runs × test items: each run's change from base on each item of ``what`` (every run, collapsed or not);
        a run's mean over its items is its entry of :meth:`values`."""
        return self.items[what]

    def values(self, what: str) -> list[float]:
        """Every run's value of ``what`` (a math variant, ``general`` or ``loss``), collapsed runs included (a collapse
        is an outcome of the arm at that rate, not a run to drop)."""
        return list(self.general if what == "general" else self.loss if what == "loss" else self.math[what])


@dataclass
class Curves:
    """Every grid point of one results folder's Table 1, with what the rules need beside them."""

    suite: str
    math: str  # the primary math measure
    general: str  # the primary general measure's name as shown
    variants: tuple[str, ...]  # math variants: the primary measure, and by operation where it splits
    points: dict[str, list[Point]]  # arm → its points, by rate
    base: dict
    shots: dict | None = None  # base with K solved examples (math only), where recorded
    pooled: list[str] | None = None
    scope: tuple[bool, str] = (True, "")

    def without(self, arm: str, lr: float) -> Curves:
        """The same curves with one grid point's runs left out (the leave-one-rate-out check)."""
        pts = {a: [p for p in ps if not (a == arm and p.lr == lr)] for a, ps in self.points.items()}
        return Curves(
            self.suite, self.math, self.general, self.variants, pts, self.base, self.shots, self.pooled, self.scope
        )


def variant_items(run: dict, measure: str, variant: str) -> list[float]:
    """A run's items of ``measure`` for a math ``variant``: ``carry`` → every item, ``carry:addition`` → the even
    items, ``carry:subtraction`` → the odd ones (:func:`arithmech.data.splits.carry_items` alternates them)."""
    its = run["results"][measure]["items"]
    op = variant.partition(":")[2]
    return its if not op else its[OPS.index(op) :: 2]


def _mean(xs) -> float:
    return sum(xs) / len(xs) if len(xs) else float("nan")  # a point whose every run collapsed


def scope(points: list[Point]) -> tuple[bool, str]:
    """Whether the math rules can be tested here (tenth version): full SFT must *learn* the skill — at some replicated
    rate of its grid, its gain in validation math accuracy over base has a crossed interval (runs × validation items,
    95 %) whose lower end lies above the margin :data:`SCOPE_GAIN`. The validation items are never the test items the
    rules read. (Until the ninth version: full SFT's best validation accuracy at least 50 %, a level written after
    the learning curve that met it, past the grid's step budget.)"""
    read = [p for p in points if not p.cut and len(p.val_items) >= 2]
    if not read:
        return True, ""
    gains = [(crossed_interval(p.val_items), p) for p in read]
    (est, lo, hi), best = max(gains, key=lambda g: g[0][1])
    at = f"{best.lr:.0e}, {best.n} runs: validation gain {100 * est:+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}]"
    if lo > SCOPE_GAIN:
        return True, f"full SFT learns the skill ({at})"
    return False, (
        f"not testable: full SFT does not learn the skill either (its best {at}; a test needs the interval above "
        f"+{100 * SCOPE_GAIN:.0f} points), so the arms all sit near base"
    )


def curves_of(t: Table1Result) -> Curves:
    """Every run of an arms run grouped into grid points (module docstring), computed once per result; arms absent
    from the plan have no points (their rules say "not yet run")."""
    if "curves" not in t.memo:
        t.memo["curves"] = _curves(t)
    return t.memo["curves"]


def _curves(t: Table1Result) -> Curves:
    p, S, base, shots, pooled = t.plan, t.suite, t.base, t.shots, verdicts.pool(t)
    m, g = S.primary_math, S.primary_general
    variants = (m, *(f"{m}:{op}" for op in OPS)) if m == "carry" else (m,)
    sign = -1.0 if g in S.lower_is_better else 1.0  # a loss: its fall is the gain
    loss = "lm_loss" if "lm_loss" in base["results"] else None
    b_items = {v: variant_items(base, m, v) for v in variants}
    b_items["general"] = verdicts.items([base], g, sign, pooled)
    if loss:
        b_items["loss"] = verdicts.items([base], loss)
    b_math = {v: _mean(b_items[v]) for v in variants}
    b_gen = verdicts.value(base, g, pooled)
    b_val = ((base["parameters"].get("validation") or {}).get(m) or {}).get("items")
    pts: dict[str, list[Point]] = {}
    kept = p.get("replicated")  # the grid-point cut's rates (arithmech.table1.plan)
    for arm in p["arms"]:
        if arm in ("base", "base-shots"):
            continue
        by_lr: dict[float, Point] = {}
        for tag in t.arm_tags(arm):
            r = t.record(tag)
            lr = r["parameters"]["lr"]
            pt = by_lr.setdefault(lr, Point(arm, lr, cut=kept is not None and lr not in kept[grid_of(arm)]))
            pt.tags.append(tag)
            run_items = {v: variant_items(r, m, v) for v in variants}
            run_items["general"] = verdicts.items([r], g, sign, pooled)
            for v in variants:
                pt.math.setdefault(v, []).append(_mean(run_items[v]) - b_math[v])
            pt.general.append(sign * (verdicts.value(r, g, pooled) - b_gen))
            if loss:
                pt.loss.append(r["results"][loss]["value"] - base["results"][loss]["value"])
                run_items["loss"] = verdicts.items([r], loss)
            for what, its in run_items.items():
                pt.items.setdefault(what, []).append([x - y for x, y in zip(its, b_items[what])])
            pt.collapsed.append(verdicts.collapsed(r, base, g, pooled))
            validation = r["parameters"].get("validation") or {}
            val = validation.get(m)
            if val is not None:
                pt.val_math.append(val["value"])
                if val.get("items") and b_val:
                    pt.val_items.append([x - y for x, y in zip(val["items"], b_val)])
            if "lm_loss" in validation:
                pt.val_loss.append(validation["lm_loss"]["value"])
        pts[arm] = sorted(by_lr.values(), key=lambda q: q.lr)
    name = g + (f" ({', '.join(pooled)} pooled)" if pooled else "")
    return Curves(p["suite"], m, name, variants, pts, base, shots, pooled, scope(pts.get("full", [])))


def frontier(points: list[Point]) -> list[Point]:
    """The Pareto set of ``points`` on (mean math gain, mean general change), collapsed points left out: a point is
    on it unless another is at least as high on both and higher on one. Highest math gain first."""
    live = [p for p in points if not p.gone]
    m = lambda p: p.mean(next(iter(p.math)))
    out = [
        p
        for p in live
        if not any(
            m(q) >= m(p)
            and q.mean("general") >= p.mean("general")
            and (m(q) > m(p) or q.mean("general") > p.mean("general"))
            for q in live
        )
    ]
    return sorted(out, key=m, reverse=True)


def run_interval(p: Point, what: str, level: float = 0.95) -> tuple[float, float | None, float | None]:
    """``(mean, lo, hi)`` of a point's change from base on ``what`` (a math variant, ``general`` or ``loss``): the
    crossed interval over its runs and the test items (:func:`arithmech.core.stats.crossed_interval`) at ``level``;
    ``lo``, ``hi`` None with fewer than two runs (one run says nothing of the training spread)."""
    xs = p.values(what)
    if len(xs) < 2:
        return _mean(xs), None, None
    return crossed_interval(p.table(what), level=level)


def point_table(t: Table1Result, n_boot: int = 1000) -> pd.DataFrame:
    """One row per grid point: arm, rate, runs, collapsed runs, on the frontier, and per measure (each math variant, the
    general measure, the text loss) the mean change from base with its crossed interval (runs and items) and, for the
    primary math and general measures, the hierarchical bootstrap interval (``boot lo``/``boot hi``: runs, then items
    within them) and the Student t interval over the run means alone (``t lo``/``t hi``: the training spread only, the
    items taken as fixed; :func:`arithmech.core.stats.t_interval`, whose coverage at 3, 5 and 10 runs a test checks)."""
    c, S = curves_of(t), t.suite
    rows = []
    for arm, pts in c.points.items():
        front = {id(q) for q in frontier(pts)}
        for q in pts:
            row = {
                "arm": arm,
                "lr": q.lr,
                "runs": q.n,
                "collapsed runs": sum(q.collapsed),
                "frontier": id(q) in front,
                "decides": q.decides,
                "val_math": _mean(q.val_math) if q.val_math else None,
            }
            for what in (*c.variants, "general", *(["loss"] if q.loss else [])):
                row[what], row[f"{what} lo"], row[f"{what} hi"] = run_interval(q, what)
            runs = [t.record(tag) for tag in q.tags]
            for what, meas, sign in ((c.math, S.primary_math, 1.0), ("general", S.primary_general, 1.0)):
                _, lo, hi = hierarchical_bootstrap(
                    verdicts.per_run([c.base], meas, sign, c.pooled),
                    verdicts.per_run(runs, meas, sign, c.pooled),
                    n_boot=n_boot,
                )
                row[f"{what} boot lo"], row[f"{what} boot hi"] = lo, hi
                xs = q.values(what)  # the run means alone: Student t, training spread only
                row[f"{what} t lo"], row[f"{what} t hi"] = t_interval(xs)[1:] if len(xs) >= 2 else (None, None)
            rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------- three-valued logic
HOLDS, NOT, OPEN, NOT_RUN, UNTESTABLE = "holds", "does not hold", "inconclusive", "not yet run", "not testable"
WORD = {True: HOLDS, False: NOT, None: OPEN}
"""A three-valued part or rule as the tables say it."""
OPPOSITE = {HOLDS: NOT, NOT: HOLDS}


def some(xs: Iterable[bool | None]) -> bool | None:
    xs = list(xs)
    return True if any(x is True for x in xs) else (False if xs and all(x is False for x in xs) else None)


def every(xs: Iterable[bool | None]) -> bool | None:
    xs = list(xs)
    return False if any(x is False for x in xs) else (True if xs and all(x is True for x in xs) else None)


def both(a: bool | None, b: bool | None) -> bool | None:
    return False if a is False or b is False else (True if a is True and b is True else None)


def decide(lo: float | None, hi: float | None, true: Callable, false: Callable) -> bool | None:
    """One comparison: true when ``true(lo, hi)``, else false when ``false(lo, hi)``, else undecided."""
    if lo is None:
        return None
    return True if true(lo, hi) else (False if false(lo, hi) else None)


# ------------------------------------------------------------------------- intervals of points
def level(m: int) -> float:
    """The confidence level of each of the ``m`` intervals a rule reads (Bonferroni: 1 − 0.05 / m): with all ``m``
    covering at once (probability ≥ 95 %), no verdict is wrong."""
    return 1 - 0.05 / max(1, m)


def gain(p: Point, what: str, ref: list[float] | None = None, m: int = 1) -> tuple[float | None, float | None]:
    """The crossed interval (runs × test items, at :func:`level` of ``m``) of a point's change from base on
    ``what`` — or, with ``ref`` (a reference's per-item change from base, e.g. base-shots'), from that reference on
    the same items; undecided points give None."""
    if not p.decides:
        return None, None
    table = p.table(what) if ref is None else [[x - r for x, r in zip(run, ref)] for run in p.table(what)]
    _, lo, hi = crossed_interval(table, level=level(m))
    return lo, hi


def diff(a: Point, b: Point, what: str, m: int = 1) -> tuple[float | None, float | None]:
    """The crossed interval (at :func:`level` of ``m``) of ``a − b`` on ``what``: both points' run spreads and
    the spread over the shared test items of their per-item difference; None unless both points decide."""
    if not (a.decides and b.decides):
        return None, None
    _, lo, hi = crossed_interval(a.table(what), b.table(what), level(m))
    return lo, hi


def grid(c: Curves, arm: str) -> list[Point]:
    """The points of ``arm`` the rules read: every rate but those the plan cut."""
    return [p for p in c.points.get(arm, []) if not p.cut]


def live(c: Curves, arm: str) -> list[Point]:
    return [p for p in grid(c, arm) if not p.gone]


def read(c: Curves, arm: str) -> list[Point]:
    """The points of ``arm`` a rule's *some* and *every* range over: its live points on the arm's
    validation frontier — none of the arm's other live points has a mean validation math accuracy at least as high
    and a validation text loss at least as low, better in one. A point whose math diverged at a high rate is
    dominated on validation by a lower rate of its own arm and decides nothing; without validation scores, every
    live point."""
    pts = live(c, arm)
    if not all(p.val_math and p.val_loss for p in pts):
        return pts
    m = lambda p: sum(p.val_math) / len(p.val_math)
    loss = lambda p: sum(p.val_loss) / len(p.val_loss)
    return [
        p
        for p in pts
        if not any(m(q) >= m(p) and loss(q) <= loss(p) and (m(q) > m(p) or loss(q) < loss(p)) for q in pts)
    ]


def top(c: Curves, arm: str, v: str) -> Point | None:
    """``arm``'s frontier top: its point that did not collapse with the highest mean *validation* math accuracy (so
    the test items that are shown did not pick it), or the highest test mean on ``v`` where no validation score was
    recorded; None without such a point."""
    return max(live(c, arm), key=lambda p: picked_on(p, v), default=None)


def picked_on(p: Point, v: str) -> float:
    """What :func:`top` ranks a point by: its mean validation math accuracy, or its test mean on ``v`` without one."""
    return sum(p.val_math) / len(p.val_math) if p.val_math else p.mean(v)


def top_label(c: Curves, t: Point, v: str) -> str:
    """A frontier top as the pages name it — arm, rate, runs — and what picked it over the arm's next point (its
    validation accuracy against the runner-up's), so a reader sees how close the pick was: the top decides
    nothing (the rules read every point), but a near tie says the shown difference could have been another."""
    rest = sorted((p for p in live(c, t.arm) if p is not t), key=lambda p: picked_on(p, v), reverse=True)
    # validation accuracy, or (no validation score) the test gain over base: the runner-up only where it is the same
    val = bool(t.val_math)
    fmt = (lambda x: f"{x:.1%}") if val else (lambda x: f"{100 * x:+.1f} points")
    vs = f" over {rest[0].lr:.0e}'s {fmt(picked_on(rest[0], v))}" if rest and bool(rest[0].val_math) == val else ""
    what = "validation" if val else "test gain"
    return f"{t.arm} {t.lr:.0e} ({t.n} runs; top on {what} {fmt(picked_on(t, v))}{vs})"


def shots_ref(c: Curves, v: str) -> list[float]:
    """Base-shots' per-item change from base on math variant ``v`` (base with K solved examples: the answer format
    without the arithmetic), the reference "learns more than the answer format" subtracts item by item."""
    assert c.shots is not None, "base-shots needs the base-shots run"
    return [s - b for s, b in zip(variant_items(c.shots, c.math, v), variant_items(c.base, c.math, v))]


# ------------------------------------------------------------------------- notes of an undecided verdict
def thin(c: Curves, arms: tuple[str, ...], v: str | None = None, m: int = 1) -> str:
    """The points of ``arms`` that cannot decide a part (fewer than MIN_RUNS runs), for an inconclusive verdict; where
    every point has its runs, how wide the points' own intervals are: among the points read, the widest interval of a
    point's change from base on math variant ``v`` at the rule's :func:`level` of ``m``, in points — a measure of how
    far the runs of one point disagree (at 3 runs and a Bonferroni level Student's t has 2 degrees of freedom), not
    necessarily the part that holds the rule open (most rules read differences of points; :func:`would_decide` names
    the points that do)."""
    few = [f"{p.arm} {p.lr:.0e} ({p.n})" for a in arms for p in live(c, a) if not p.decides]
    if few:
        return f"undecided parts; points with fewer than {MIN_RUNS} runs: {', '.join(few)}"
    note = f"every point read has {MIN_RUNS} runs or more; intervals across the margin"
    ends = [(p, gain(p, v, m=m)) for a in arms for p in live(c, a)] if v else []
    spans = [(hi - lo, p) for p, (lo, hi) in ends if lo is not None and hi is not None]
    if spans:
        width, p = max(spans, key=lambda x: x[0])
        wide = ", wider than the whole scale" if 50 * width > 100 else ""
        note += (
            f"; the widest interval of a point's own change from base on {v}: {p.arm} {p.lr:.0e} ({p.n} runs), "
            f"±{50 * width:.0f} points at the rule's level{wide} — its runs' spread, not necessarily what holds the "
            "rule open"
        )
    return f"undecided parts ({note})"


def would_decide(moved: list[tuple[str, float, str]]) -> str:
    """For an undecided verdict: the points without which the whole grid would read *holds* or *does not hold* —
    where it is close, not a finding (leaving a point out only removes evidence; a control's best point left out
    favours the arm it is compared with)."""
    decided = [(a, lr, w) for a, lr, w in moved if w in OPPOSITE]
    if not decided:
        return ""
    return (
        "; would read "
        + "; ".join(f"{w} without {a} {lr:.0e}" for a, lr, w in decided)
        + " (a point left out only removes evidence: not a finding)"
    )
