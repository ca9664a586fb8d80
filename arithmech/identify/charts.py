"""Fig. 3 with its controls: knockout by effect rank vs random components outside the treated ones, and the floor lines.

One chart per kind (heads or MLPs), from ``knockout.csv`` (:data:`arithmech.methods.ablation.run.COLUMNS`):

* effect rank (red): accuracy after knocking out the top-``k`` components, with its Wilson 95% band;
* random rank (grey): the mean over the random orders (drawn outside the key components and the top k by effect rank)
  and the band from their 5% to their 95% quantile, at every k where the file has random rows (identify runs them at
  every k of the curve that has k components outside the top k and the key ones; an older file has them at a few
  k only): the band is drawn over runs of consecutive curve k and as a vertical bar at each k, never across a k
  without random rows, and :func:`random_coverage` says in the subtitle where it stops or is missing;
* colours from the ``selection`` role (red: effect rank, grey: random) and the ``reference`` role
  (:mod:`arithmech.report.charts.colours`);
* two dashed rules from the sanity rows: everything of that kind knocked out ("all heads out" /
  "all MLPs out") and the majority floor (always answering the most frequent answer token). A red line
  that only falls to the "all out" rule while that rule sits above the floor shows an ablation that
  does not remove the information.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN, fig_title, integer_axis

_BOTTOM = alt.Legend(orient="bottom", direction="vertical", labelLimit=220)  # two legends side by side fit the column

RULES = {"head": ("all-heads-out", "all heads out"), "mlp": ("all-mlps-out", "all MLPs out")}
PLURAL = {"head": "heads", "mlp": "MLPs"}
SERIES = {"effect rank": "key", "random rank (outside top k, key)": "control"}  # label → selection role


def knockout_frames(knockout: pd.DataFrame, kind: str, tasks, positions: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(curve, rules)``: the curve rows of ``kind`` (effect rank per ``k``; random rank summarised per
    ``k`` as mean, 5% and 95% quantiles over orders) and the two rule values per task."""
    df = knockout[(knockout["kind"] == kind) & (knockout["positions"] == positions)]
    if tasks is not None:
        df = df[df["task"].isin([tasks] if isinstance(tasks, str) else tasks)]
    else:  # tasks with a curve (several k), not a single key-head point
        curves = df[df.order == "effect-rank"].groupby("task")["k"].nunique()
        df = df[df["task"].isin(curves[curves > 1].index)]
    if df.empty:
        raise ValueError(f"no knockout rows of kind {kind!r} at positions {positions!r}")
    eff = df[df.order == "effect-rank"][["task", "k", "accuracy", "ci_low", "ci_high", "n"]].assign(
        series="effect rank", orders=1
    )
    rnd = (
        df[df.order == "random-rank"]
        .groupby(["task", "k"], sort=False)
        .accuracy.agg(
            accuracy="mean", ci_low=lambda a: a.quantile(0.05), ci_high=lambda a: a.quantile(0.95), orders="size"
        )
        .reset_index()
    )
    rnd = rnd.merge(df[["task", "n"]].drop_duplicates("task"), on="task").assign(
        series="random rank (outside top k, key)"
    )
    curve = pd.concat([eff, rnd], ignore_index=True)
    curve["segment"] = _segments(curve)
    s = knockout[
        (knockout["kind"] == "sanity")
        & (knockout["positions"] == positions)
        & knockout["task"].isin(curve.task.unique())
        & knockout["order"].isin([RULES[kind][0], "majority-floor"])
    ]
    rules = s.assign(rule=s.order.map({RULES[kind][0]: RULES[kind][1], "majority-floor": "majority floor"}))[
        ["task", "rule", "accuracy", "ci_low", "ci_high", "n"]
    ]
    return curve, rules


def _segments(curve: pd.DataFrame) -> list[str]:
    """Per row, the run of consecutive curve ``k`` (the effect-rank ``k`` of its task) its series has rows at:
    a path drawn per segment never bridges a ``k`` where the random orders were not run."""
    out = []
    for (task, series), g in curve.groupby(["task", "series"], sort=False):
        grid = sorted(curve.loc[(curve.task == task) & (curve.series == "effect rank"), "k"]) or sorted(g.k)
        at = {k: i for i, k in enumerate(grid)}
        ks = sorted(g.k)
        seg, label = 0, {}
        for prev, k in zip([None, *ks], ks):
            if prev is not None and at.get(k, -2) != at.get(prev, -9) + 1:
                seg += 1
            label[k] = f"{task}/{series}/{seg}"
        out.append(pd.Series([label[k] for k in g.k], index=g.index))
    return pd.concat(out).reindex(curve.index).tolist() if out else []


def random_coverage(curve: pd.DataFrame, kind: str = "head", total: int | None = None) -> str | None:
    """The subtitle line saying where the random band is missing, from the curve's rows (None when the random
    orders were run at every ``k > 0`` of the effect-rank curve). ``total``: how many components of ``kind`` the
    model has (the "all out" row's ``k``).

    A draw of ``k`` components outside the top ``k`` (and the key ones) needs ``2k ≤ total`` at least: past the
    last random ``k``, the line says so where the next curve ``k`` breaks that bound, and otherwise names both
    possible causes (key components outside the top ``k`` leave even fewer; a file made before the random orders
    ran at every ``k`` has them at a few ``k`` only); gaps inside the curve can only be an older file's."""
    eff = set(curve.loc[curve.series == "effect rank", "k"]) - {0}
    rnd = set(curve.loc[curve.series != "effect rank", "k"]) - {0}
    missing = sorted(eff - rnd)
    word = PLURAL.get(kind, f"{kind}s")
    if not missing:
        return None
    if not rnd:
        return "no random orders in this file"
    last = max(rnd)
    if any(k < last for k in missing):
        return f"random orders only at k = {', '.join(map(str, sorted(rnd)))} in this file"
    if total is not None and 2 * missing[0] > total:
        return (
            f"no random band past k = {last}: a draw of k {word} outside the top k needs 2k ≤ {total} "
            f"({word} in the model)"
        )
    return (
        f"random orders up to k = {last} only: past it fewer than k {word} lie outside the top k and the "
        f"key {word}, or the file predates random orders at every k"
    )


def knockout_control_chart(
    knockout: pd.DataFrame,
    kind: str = "head",
    tasks: str | list[str] | None = None,
    fig: str = "Fig. 3",
    positions: str = "end",
) -> alt.Chart:
    """Fig. 3 with the random band (5–95% over orders of components outside the key ones and the top k) and the floor
    lines."""
    curve, rules = knockout_frames(knockout, kind, tasks, positions)
    x = alt.X("k:Q", title=f"number of {kind}s knocked out (k)", axis=integer_axis())
    y = alt.Y("accuracy:Q", title="accuracy", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1]))
    color = alt.Color("series:N", title=None, legend=_BOTTOM, scale=colours.scale("selection", SERIES))
    tip = [
        "series:N",
        "k:Q",
        alt.Tooltip("accuracy:Q", format=".1%"),
        alt.Tooltip("ci_low:Q", format=".1%", title="low"),
        alt.Tooltip("ci_high:Q", format=".1%", title="high"),
        "orders:Q",
        "n:Q",
    ]
    # One frame for every layer (``part`` tells them apart): a facet by task splits only data given at its top.
    data = pd.concat([curve.assign(part="curve"), rules.assign(part="rule")], ignore_index=True)
    base = alt.Chart().transform_filter(alt.datum.part == "curve")
    band = base.mark_area(opacity=0.2).encode(
        x=x, y=alt.Y("ci_low:Q", title="accuracy"), y2="ci_high:Q", color=color, detail="segment:N"
    )
    bars = (
        base.transform_filter(alt.datum.series != "effect rank")
        .mark_rule(opacity=0.5, strokeWidth=2)
        .encode(
            x=x,
            y="ci_low:Q",
            y2="ci_high:Q",
            color=alt.Color("series:N", scale=colours.scale("selection", SERIES), legend=None),
        )
    )
    line = base.mark_line(point=True).encode(x=x, y=y, color=color, detail="segment:N", tooltip=tip)
    rule = _floor_rules(kind)
    n_tasks = curve["task"].nunique()
    chart = (
        alt.layer(band, line, rule, bars, data=data)
        .resolve_scale(color="independent")
        .properties(width=COLUMN if n_tasks == 1 else COLUMN // 2 - 20, height=220 if n_tasks == 1 else 160)
    )
    if n_tasks > 1:
        chart = chart.facet(facet=alt.Facet("task:N", title=None, sort=list(dict.fromkeys(curve["task"]))), columns=2)
    return chart.properties(title=_control_title(knockout, curve, kind, fig, positions))


def _floor_rules(kind: str) -> alt.Chart:
    """The dashed floor lines' layer: accuracy with every ``kind`` knocked out, and the majority floor."""
    return (
        alt.Chart()
        .transform_filter(alt.datum.part == "rule")
        .mark_rule(strokeDash=[4, 3])
        .encode(
            y="accuracy:Q",
            color=alt.Color(
                "rule:N",
                title=None,
                legend=_BOTTOM,
                scale=colours.scale("reference", {RULES[kind][1]: "all out", "majority floor": "marker"}),
            ),
            tooltip=[
                "rule:N",
                alt.Tooltip("accuracy:Q", format=".1%"),
                alt.Tooltip("ci_low:Q", format=".1%", title="low"),
                alt.Tooltip("ci_high:Q", format=".1%", title="high"),
                "n:Q",
            ],
        )
    )


def _control_title(knockout: pd.DataFrame, curve: pd.DataFrame, kind: str, fig: str, positions: str):
    """The chart's title: what is knocked out where, what the bands and the dashed lines are, and how far the
    random orders reach (:func:`random_coverage`, up to the k that knocks every ``kind`` out)."""
    where = "at END" if positions == "end" else "at every position"
    out = knockout[(knockout["kind"] == "sanity") & (knockout["order"] == RULES[kind][0])]["k"]
    cover = random_coverage(curve, kind, int(out.max()) if len(out) else None)
    return fig_title(
        fig,
        f"knocking out {PLURAL.get(kind, kind + 's')} by effect rank vs random ones outside the top k",
        [
            f"mean ablation {where} (reference-pool means); bands: Wilson 95% (effect rank),",
            f"5–95% of the random orders; dashed: all {PLURAL.get(kind, kind + 's')} out and the majority floor",
        ]
        + ([cover] if cover else []),
    )
