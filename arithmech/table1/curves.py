"""Table 1's rules decided over whole learning-rate curves, written before the runs they decide.

Each rule reads every grid point of :mod:`arithmech.table1.frontier` (an arm at one rate, its runs' mean changes
from base) and is a statement over **every rate of each arm's grid**, never over one chosen rate. Its parts are
comparisons of grid points, each decided on a crossed interval over runs and test items (a point against base, or
two points' difference: :func:`arithmech.core.stats.crossed_interval`; at the rule's level, below; seventh version)
and each three-valued: true, false, or undecided (an interval that decides
neither, a point with fewer than :data:`~arithmech.table1.frontier.MIN_RUNS` runs). "Some rate" and "every rate"
combine them as Kleene's logic does: *some* is true when one part is true and false when all are false; *every*
is false when one is false and true when all are true; anything else leaves the rule **inconclusive**.
``m`` = :data:`MARGIN` (5 points of accuracy; 0.05 nats for a loss). Collapsed points decide nothing.
**Multiplicity** (second version, 2026-11-27, before any precise record): the parts a *some* reads are each
decided at level 1 − 0.05 / (their number) (Bonferroni), so a grid with more rates is not likelier to "hold
somewhere"; *every* needs no adjustment (each part must hold). A point **collapsed** when more than half of its
runs collapsed (was: any run — which dropped a 10-draw random point more often than a 3-seed key point).
**Third version** (2026-11-27, before any point had a second run): a point is read on its runs that did not collapse
(at least 3 of them), so a minority of collapsed draws never enters a mean or an interval; for full SFT's cost
(rule 3a) any collapsed run at a point of at least 3 runs counts as a cost.
**Fourth version** (2026-11-28, every grid point still at one run, so no part could decide): **every interval a rule
reads** is at level 1 − 0.05 / N, N the number of intervals the rule reads over the whole grid (:func:`family`:
rule 1 |K|; rule 2 |K|·|F|; rule 3 |F| + |K| + 2·|K|·|F|; rule 4 |K|·|R|, for K, F, R the points of precise-key,
full and the random arm). When every interval covers, no part is decided wrongly, and Kleene's combination of right
or undecided parts is never wrong: each verdict, *holds* and *does not hold* alike, is wrong with probability at
most 5 % — per row: the table's rows (rules, measures, comparisons) are not corrected against one another, so across
its 24 rows some verdict is wrong more often than that. Leave-one-rate-out re-decides at the **whole grid's** N (a
point left out does not narrow the other intervals); it can still turn an undecided part into a decided verdict,
since a point left out can be the one that kept a *some* or an *every* undecided, so only the **opposite** verdict
makes a rule inconclusive. The frontier tops' interval (:func:`headline`) is shown at the same level.
**Fifth version** (2026-11-28, every grid point still at one run): a point's mean and interval read **every** run,
collapsed or not (intent to treat). The third version read the survivors only, so a point's mean was its surviving
runs' and a full-SFT point whose collapsed runs counted as a cost (rule 3a) could also dominate a key point (3b) on
its survivors: a collapse is the arm's outcome at that rate. A point where more than half of the runs collapsed
still decides nothing; every rule's default N is its :func:`family`.
**Sixth version** (2026-11-28, no grid point yet at 3 runs): a rate the plan cuts (``--no-replicate-ends``:
``table1.json``'s ``replicated`` lacks it; :func:`arithmech.table1.plan.replicated`) is outside the grid the
rules read — it would stay below 3 runs for good and leave every *every* over its arm undecided — and outside N.
**Seventh version** (2026-11-28, no grid point yet at 3 runs): every interval is **crossed** — the spread of the
run means and the spread over the shared test items (for two points, of their per-item difference) — instead of
Student t (a point) or Welch t (two points) over run means, which saw the training spread only: three runs scoring
alike gave an interval of width zero, and a 400-item test set was taken as the whole population of problems.
Against ``base-shots`` the reference is subtracted item by item (it was one number).
**Eighth version** (2026-11-28, a hostile reading of the seventh, before any precise point had 3 runs): the
crossed interval's half-width studentizes each term by its own degrees of freedom and adds them in quadrature
(:func:`arithmech.core.stats.studentized_half_width`); the seventh used one Welch–Satterthwaite t on the summed
variance, which at 3 runs and a Bonferroni level misses several times as often as the level says where the run
spread is most of the error. Each side needs at least two runs. (No precise point had 3 runs then, but full SFT's
four interior points had had 3 since 11:54 (be13e5a): rule 3a reads full SFT alone, so its half could already be
read under the seventh version's intervals.)
**Ninth version** (2026-11-28, ninth session, after 79 SmolLM2 runs were read): rule 3 is decided on addition and
subtraction apart as well as pooled, as the sentence below already said of every math rule (its part (b) reads the
math gain); it had one row, on the pooled measure. The pooled row, the one the claim reads, is unchanged.
**Tenth version** (2026-12-07, after all 149 SmolLM2 runs were read, so its verdicts are exploratory and the
confirmation of :mod:`arithmech.table1` decides): (i) *some* and *every* range over each arm's **validation frontier**
(:func:`~arithmech.table1.frontier.read`: the live points no other point of the arm beats on validation math and
validation text loss), as rule 2's text always said ("key's frontier top against full's") while the code read every
rate; (ii) so a point whose math **diverged** (dominated on validation by a lower rate of its own arm, e.g. SmolLM2's
precise-key at 9e-3, runs of 10, 45 and 49 %) decides nothing, the one stated rule for such points; (iii) the
**scope gate** reads full SFT's validation *gain* (:func:`arithmech.table1.frontier.scope`), not a 50 % level written
after the learning curve that met it. Rule 3's part (a) still reads every rate of full's grid (its cost lies past
the frontier). Leave-one-rate-out still leaves out every grid point.

1. **precise SFT learns the skill** — some rate of precise-key has a math gain whose interval lies above 0
   (holds); every rate's lies at or below 0 (does not hold). Shown also against ``base-shots`` (the base model
   with K solved examples: the answer format without the arithmetic) where recorded.
2. **precise matches full** — some rate of precise-key is, against every rate of full, at most m below it
   (precise − full interval: lower end above −m: true; upper end below −m: false). It does not hold when every
   key rate is more than m below some full rate: key's frontier top against full's.
3. **precise keeps general skills better than full** — both halves must hold: (a) *full SFT costs general skill* at
   some rate of its grid (its general change's interval lies below 0: true; its lower end above −m at every rate:
   false; a full point of at least 3 runs with a collapsed run costs); and (b) some rate of precise-key that learns the
   skill (rule 1's part true) is *dominated by no full point* (a full point dominates it when both its math gain and its
   general change lie decidedly above the key point's, intervals of the difference above 0; it does not when either lies
   decidedly below). It does not hold when either half does not hold.
4. **the selection matters** — some rate of precise-key beats every rate of a random arm on math gain (key −
   random interval above 0: true; upper end below +m: false, no advantage of m or more): key's frontier top against
   the random arm's. Decided against ``precise-random`` (layer-matched) and ``precise-random-any`` apart; the
   same rule also compares ``precise-share`` with each. Every common rate's difference is shown beside it.

Math rules (1–4; rule 3 through its part (b)) are decided on the primary math measure and, for ``carry``, on its
addition and subtraction items apart; a claim reads the pooled row.
**Leave-one-rate-out** (:func:`verdict_rows`): each rule is re-decided with each grid point's runs left out in
turn; a verdict that becomes the opposite verdict with one point left out is reported **inconclusive**. Where the
model's own scope rules a test out (full SFT learns nothing: :func:`arithmech.table1.frontier.scope`) or every
rate of an arm collapsed, the rule says **not testable**, and why; an arm without runs: **not yet run**.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from itertools import product

import pandas as pd

from arithmech.core.stats import crossed_interval
from arithmech.evals.suites import get_suite
from arithmech.table1.frontier import HOLDS as HOLDS  # the verdict words, re-exported: pages read C.HOLDS
from arithmech.table1.frontier import (
    MIN_RUNS,
    NOT_RUN,
    OPEN,
    OPPOSITE,
    UNTESTABLE,
    WORD,
    Curves,
    Point,
    both,
    curves_of,
    decide,
    diff,
    every,
    gain,
    grid,
    level,
    live,
    read,
    run_interval,
    shots_ref,
    some,
    thin,
    top,
    top_label,
    would_decide,
)
from arithmech.table1.frontier import NOT as NOT
from arithmech.table1.result import Table1Result

MARGIN = 0.05
RANDOM = ("precise-random", "precise-random-any")
SHOTS = "precise SFT learns more than the answer format"  # rule 1 against base-shots


# ------------------------------------------------------------------------- the rules (module docstring)
def _learn(p: Point, v: str, ref: list[float] | None = None, m: int = 1) -> bool | None:
    return decide(*gain(p, v, ref, m), lambda lo, hi: lo > 0, lambda lo, hi: hi <= 0)


def learns(c: Curves, v: str, ref: str = "base", n: int | None = None) -> bool | None:
    shift = shots_ref(c, v) if ref == "base-shots" else None
    keys = read(c, "precise-key")
    n = n or family(c, "learns")
    return some(_learn(p, v, shift, n) for p in keys)


def matches(c: Curves, v: str, n: int | None = None) -> bool | None:
    keys, n = read(c, "precise-key"), n or family(c, "matches")
    return some(
        every(
            decide(*diff(k, f, v, n), lambda lo, hi: lo > -MARGIN, lambda lo, hi: hi < -MARGIN) for f in read(c, "full")
        )
        for k in keys
    )


def _dominates(f: Point, k: Point, v: str, m: int = 1) -> bool | None:
    (ml, mh), (gl, gh) = diff(f, k, v, m), diff(f, k, "general", m)
    if ml is None or mh is None or gl is None or gh is None:  # diff gives both ends or neither
        return None
    return True if ml > 0 and gl > 0 else (False if mh < 0 or gh < 0 else None)


def full_costs(c: Curves, n: int | None = None) -> bool | None:
    full, n = grid(c, "full"), n or family(c, "keeps")
    parts = [
        (True if p.n >= MIN_RUNS else None)
        if p.gone or any(p.collapsed)
        else decide(*gain(p, "general", m=n), lambda lo, hi: hi < 0, lambda lo, hi: lo > -MARGIN)
        for p in full
    ]  # a collapsed run is a cost, at a point of >= MIN_RUNS runs
    return some(parts)


def not_dominated(c: Curves, v: str, n: int | None = None) -> bool | None:
    full, keys = read(c, "full"), read(c, "precise-key")
    m = n or family(c, "keeps")
    return some(
        both(_learn(k, v, m=m), every(None if d is None else not d for d in (_dominates(f, k, v, m) for f in full)))
        for k in keys
    )


def keeps(c: Curves, v: str, n: int | None = None) -> bool | None:
    n = n or family(c, "keeps")
    return both(full_costs(c, n), not_dominated(c, v, n))


def selection(
    c: Curves, v: str, arm: str = "precise-key", control: str = "precise-random", n: int | None = None
) -> bool | None:
    keys, n = read(c, arm), n or family(c, "selection", arm, control)
    return some(
        every(decide(*diff(k, r, v, n), lambda lo, hi: lo > 0, lambda lo, hi: hi < MARGIN) for r in read(c, control))
        for k in keys
    )


def family(c: Curves, rule: str, arm: str = "precise-key", control: str = "precise-random") -> int:
    """N, the number of intervals ``rule`` reads over the whole grid of ``c`` (fourth version, module docstring):
    ``learns`` |K|; ``matches`` |K|·|F|; ``keeps`` |F| (full's cost, every point) + |K| (learns) + 2·|K|·|F| (math
    and general of each domination); ``selection`` |K|·|R| for ``arm`` and ``control``."""
    k, f = len(read(c, "precise-key")), len(read(c, "full"))
    return max(
        1,
        {
            "learns": k,
            "matches": k * f,
            "keeps": len(grid(c, "full")) + k + 2 * k * f,
            "selection": len(read(c, arm)) * len(read(c, control)),
        }[rule],
    )


# ------------------------------------------------------------------------- the table of verdicts
Decider = Callable[[Curves, int], "bool | None"]


# One rule: (claim, comparison, arms it reads, decider, the decider's keywords, :func:`family`'s rule, arm and control).
Rule = tuple[str, str, tuple[str, ...], Callable[..., "bool | None"], dict[str, str], tuple[str, str, str]]
# family's default arm and control (the rules that read no random arm)
FAMILY_DEFAULT = ("precise-key", "precise-random")

# The rules as one table (module docstring); every row is decided on every measure variant (ninth version: rule 3 too).
RULES: list[Rule] = [
    ("precise SFT learns the skill", "precise-key − base", ("precise-key",), learns, {}, ("learns", *FAMILY_DEFAULT)),
    # gated by _gate where base-shots was not recorded on the math items
    (SHOTS, "precise-key − base-shots", ("precise-key",), learns, {"ref": "base-shots"}, ("learns", *FAMILY_DEFAULT)),
    (
        "precise matches full",
        "precise-key − full",
        ("precise-key", "full"),
        matches,
        {},
        ("matches", *FAMILY_DEFAULT),
    ),
    (
        "precise keeps general skills better than full",
        "full − base (a); full vs precise-key (b)",
        ("precise-key", "full"),
        keeps,
        {},
        ("keeps", *FAMILY_DEFAULT),
    ),
]
RULES += [
    (
        "the selection matters",
        f"{arm} − {ctl}",
        (arm, ctl),
        selection,
        {"arm": arm, "control": ctl},
        ("selection", arm, ctl),
    )
    for arm, ctl in product(("precise-key", "precise-share"), RANDOM)
]


def _bound(fn: Callable[..., bool | None], v: str, kw: dict[str, str]) -> Decider:
    """``fn`` on measure variant ``v`` with its keywords: ``decide(c, n)``."""

    def decide_(c: Curves, n: int) -> bool | None:
        return fn(c, v, n=n, **kw)

    return decide_


def rules(c: Curves) -> list[tuple[str, str, tuple[str, ...], str, Decider, Callable[[Curves], int]]]:
    """``(claim, comparison, arms it reads, measure variant, decide, size)`` for every row of :data:`RULES` and
    every measure variant of ``c`` (module docstring): ``decide(c, n)`` decides the rule with its intervals at
    :func:`level` of ``n``, and ``size(c)`` is its :func:`family` on ``c``."""
    return [
        (claim, comp, arms, v, _bound(fn, v, kw), partial(family, rule=size[0], arm=size[1], control=size[2]))
        for claim, comp, arms, fn, kw, size in RULES
        for v in c.variants
    ]


def has_shots(c: Curves) -> bool:
    """Whether base-shots (base with K solved examples) was recorded on the math items: its rule reads it."""
    return c.shots is not None and c.math in c.shots["results"]


def _gate(c: Curves, arms: tuple[str, ...], claim: str = "") -> str | None:
    """Why rule ``claim`` reading ``arms`` cannot be decided here (not testable / not yet run), or None: the
    base-shots twin of rule 1 also reads the base-shots record on the math items."""
    if not c.scope[0]:
        return c.scope[1]
    if claim == SHOTS and not has_shots(c):  # a suite with no solved examples to show has no base-shots control
        none = f"{UNTESTABLE}: the {c.suite} suite has no base-shots control (no solved examples to show)"
        return (
            none
            if get_suite(c.suite).shots is None
            else f"{NOT_RUN}: no base-shots record on {c.math} (table1 runs it)"
        )
    missing = [a for a in arms if not c.points.get(a)]
    if missing:
        return f"{NOT_RUN}: no run of {', '.join(missing)}"
    gone = [a for a in arms if not live(c, a)]
    if gone:
        return f"{UNTESTABLE}: every rate of {', '.join(gone)} collapsed on {c.general}"
    return None


def whole_verdict(c: Curves, arms: tuple[str, ...], decide_: Decider, n: int, claim: str = "") -> str:
    """A rule's verdict over ``c``'s whole grid, its intervals at the level of ``n``: why it cannot be decided here
    (:func:`_gate`: not testable, not yet run), else holds / does not hold / inconclusive — before the
    leave-one-rate-out check (:func:`verdict_rows`' final verdict)."""
    return _gate(c, arms, claim) or WORD[decide_(c, n)]


def loro(c: Curves, arms: tuple[str, ...], decide_: Decider, n: int) -> list[tuple[str, float, str]]:
    """``(arm, rate, verdict)`` with each grid point of ``arms`` left out in turn, decided at the whole grid's
    ``n`` (fourth version: leaving a point out takes information away and never narrows the other intervals)."""
    out = []
    for a in arms:
        for p in grid(c, a):
            d = c.without(a, p.lr)
            out.append((a, p.lr, whole_verdict(d, arms, decide_, n)))
    return out


def verdict_rows(c: Curves) -> pd.DataFrame:
    """One row per rule × measure variant: the verdict over the whole grid, the leave-one-rate-out check (the
    verdict each left-out point gives, and whether one gives the opposite), the final verdict and, where a rule
    cannot be decided, why."""
    rows = []
    for claim, comp, arms, v, fn, size in rules(c):
        why, n = _gate(c, arms, claim), size(c)
        whole = why.split(":")[0] if why else WORD[fn(c, n)]
        left = [] if why else loro(c, arms, fn, n)
        flips = [(a, lr, w) for a, lr, w in left if w == OPPOSITE.get(whole)]
        final = OPEN if flips else whole
        moved = [(a, lr, w) for a, lr, w in left if w != whole]
        note = why or (
            "; ".join(f"{w} without {a} {lr:.0e}" for a, lr, w in flips)
            if flips
            else (
                f"{whole}, never the opposite, with any one of {len(left)} grid points left out"
                + (
                    "; but " + "; ".join(f"{w} without {a} {lr:.0e}" for a, lr, w in moved)
                    if moved
                    else " (the same verdict without each)"
                )
            )
            if whole in OPPOSITE
            else thin(c, arms, v, n) + would_decide(moved)
        )
        rows.append(
            {
                "claim": claim,
                "comparison": comp,
                "measure": v,
                "whole grid": whole,
                "verdict": final,
                "leave-one-rate-out": note,
                "why": why or "",
                "loro": left,
                "intervals": n,
                "level": level(n),
                **headline(c, arms, v, claim, n),
            }
        )
    return pd.DataFrame(rows)


def headline(c: Curves, arms: tuple[str, ...], v: str, claim: str, n: int = 1) -> dict:
    """The comparison a reader checks first: the two arms' frontier tops (the point that did not collapse with the
    highest mean *validation* math accuracy, so the test items that are shown did not pick it; the test mean where
    no validation score was recorded) and the crossed interval of their difference — or, against base, the top's
    crossed interval, both at :func:`level` of ``n`` (the rule's). It decides nothing: the rules read every point."""
    found = [top(c, a, v) for a in arms]
    tops = [t for t in found if t is not None]
    if len(tops) < len(found) or (claim == SHOTS and not has_shots(c)):
        return {"estimate": None, "ci_low": None, "ci_high": None, "at": ""}
    at = " vs ".join(top_label(c, t, v) for t in tops)
    if "keeps" in claim:
        k, f = tops
        est = k.mean("general") - f.mean("general")
        lo, hi = diff(k, f, "general", n)
        # the number is part (b)'s general side at the tops, precise-key − full; part (a) is in the points table
        return {"estimate": est, "ci_low": lo, "ci_high": hi, "at": at + f", {c.general}: precise-key − full"}
    if len(tops) == 1 and claim == SHOTS:  # against base-shots, item by item
        ref, first = shots_ref(c, v), tops[0]
        est = first.mean(v) - sum(ref) / len(ref)
        lo, hi = (
            crossed_interval([[x - r for x, r in zip(run, ref)] for run in first.table(v)], level=level(n))[1:]
            if first.n >= 2
            else (None, None)
        )
        return {"estimate": est, "ci_low": lo, "ci_high": hi, "at": at + ", against base-shots"}
    if len(tops) == 1:
        est, lo, hi = run_interval(tops[0], v, level(n))
        return {"estimate": est, "ci_low": lo if tops[0].n >= 2 else None, "ci_high": hi, "at": at}
    lo, hi = diff(tops[0], tops[1], v, n)  # two arms here: one returned above
    return {"estimate": tops[0].mean(v) - tops[1].mean(v), "ci_low": lo, "ci_high": hi, "at": at}


def by_rate(c: Curves, v: str, arm: str = "precise-key", control: str = "precise-random") -> pd.DataFrame:
    """At every rate both arms ran: ``arm − control`` on ``v`` (crossed interval, runs and items, at the selection
    rule's level) and the part's value."""
    rows, n = [], family(c, "selection", arm, control)
    for k in live(c, arm):
        for r in live(c, control):
            if r.lr == k.lr:
                lo, hi = diff(k, r, v, n)
                rows.append(
                    {
                        "lr": k.lr,
                        "runs": f"{k.n} / {r.n}",
                        "difference": k.mean(v) - r.mean(v),
                        "lo": lo,
                        "hi": hi,
                        "part": WORD[decide(lo, hi, lambda lo, hi: lo > 0, lambda lo, hi: hi < MARGIN)],
                    }
                )
    return pd.DataFrame(rows)


def verdicts(t: Table1Result) -> pd.DataFrame:
    """:func:`verdict_rows` of an arms run's curves."""
    return verdict_rows(curves_of(t))
