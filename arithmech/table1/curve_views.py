"""Table 1 over whole learning-rate curves, for the Fine-tune chapter and the SmolLM2 appendix: the
trade-off plane's frames, the verdict table with its leave-one-rate-out check, each grid point with its crossed,
hierarchical-bootstrap and run-mean t intervals, and the paper's Table 1 beside ours: at each arm's frontier top
(:func:`paper_beside`), and at each arm's chosen rate, one row per model and arm (:func:`table1_side_by_side`). Reads
:mod:`arithmech.table1.frontier`, :mod:`arithmech.table1.curves` and :mod:`arithmech.table1.verdicts`; computes no
verdict of its own."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd

from arithmech.core.stats import crossed_interval, wilson_interval
from arithmech.paper import SFT, table1_by_mode
from arithmech.table1 import curves as curve_rules
from arithmech.table1 import design as design_checks
from arithmech.table1 import frontier as curve_points
from arithmech.table1 import verdicts as single_rate
from arithmech.table1.charts import frontier_chart
from arithmech.table1.frontier import curves_of
from arithmech.table1.result import Table1Result

PCT = lambda x: "—" if x is None or x != x else f"{100 * x:+.1f}"


def run_frame(c: curve_points.Curves) -> pd.DataFrame:
    """One row per run: arm, rate, run tag, math gain (primary measure), general change, whether it collapsed."""
    return pd.DataFrame(
        [
            {
                "arm": p.arm,
                "lr": p.lr,
                "run": t,
                "math": p.math[c.math][i],
                "general": p.general[i],
                "collapsed": p.collapsed[i],
                "math_name": c.math,
                "general_name": c.general,
            }
            for ps in c.points.values()
            for p in ps
            for i, t in enumerate(p.tags)
        ]
    )


def point_frame(c: curve_points.Curves) -> pd.DataFrame:
    """One row per grid point: its run means, runs, and whether it is on its arm's frontier."""
    rows = []
    for arm, ps in c.points.items():
        front = {id(q) for q in curve_points.frontier(ps)}
        rows += [
            {
                "arm": arm,
                "lr": p.lr,
                "runs": p.n,
                "math": p.mean(c.math),
                "general": p.mean("general"),
                "frontier": id(p) in front,
                "collapsed": p.gone,
            }
            for p in ps
        ]
    return pd.DataFrame(rows)


def chart(t: Table1Result, title: str):
    """:func:`arithmech.table1.charts.frontier_chart` of a results folder; None without runs."""
    c = curves_of(t)
    runs = run_frame(c)
    return None if runs.empty else frontier_chart(runs, point_frame(c), title=title)


def _interval(r) -> str:
    if r["estimate"] is None or r["estimate"] != r["estimate"]:
        return "—"
    ci = "" if r["ci_low"] is None or r["ci_low"] != r["ci_low"] else f" [{PCT(r['ci_low'])}, {PCT(r['ci_high'])}]"
    ci = f"{ci} at {100 * r['level']:.4g}%" if ci else " (no interval over runs)"
    return f"{PCT(r['estimate'])}{ci} — {r['at']}"


def verdict_table(rows: pd.DataFrame, measures: str = "all") -> pd.DataFrame:
    """The curve rules' verdicts for reading: claim, comparison, measure (pooled, or by operation), the verdict
    over the whole grid, the leave-one-rate-out check, the final verdict, and the frontier tops' difference in
    points with its crossed interval (runs and items). ``measures="pooled"``: the primary measure only."""
    if measures == "pooled":
        rows = rows[~rows.measure.str.contains(":")]
    return pd.DataFrame(
        {
            "claim": rows.claim,
            "comparison": rows.comparison,
            "measure": rows.measure.str.replace(":", ", ", regex=False),
            "whole grid": rows["whole grid"],
            "leave-one-rate-out": rows["leave-one-rate-out"],
            "verdict": rows.verdict,
            "frontier tops, points [runs × items, the rule's level]": [_interval(r) for _, r in rows.iterrows()],
        }
    ).reset_index(drop=True)


def loro_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Each decided rule (pooled measure) re-decided with each grid point left out, one row a rule: the verdict over the
    whole grid, how many points were left out in turn, and each left-out point that gives another verdict (a grid of
    many points stays one column wide)."""
    out = []
    for _, r in rows[~rows.measure.str.contains(":")].iterrows():
        if not r["loro"]:
            continue
        moved = [f"{w} without {a} {lr:.0e}" for a, lr, w in r["loro"] if w != r["whole grid"]]
        out.append(
            {
                "claim": f"{r['claim']} ({r['comparison']})",
                "whole grid": r["whole grid"],
                "points left out": len(r["loro"]),
                "another verdict": "; ".join(moved) or "none",
            }
        )
    return pd.DataFrame(out).set_index("claim") if out else pd.DataFrame()


def points_tables(t: Table1Result) -> dict[str, pd.DataFrame]:
    """Every grid point, as two tables that fit a page's width: ``"math"`` and ``"general"``. Both start with the
    point (arm, rate, runs, collapsed runs, frontier ★); then per measure one cell "mean change from base in points
    [95 % interval over runs and items]" (:func:`arithmech.core.stats.crossed_interval`; shown from
    :data:`~arithmech.table1.frontier.MIN_RUNS` runs, where the rules read it); for the primary math measure and the
    general one, two more 95 % intervals: the hierarchical bootstrap (runs, then items within them, resampled) and
    Student t over the run means alone (the training spread only). The math variants in the first table, the general
    measure and the text loss in the second. Empty frames where no point has run."""
    c, tab = curves_of(t), curve_points.point_table(t)
    if tab.empty:
        return {"math": tab, "general": tab}
    span = lambda lo, hi: "—" if lo is None or lo != lo else f"[{PCT(lo)}, {PCT(hi)}]"
    ready = [n >= curve_points.MIN_RUNS for n in tab.runs]  # the rules read an interval only from MIN_RUNS runs
    cell = lambda x, lo, hi: [
        PCT(m) + (" " + span(a, b) if r and a == a and a is not None else "") for m, a, b, r in zip(x, lo, hi, ready)
    ]
    point = lambda: pd.DataFrame(
        {
            "arm": tab.arm,
            "rate": [f"{x:.0e}" for x in tab.lr],
            "runs": tab.runs,
            "collapsed": tab["collapsed runs"],
            "frontier": tab.frontier.map({True: "★", False: ""}),
        }
    )
    math, general = point(), point()
    for v in c.variants:
        math[f"{v.replace(':', ': ')} [runs × items]"] = cell(tab[v], tab[f"{v} lo"], tab[f"{v} hi"])
    general["general [runs × items]"] = cell(tab["general"], tab["general lo"], tab["general hi"])
    for table, what in ((math, c.math), (general, "general")):
        for name, key in (("runs+items bootstrap", "boot"), ("run means, t", "t")):  # from MIN_RUNS runs, as above
            table[f"{what} {name}"] = [
                span(a, b) if r else "—" for a, b, r in zip(tab[f"{what} {key} lo"], tab[f"{what} {key} hi"], ready)
            ]
    if "loss" in tab:
        general["text loss change (nats)"] = [f"{x:+.3f}" if x == x else "—" for x in tab["loss"]]
    return {"math": math, "general": general}


def _with_ci(q: curve_points.Point, what: str) -> str:
    """A point's mean change in points with its 95 % crossed interval in brackets (none from one run)."""
    m, lo, hi = curve_points.run_interval(q, what)
    return PCT(m) + (f" [{PCT(lo)}, {PCT(hi)}]" if lo is not None and hi is not None else "")


def paper_beside(t: Table1Result) -> pd.DataFrame:
    """The paper's Table 1 (LLaMA2-7B: change from base, the four math sets and MMLU/CSQA averaged; no interval
    given) beside ours: each arm at its frontier top (:func:`arithmech.table1.frontier.top`: the point that did
    not collapse with the best mean *validation* accuracy, as the verdict table's), in points, each change with its
    95 % interval over runs and test items (:func:`arithmech.table1.frontier.run_interval`; none from one run)."""
    c = curves_of(t)
    p = table1_by_mode("LLaMA2-7B")
    math = lambda r: sum(r[k] for k in ("gsm8k", "addsub", "singleeq", "svamp")) / 4
    gen = lambda r: (r["mmlu"] + r["csqa"]) / 2
    rows = [
        {
            "model": "LLaMA2-7B (paper)",
            "arm": {"full": "full", "precise": "precise-key"}[m],
            "rate": "2e-05",
            "runs": 1,
            "math gain": f"{math(p[m]) - math(p['base']):+.1f}",
            "general change": f"{gen(p[m]) - gen(p['base']):+.1f}",
        }
        for m in ("full", "precise")
    ]
    for arm in c.points:
        top = curve_points.top(c, arm, c.math)
        if top is not None:
            rows.append(
                {
                    "model": "this model",
                    "arm": arm,
                    "rate": f"{top.lr:.0e}",
                    "runs": top.n,
                    "math gain": _with_ci(top, c.math),
                    "general change": _with_ci(top, "general"),
                }
            )
    out = pd.DataFrame(rows)
    out.attrs["measures"] = (
        f"paper: four math sets (mean) and MMLU, CSQA (mean); here: {c.math} and {c.general}, "
        "change from base in points"
    )
    return out


def finding_lines(rows: pd.DataFrame) -> list[str]:
    """One line per pooled rule for a chapter's findings box (claim, comparison: verdict — frontier tops, or why it
    cannot be decided), and one line naming the comparisons whose arms have not run yet."""
    pooled = rows[~rows.measure.str.contains(":")]
    out = [
        f"{r['claim']} ({r['comparison']}, over every rate): **{r['verdict']}** — "
        + (r["why"] or f"{_interval(r)}; leave-one-rate-out: {r['leave-one-rate-out'] or 'nothing to flip'}")
        for _, r in pooled.iterrows()
        if r["whole grid"] != curve_rules.NOT_RUN
    ]
    waiting = pooled[pooled["whole grid"] == curve_rules.NOT_RUN].comparison.tolist()
    return out + ([f"Not yet run: {'; '.join(waiting)}."] if waiting else [])


def common_rates(c: curve_points.Curves) -> pd.DataFrame:
    """The selection comparisons at every rate both arms ran (:func:`arithmech.table1.curves.by_rate`): key and share
    against each random arm, per math measure, the difference in points with its crossed interval (at the selection
    rule's level) and the part's verdict (an interval above 0: true; upper end below +m: false)."""
    out = []
    for arm in ("precise-key", "precise-share"):
        for ctl in curve_rules.RANDOM:
            if not (c.points.get(arm) and c.points.get(ctl)):
                continue
            for v in c.variants:
                for _, r in curve_rules.by_rate(c, v, arm, ctl).iterrows():
                    ci = "—" if r["lo"] is None or r["lo"] != r["lo"] else f"[{PCT(r['lo'])}, {PCT(r['hi'])}]"
                    out.append(
                        {
                            "comparison": f"{arm} − {ctl}",
                            "measure": v.replace(":", ", "),
                            "rate": f"{r['lr']:.0e}",
                            "runs": r["runs"],
                            "difference": PCT(r["difference"]),
                            "runs × items (rule's level)": ci,
                            "this rate alone": r["part"],
                        }
                    )
    return pd.DataFrame(out)


def _designed(t: pd.DataFrame) -> list[str]:
    """The design's projection with the runs each compared point gets: "4.1 (5 vs 10)"."""
    return [
        f"{100 * h:.1f} ({r})" if h is not None and h == h else f"— ({r})"
        for h, r in zip(t.half_width, t["runs a point"])
    ]


def detectable_table(
    c: curve_points.Curves,
    runs: tuple[int, ...] = (curve_points.MIN_RUNS, 5),
    design: Callable[[str, float], int] | None = None,
) -> pd.DataFrame:
    """How far from its bound an observed difference must lie for each rule to decide, with ``runs`` runs a point
    (:mod:`arithmech.table1.design`; 3, the rules' minimum, and 5, the issue's for frontier points) and, given
    ``design`` (:func:`arithmech.table1.design.design_runs`), with the runs the design gives each compared point
    (a random arm's draws), for reading: comparison, measure, the compared points, the rule's level, the run and item
    spreads seen so far and the projected half-width (``± at 3 runs``: an observed difference decides beyond it),
    all in points (or why it is not known yet: a last column says why)."""
    tables: dict = {r: design_checks.table(c, r) for r in runs}
    if design:
        tables["as designed"] = design_checks.table(c, design)
    t = tables[runs[0]]
    if t.empty:
        return t
    sd = lambda xs: (
        "—" if not isinstance(xs, list) else " / ".join(f"{100 * x:.1f}" for x in xs)
    )  # not "2.0, 3.4": head ids
    hw = lambda t: [f"{100 * h:.1f}" if h is not None and h == h else "—" for h in t.half_width]
    return pd.DataFrame(
        {
            "comparison": t.comparison,
            "measure": t.measure,
            "compared points": t["at"],
            "level": [f"{100 * (1 - 0.05 / n):.4g}%" for n in t.N],
            "run sd": [sd(x) for x in t["run sd"]],
            "item sd": [f"{100 * x:.0f}" if x == x and x is not None else "—" for x in t["item sd"]],
            **{f"± at {r} runs": hw(tables[r]) for r in runs},
            **({"± as designed (runs a point)": _designed(tables["as designed"])} if design else {}),
            "not known because": t.why,
        }
    )


def uncorrected_line(c: curve_points.Curves) -> str:
    """What the Bonferroni level holds open: the verdicts undecided over the whole grid that each interval's own 95 %
    (N = 1, no correction for the N intervals a rule reads) would decide there, named with what the whole grid would
    read (before any leave-one-rate-out check) — how close a row is, not a finding: the rules read their intervals
    at :func:`arithmech.table1.curves.level` of N."""
    opened = []
    for claim, comp, arms, v, fn, size in curve_rules.rules(c):
        if curve_rules.whole_verdict(c, arms, fn, size(c), claim) != curve_rules.OPEN:
            continue
        loose = curve_rules.whole_verdict(c, arms, fn, 1, claim)
        if loose in curve_rules.OPPOSITE:
            opened.append(f"{comp} ({v}): {loose}")
    if not opened:
        return "No undecided verdict would be decided at an uncorrected 95 % either."
    return (
        f"At each interval's own 95 % — no correction for the intervals a rule reads, a level the rules do not use — "
        f"the whole grid would read {len(opened)} undecided verdict{'s' if len(opened) != 1 else ''} as: "
        + "; ".join(opened)
        + ". The rules' level keeps them open: not findings, a measure of how close they are."
    )


def _ci(runs: list[list[float]]) -> str:
    """A 95 % interval in points of a mean over runs scored on the same items (``runs``: runs × items): crossed over
    runs and items (:func:`arithmech.core.stats.crossed_interval`, what the rules read) from two runs, Wilson over
    the 0/1 items of a single run, none ("—") for a single run of another measure."""
    if len(runs) >= 2:
        _, lo, hi = crossed_interval(runs)
    elif runs and all(x in (0, 1) for x in runs[0]):
        lo, hi = wilson_interval(sum(runs[0]), len(runs[0]))
    else:
        return "—"  # one run of a measure that is not 0/1 per item (a loss): no interval from one run
    return f"[{100 * lo:.1f}, {100 * hi:.1f}]"


SIDE_BY_SIDE = [
    "model",
    "arm",
    "math measure",
    "math (%)",
    "math 95% CI",
    "general measure",
    "general (%)",
    "general 95% CI",
    "rate",
    "runs",
    "collapsed runs",
    "train samples/s",
]
"""The columns of :func:`table1_side_by_side`."""


def table1_side_by_side(runs: Mapping[str, Table1Result]) -> pd.DataFrame:
    """Table 1 of the paper beside ours: one row per (model, arm). The paper's LLaMA2-7B rows average its
    four math sets and its two general sets (MMLU, CSQA), at its one learning rate (§5.3); each arms run of ``runs``
    (model → its :class:`~arithmech.table1.result.Table1Result`, :mod:`arithmech.table1.run`) gives its suite's primary
    math measure and primary general measure (the ``cpu`` suite's: the deciding cloze sets pooled), averaged over the
    arm's runs at its **chosen rate** (the single-rate choice on validation, named in ``rate``; the verdicts read every
    rate), each with its 95 % interval (:func:`_ci`), the runs' count, how many of them collapsed on the general
    measure (a collapsed run's numbers decide nothing) and the training samples/s. The arms sit at different rates: no
    rule reads this table."""
    rows = paper_table1_rows()
    for m, t in runs.items():
        rows += arm_rows(m, t)
    return pd.DataFrame(rows, columns=SIDE_BY_SIDE)


def paper_table1_rows() -> list[tuple]:
    """The paper's LLaMA2-7B rows of :func:`table1_side_by_side`: its four math sets and its two general sets
    averaged, at its one learning rate."""
    rows: list[tuple] = []
    for mode, r in table1_by_mode("LLaMA2-7B").items():
        rows.append(
            (
                "LLaMA2-7B (paper)",
                mode,
                "4 math sets (mean)",
                sum(r[k] for k in ("gsm8k", "addsub", "singleeq", "svamp")) / 4,
                "— (not given)",
                "MMLU, CSQA (mean)",
                (r["mmlu"] + r["csqa"]) / 2,
                "— (not given)",
                None if mode == "base" else f"{SFT['lr']:.0e}",
                1,
                None,
                r.get("samples_per_second"),
            )
        )
    return rows


def arm_rows(m: str, t: Table1Result) -> list[tuple]:
    """Model ``m``'s rows of :func:`table1_side_by_side`, one per arm of its arms run ``t``: the primary math and
    general measures averaged over the arm's runs at its chosen rate, with their intervals."""
    p, S, pooled = t.plan, t.suite, single_rate.pool(t)
    g = S.primary_general + (f" ({', '.join(pooled)})" if pooled else "")
    runs = single_rate.arm_runs(t)
    base = runs["base"][0]
    rows: list[tuple] = []
    for arm, rs in runs.items():
        mean = lambda f: sum(map(f, rs)) / len(rs)  # noqa: B023 (used at once)
        sps = [r["train"]["samples_per_second"] for r in rs if r.get("train")]
        lr = None if arm == "base" else p["arms"][arm].get("chosen_lr")
        rows.append(
            (
                m,
                arm,
                S.primary_math,
                100 * mean(lambda r: single_rate.value(r, S.primary_math)),  # noqa: B023 (used at once)
                _ci(single_rate.per_run(rs, S.primary_math)),
                g,
                100 * mean(lambda r: single_rate.value(r, S.primary_general, pooled)),  # noqa: B023 (used at once)
                _ci(single_rate.per_run(rs, S.primary_general, pooled=pooled)),
                None if lr is None else f"{lr:.0e}",
                len(rs),
                None if arm == "base" else sum(single_rate.collapsed(r, base, S.primary_general, pooled) for r in rs),
                sum(sps) / len(sps) if sps else None,
            )
        )
    return rows
