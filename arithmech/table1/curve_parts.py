"""The parts Table 1's curve rules (:mod:`arithmech.table1.curves`) are made of: three-valued logic (true, false,
undecided), the words the tables say it in, and Kleene's *some*, *every* and *both*; one comparison decided on an
interval; the intervals of grid points — a point's change from base (or from base-shots, item by item) and two
points' difference, each crossed over runs and the shared test items (:func:`arithmech.core.stats.crossed_interval`)
at a rule's Bonferroni level; each arm's frontier top, the point the verdict table's headline and
:mod:`arithmech.table1.detectable` compare; and the notes an undecided verdict carries (:func:`thin`,
:func:`would_decide`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from arithmech.core.stats import crossed_interval
from arithmech.table1.frontier import MIN_RUNS, Curves, Point, variant_items

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
    """The confidence level of each of the ``m`` intervals a rule reads (Bonferroni: 1 − 0.05 / m; fourth version,
    module docstring): with all ``m`` covering at once (probability ≥ 95 %), no verdict is wrong."""
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
    """The points of ``arm`` the rules read: every rate but those the plan cut (sixth version)."""
    return [p for p in c.points.get(arm, []) if not p.cut]


def live(c: Curves, arm: str) -> list[Point]:
    return [p for p in grid(c, arm) if not p.gone]


def read(c: Curves, arm: str) -> list[Point]:
    """The points of ``arm`` a rule's *some* and *every* range over (tenth version): its live points on the arm's
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
    the points that do). A hostile reading: "intervals across the margin" read as a close call where one point's
    interval was ±222 points."""
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
