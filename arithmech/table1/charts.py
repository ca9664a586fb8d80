"""Table 1's charts: the math-gain vs general-change trade-off, the arms with their intervals, full SFT's learning
curve, and the confirmation's fresh runs on the exploration's trade-off plane.

Builders take what the rules computed — the frames of :mod:`arithmech.table1.verdicts`, the grid points of
:func:`arithmech.table1.frontier.curves_of`, a :class:`~arithmech.table1.result.Table1Result`'s curve, a
:class:`~arithmech.table1.confirmation.Confirmation` — and compute nothing of their own.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN, integer_axis
from arithmech.report.views.tables import TOY_NAMES
from arithmech.table1 import protocol
from arithmech.table1.confirmation import Confirmation
from arithmech.table1.frontier import Curves
from arithmech.table1.result import Table1Result
from arithmech.table1.train import KNEE as KNEE_SHARE

ARM_SCALE = colours.scale("arm")  # base, full, precise-key (red: key), precise-random (grey: random)
_BOTTOM = alt.Legend(orient="bottom", labelLimit=400)


def tradeoff_chart(
    frame: pd.DataFrame, title: str = "what each run learnt and what it lost", subtitle: str | None = None
) -> alt.LayerChart | alt.FacetChart:
    """One point per fine-tuned run (arm × seed × learning rate): x = change of the primary general
    measure from base, y = change of the primary math measure; filled = the arm's chosen rate, hollow =
    the other rates of its grid; a run that collapsed on the general measure (the gate of
    :mod:`arithmech.table1.verdicts`) is a cross. ``frame``: :func:`arithmech.table1.verdicts.tradeoff_frame`."""
    if "collapsed" not in frame:
        frame = frame.assign(collapsed=False)
    math, general = frame["math"].iloc[0], frame["general"].iloc[0]
    base = alt.Chart(frame).encode(
        x=alt.X("general_change:Q", title=f"change of {general} from base", axis=alt.Axis(format="+.0%")),
        y=alt.Y("math_gain:Q", title=f"change of {math} from base", axis=alt.Axis(format="+.0%")),
        color=alt.Color("arm:N", scale=ARM_SCALE, title=None, legend=_BOTTOM),
        tooltip=[
            "arm",
            "seed",
            alt.Tooltip("lr:Q", format=".0e"),
            "chosen",
            "collapsed",
            alt.Tooltip("math_gain:Q", format="+.1%"),
            alt.Tooltip("general_change:Q", format="+.1%"),
        ],
    )
    zero = pd.DataFrame({"v": [0.0]})
    return alt.layer(
        alt.Chart(zero).mark_rule(color=colours.colour("reference", "zero")).encode(x="v:Q"),
        alt.Chart(zero).mark_rule(color=colours.colour("reference", "zero")).encode(y="v:Q"),
        base.transform_filter("datum.chosen && !datum.collapsed").mark_point(filled=True, size=80),
        base.transform_filter("!datum.chosen && !datum.collapsed").mark_point(filled=False, size=60, opacity=0.7),
        base.transform_filter("datum.collapsed").mark_point(shape="cross", filled=True, size=90),
    ).properties(
        width=COLUMN,
        height=300,
        title=alt.TitleParams(
            title,
            subtitle=subtitle
            or [
                "filled: the arm's chosen learning rate (each seed); hollow: the rest of its grid (first seed)",
                "cross: collapsed (kept under half its base margin over chance)",
            ],
        ),
    )


def arms_chart(
    table: pd.DataFrame, measures: list[str], title: str = "Table 1: change from base, 95% intervals"
) -> alt.FacetChart:
    """Each fine-tuned arm's change from base on ``measures``, with its hierarchical bootstrap interval (seeds and
    items): one panel per measure, one row per arm in it (the interval as a bar, the change as a dot).
    ``table``: :func:`arithmech.table1.verdicts.arm_table`.

    The rows go to the facet, never to the layers inside it: a layer holding its own data is not split by
    the facet, and every panel would draw every arm × measure point (a bug once). The zero line is
    a datum, so it needs no data of its own either."""
    df = table[(table.arm != "base") & table.measure.isin(measures)][
        ["arm", "measure", "delta", "delta_ci_low", "delta_ci_high", "runs"]
    ]

    def shown(m: str) -> str:  # "two_digit" → "two-digit (math)"
        return TOY_NAMES.get(m, m)

    df = df.assign(measure=df.measure.map(shown))
    arms = [a for a in ARM_SCALE.domain if a in set(df.arm)]
    enc = alt.Chart().encode(
        y=alt.Y("arm:N", title=None, sort=arms, scale=alt.Scale(domain=arms)),
        color=alt.Color("arm:N", scale=ARM_SCALE, legend=None),
    )
    layer = alt.layer(
        alt.Chart().mark_rule(color=colours.colour("reference", "zero")).encode(x=alt.datum(0)),
        enc.mark_rule(strokeWidth=2).encode(
            x=alt.X("delta_ci_low:Q", title="change from base", axis=alt.Axis(format="+.0%")), x2="delta_ci_high:Q"
        ),
        enc.mark_point(filled=True, size=60).encode(
            x="delta:Q",
            tooltip=[
                "arm",
                "measure",
                alt.Tooltip("delta:Q", format="+.3f"),
                alt.Tooltip("delta_ci_low:Q", format="+.3f", title="low"),
                alt.Tooltip("delta_ci_high:Q", format="+.3f", title="high"),
                "runs",
            ],
        ),
    ).properties(width=COLUMN // 2 - 20, height=22 * max(1, len(arms)) + 20)
    return layer.facet(
        facet=alt.Facet("measure:N", sort=[shown(m) for m in measures], title=None), columns=2, data=df, title=title
    ).resolve_scale(x="independent")


def frontier_chart(
    runs: pd.DataFrame,
    points: pd.DataFrame,
    title: str = "every run, and each arm's frontier",
    subtitle: list[str] | str | None = None,
) -> alt.LayerChart | alt.FacetChart:
    """The trade-off plane over whole curves: every run as a small hollow mark (a cross where it
    collapsed), each grid point's run mean as a filled dot, and each arm's frontier (the Pareto set of its points
    that did not collapse) as a line through its points; x = change of the primary general measure from base,
    y = math gain. ``runs``, ``points``: :func:`arithmech.table1.curve_views.run_frame` and
    :func:`arithmech.table1.curve_views.point_frame`. One colour per arm (:mod:`arithmech.report.charts.colours`)."""
    arms = [a for a in ARM_SCALE.domain if a in set(runs.arm) | set(points.arm)]
    colour = alt.Color("arm:N", scale=colours.scale("arm", arms), title=None, legend=_BOTTOM)
    x = alt.X("general:Q", title=f"change of {runs['general_name'].iloc[0]} from base", axis=alt.Axis(format="+.0%"))
    y = alt.Y(
        "math:Q", title=f"change of {runs['math_name'].iloc[0]} from base (math gain)", axis=alt.Axis(format="+.0%")
    )
    tip: list[str | alt.Tooltip] = [
        "arm",
        alt.Tooltip("lr:Q", format=".0e", title="rate"),
        alt.Tooltip("math:Q", format="+.1%"),
        alt.Tooltip("general:Q", format="+.1%"),
    ]
    run = alt.Chart(runs).encode(x=x, y=y, color=colour, tooltip=tip + ["run", "collapsed"])
    pt = alt.Chart(points).encode(x=x, y=y, color=colour, tooltip=tip + ["runs", "frontier"])
    zero = pd.DataFrame({"v": [0.0]})
    return alt.layer(
        alt.Chart(zero).mark_rule(color=colours.colour("reference", "zero")).encode(x="v:Q"),
        alt.Chart(zero).mark_rule(color=colours.colour("reference", "zero")).encode(y="v:Q"),
        run.transform_filter("!datum.collapsed").mark_point(filled=False, size=30, opacity=0.55),
        run.transform_filter("datum.collapsed").mark_point(shape="cross", filled=True, size=60, opacity=0.8),
        pt.transform_filter("datum.frontier").mark_line(strokeWidth=2).encode(order="math:Q"),
        pt.transform_filter("!datum.collapsed").mark_point(filled=True, size=90, opacity=0.9),
        pt.transform_calculate(rate="format(datum.lr, '.0e')")
        .mark_text(align="left", dx=7, dy=-7, fontSize=10)
        .encode(text="rate:N"),
    ).properties(
        width=COLUMN,
        height=340,
        title=alt.TitleParams(
            title,
            subtitle=subtitle
            or [
                "hollow: one run (seed or draw); filled: a grid point's mean over its runs (labelled with its rate);",
                "line: the arm's frontier (the Pareto set of its points that did not collapse);",
                "cross: a run that collapsed (its interval below half of base's margin over chance)",
            ],
        ),
    )


def curve_chart(t: Table1Result) -> alt.LayerChart | alt.FacetChart | alt.VConcatChart | None:
    """Full SFT's validation learning curve with its knee (the arms' step budget) and, where the curve
    recorded them, the general skills' validation values along the same run (the curve of forgetting);
    None without a curve."""
    c = t.curve
    if c is None:
        return None
    df = pd.DataFrame(c["points"])
    line = (
        alt.Chart(df)
        .mark_line(point=True, color=colours.colour("arm", "full"))
        .encode(
            x=alt.X("step:Q", title="optimizer steps (full SFT)", axis=integer_axis()),
            y=alt.Y("val_math:Q", title="validation math accuracy", axis=alt.Axis(format=".0%")),
            tooltip=["step", alt.Tooltip("val_math:Q", format=".1%"), alt.Tooltip("val_nll:Q", format=".3f")],
        )
    )
    knee = (
        alt.Chart(pd.DataFrame({"step": [c["knee"]]}))
        .mark_rule(strokeDash=[4, 3], color=colours.colour("reference", "marker"))
        .encode(x="step:Q")
    )
    learnt = alt.layer(line, knee).properties(
        width=COLUMN,
        height=220,
        title=alt.TitleParams(
            "full SFT's learning curve: the step budget is its knee",
            subtitle=[
                f"knee: {c['knee']} steps, the fewest reaching base + {KNEE_SHARE} x (best - base)",
                f"lr {c['lr']:.0e} constant after warm-up, batch {c['batch_size']}",
            ],
        ),
    )
    kept = [k for k in df.columns if k.startswith("val_") and k not in ("val_math", "val_nll")]
    if not kept:
        return learnt
    long = df.melt(id_vars="step", value_vars=kept, var_name="measure", value_name="value")
    forgot = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="optimizer steps (full SFT)", axis=integer_axis()),
            y=alt.Y("value:Q", title="validation value"),
            color=alt.Color(
                "measure:N",
                title=None,
                scale=alt.Scale(domain=kept, range=colours.series(len(kept))),
                legend=alt.Legend(orient="bottom"),
            ),
            tooltip=["step", "measure", alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(width=COLUMN, height=180, title="what the same run keeps (validation items of the general skills)")
    )
    return alt.vconcat(learnt, alt.layer(forgot, knee))


LIKE = {
    "key": "precise-key",
    "key-qo": "precise-key",
    "full-equal-gain": "full",
    "format": "base-shots",
    "random-any": "precise-random-any",
    "random-layer-qo": "precise-random",
}
"""Each confirmatory arm's colour: the exploratory arm it is a version of (the format arm: base-shots' colour)."""


def confirmation_chart(c: Confirmation, curves: Curves) -> alt.LayerChart | alt.FacetChart:
    """The exploration's runs (small, hollow: every run of every grid point) on the trade-off plane — carry gain over
    base against the pooled cloze change — with the confirmatory runs marked (large, filled, shaped by arm)."""
    rows = []
    for arm, pts in curves.points.items():
        for p in pts:
            for m, g in zip(p.values(curves.math), p.values("general")):
                rows.append({"arm": arm, "run": f"{arm} {p.lr:.0e}", "math": m, "general": g, "phase": "exploration"})
    if c.base is not None:  # the confirmatory runs' changes from base on the fresh items
        b_math = sum(protocol.scores(c.base, "carry")) / 100 / protocol.ITEMS.carry_fresh
        b_gen = sum(protocol.scores(c.base, "cloze")) / 100 / len(protocol.scores(c.base, "cloze"))
        for arm, recs in c.records.items():
            for r in recs:
                math = sum(protocol.scores(r, "carry")) / 100 / protocol.ITEMS.carry_fresh - b_math
                gen = protocol.scores(r, "cloze")
                rows.append(
                    {
                        "arm": LIKE[arm],
                        "run": f"{arm} seed {r['seed']}",
                        "math": math,
                        "general": sum(gen) / 100 / len(gen) - b_gen,
                        "phase": f"confirmation: {arm}",
                    }
                )
    frame = pd.DataFrame(rows)
    enc = dict(
        x=alt.X("general:Q", title="change of pooled cloze from base", axis=alt.Axis(format="+.0%")),
        y=alt.Y("math:Q", title="change of carry accuracy from base", axis=alt.Axis(format="+.0%")),
        color=alt.Color("arm:N", scale=colours.scale("arm"), title=None, legend=alt.Legend(orient="bottom")),
        tooltip=["run", "phase", alt.Tooltip("math:Q", format="+.1%"), alt.Tooltip("general:Q", format="+.1%")],
    )
    explored = alt.Chart(frame[frame.phase == "exploration"]).mark_point(filled=False, size=25, opacity=0.35)
    layers = [explored.encode(**enc)]
    confirmed = frame[frame.phase != "exploration"]
    if len(confirmed):  # filled and larger; the colour names the arm, the title says filled is fresh seeds
        layers.append(alt.Chart(confirmed).mark_point(filled=True, size=110, opacity=0.9).encode(**enc))
    return alt.layer(*layers).properties(
        width=COLUMN,
        height=320,
        title=alt.TitleParams(
            "the exploration's 149 runs (hollow) and the confirmation's fresh seeds (filled)",
            subtitle=[
                "each point one run: carry gain (up) against the pooled cloze change (right), both from base",
                "the exploration on its items, the confirmation on fresh items (each against base on the same items)",
            ],
        ),
    )
