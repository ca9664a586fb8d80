"""Fig. 3 with its controls: knockout by effect rank vs random components outside the treated ones, and the floor lines.

One chart per kind (heads or MLPs), from ``knockout.csv`` (:data:`arithmech.methods.knockout_run.COLUMNS`):

* effect rank (red): accuracy after knocking out the top-``k`` components, with its Wilson 95% band;
* random rank (grey): the mean over the random orders (drawn outside the key components and the top k by effect rank) and
  the band from their 5% to their 95% quantile;
* two dashed rules from the sanity rows: everything of that kind knocked out ("all heads out" /
  "all MLPs out") and the majority floor (always answering the most frequent answer token). A red line
  that only falls to the "all out" rule while that rule sits above the floor shows an ablation that
  does not remove the information.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.report.plots import COLUMN, PALETTE, fig_title, integer_axis

_BOTTOM = alt.Legend(orient="bottom", direction="vertical", labelLimit=220)   # two legends side by side fit the column

RULES = {"head": ("all-heads-out", "all heads out"), "mlp": ("all-mlps-out", "all MLPs out")}


def knockout_frames(knockout: pd.DataFrame, kind: str, tasks, positions: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(curve, rules)``: the curve rows of ``kind`` (effect rank per ``k``; random rank summarised per
    ``k`` as mean, 5% and 95% quantiles over orders) and the two rule values per task."""
    df = knockout[(knockout["kind"] == kind) & (knockout["positions"] == positions)]
    if tasks is not None:
        df = df[df["task"].isin([tasks] if isinstance(tasks, str) else tasks)]
    else:                                   # tasks with a curve (several k), not a single key-head point
        curves = df[df.order == "effect-rank"].groupby("task")["k"].nunique()
        df = df[df["task"].isin(curves[curves > 1].index)]
    if df.empty:
        raise ValueError(f"no knockout rows of kind {kind!r} at positions {positions!r}")
    eff = df[df.order == "effect-rank"][["task", "k", "accuracy", "ci_low", "ci_high", "n"]].assign(
        series="effect rank", orders=1)
    rnd = df[df.order == "random-rank"].groupby(["task", "k"], sort=False).accuracy.agg(
        accuracy="mean", ci_low=lambda a: a.quantile(0.05), ci_high=lambda a: a.quantile(0.95), orders="size").reset_index()
    rnd = rnd.merge(df[["task", "n"]].drop_duplicates("task"), on="task").assign(series="random rank (outside top k, key)")
    curve = pd.concat([eff, rnd], ignore_index=True)
    s = knockout[(knockout["kind"] == "sanity") & (knockout["positions"] == positions) &
                 knockout["task"].isin(curve.task.unique()) &
                 knockout["order"].isin([RULES[kind][0], "majority-floor"])]
    rules = s.assign(rule=s.order.map({RULES[kind][0]: RULES[kind][1], "majority-floor": "majority floor"}))[
        ["task", "rule", "accuracy", "ci_low", "ci_high", "n"]]
    return curve, rules


def knockout_control_chart(knockout: pd.DataFrame, kind: str = "head", tasks: str | list[str] | None = None,
                           fig: str = "Fig. 3", positions: str = "end") -> alt.Chart:
    """Fig. 3 with the random band (5–95% over orders of components outside the key ones and the top k) and the floor lines."""
    curve, rules = knockout_frames(knockout, kind, tasks, positions)
    x = alt.X("k:Q", title=f"number of {kind}s knocked out (k)", axis=integer_axis())
    y = alt.Y("accuracy:Q", title="accuracy", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1]))
    color = alt.Color("series:N", title=None, legend=_BOTTOM,
                      scale=alt.Scale(domain=["effect rank", "random rank (outside top k, key)"], range=[PALETTE[0], PALETTE[6]]))
    tip = ["series:N", "k:Q", alt.Tooltip("accuracy:Q", format=".1%"), alt.Tooltip("ci_low:Q", format=".1%", title="low"),
           alt.Tooltip("ci_high:Q", format=".1%", title="high"), "orders:Q", "n:Q"]
    # One frame for every layer (``part`` tells them apart): a facet by task splits only data given at its top.
    data = pd.concat([curve.assign(part="curve"), rules.assign(part="rule")], ignore_index=True)
    base = alt.Chart().transform_filter(alt.datum.part == "curve")
    band = base.mark_area(opacity=0.2).encode(x=x, y=alt.Y("ci_low:Q", title="accuracy"), y2="ci_high:Q", color=color)
    line = base.mark_line(point=True).encode(x=x, y=y, color=color, tooltip=tip)
    rule = alt.Chart().transform_filter(alt.datum.part == "rule").mark_rule(strokeDash=[4, 3]).encode(
        y="accuracy:Q", color=alt.Color("rule:N", title=None, legend=_BOTTOM,
                                        scale=alt.Scale(domain=[RULES[kind][1], "majority floor"],
                                                        range=[PALETTE[3], "#555555"])),
        tooltip=["rule:N", alt.Tooltip("accuracy:Q", format=".1%"), alt.Tooltip("ci_low:Q", format=".1%", title="low"),
                 alt.Tooltip("ci_high:Q", format=".1%", title="high"), "n:Q"])
    n_tasks = curve["task"].nunique()
    chart = alt.layer(band, line, rule, data=data).resolve_scale(color="independent").properties(
        width=COLUMN if n_tasks == 1 else COLUMN // 2 - 20, height=220 if n_tasks == 1 else 160)
    if n_tasks > 1:
        chart = chart.facet(facet=alt.Facet("task:N", title=None, sort=list(dict.fromkeys(curve["task"]))), columns=2)
    where = "at END" if positions == "end" else "at every position"
    return chart.properties(title=fig_title(
        fig, f"knocking out {kind}s by effect rank vs random {kind}s outside the top k",
        [f"mean ablation {where} (reference-pool means); bands: Wilson 95% (effect rank),",
         f"5–95% of the random orders; dashed: all {kind}s out and the majority floor"]))
