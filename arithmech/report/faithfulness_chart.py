"""The faithfulness curve against its random band (issue #26), from ``faithfulness.csv`` alone.

One panel per (method, ablation) — noising with mean ablation, noising with resample ablation, denoising —:

* top-n by effect rank (red): the share of the counterfactual's LD effect the circuit recovers, with its 95%
  cluster-bootstrap interval;
* random circuits (grey): the median of the random draws of n components outside the top N and the band from their
  5% to their 95% quantile (:func:`arithmech.methods.faithfulness.band`);
* a dashed rule at 80%, the claim's target (``circuit-faithful``).

:func:`faithfulness_table` is the same numbers as a table (top-n rows beside the band).
"""
from __future__ import annotations

import re

import altair as alt
import pandas as pd

from arithmech.core.names import components
from arithmech.methods.faithfulness import band, summary
from arithmech.report import colours
from arithmech.report.plots import COLUMN, fig_title, integer_axis

PANELS = {("noising", "mean"): "noising, mean ablation", ("noising", "resample"): "noising, resample ablation",
          ("converse", "mean"): "converse (circuit ablated), mean", ("converse", "resample"): "converse, resample",
          ("denoising", "x_r"): "denoising (circuit patched into X_c)"}
SHOWN = [("noising", "mean"), ("noising", "resample"), ("denoising", "x_r")]
TARGET = 0.8


def readable(ids: str) -> str:
    """faithfulness.csv's ``components`` ("MLP 0 0.0 MLP 2") as a reader sees them ("MLP 0, head 0.0, MLP 2")."""
    return components(re.findall(r"MLP \d+|\d+\.\d+", str(ids)))


def curve_frame(frame: pd.DataFrame, panels=SHOWN) -> pd.DataFrame:
    """Rows ``panel, series, n, share, lo, hi, components, draws``: the top-n curve and the random band per panel."""
    key = list(zip(frame.method, frame.ablation))
    f = frame[[k in panels for k in key]]
    top = f[f.order == "top"].assign(series="top n by effect rank", draws=1, components=lambda d: d.components.map(readable))[
        ["method", "ablation", "n", "share", "lo", "hi", "components", "draws"]]
    b = band(f).rename(columns={"band_mid": "share", "band_lo": "lo", "band_hi": "hi"}).assign(
        series="random circuits (outside top N)", components="")
    out = pd.concat([top.assign(series="top n by effect rank"), b[top.columns.tolist() + ["series"]]], ignore_index=True)
    return out.assign(panel=[PANELS[(m, a)] for m, a in zip(out.method, out.ablation)])


def faithfulness_chart(frame: pd.DataFrame, model_name: str, fig: str = "Faithfulness", panels=SHOWN) -> alt.Chart:
    """The curves of :func:`curve_frame`, one panel per (method, ablation), 80% dashed."""
    data = curve_frame(frame, panels)
    series = ["top n by effect rank", "random circuits (outside top N)"]
    color = alt.Color("series:N", title=None, scale=colours.scale("selection", dict(zip(series, ["key", "control"]))),
                      legend=alt.Legend(orient="bottom"))
    x = alt.X("n:Q", title="components in the circuit (n)", axis=integer_axis())
    y = alt.Y("share:Q", title="share of the effect recovered", axis=alt.Axis(format="%"))
    tip = ["series:N", "n:Q", alt.Tooltip("share:Q", format=".1%"), alt.Tooltip("lo:Q", format=".1%", title="low"),
           alt.Tooltip("hi:Q", format=".1%", title="high"), "components:N", "draws:Q"]
    base = alt.Chart()
    area = base.mark_area(opacity=0.2).encode(x=x, y=alt.Y("lo:Q", title="share of the effect recovered"), y2="hi:Q",
                                              color=color)
    line = base.mark_line(point=True).encode(x=x, y=y, color=color, tooltip=tip)
    target = base.mark_rule(strokeDash=[4, 3], color=colours.colour("reference", "marker")).encode(y=alt.datum(TARGET))
    chart = alt.layer(area, line, target, data=data).properties(width=COLUMN // 2 - 30, height=180).facet(
        facet=alt.Facet("panel:N", title=None, sort=[PANELS[p] for p in panels]), columns=3)
    n_p = int(frame.n_prompts.iloc[0]) if len(frame) else 0
    return chart.properties(title=fig_title(
        fig, f"does the top-n circuit recover the counterfactual's effect alone? {model_name}",
        [f"share of LD(X_r) − LD(baseline), {n_p} evaluation-side prompts; bands: 95% cluster bootstrap (top n),",
         "5–95% of the random circuits of n components outside the top n; dashed: 80%"]))


def faithfulness_table(frame: pd.DataFrame, ns=(1, 2, 3, 5, 10, 20)) -> pd.DataFrame:
    """Top-n share [interval] beside the random band [5%, 95%] at a few ``n``, one row per (method, ablation, n)."""
    s = summary(frame)
    s = s[s.n.isin(ns)]
    pct = lambda v: "—" if pd.isna(v) else f"{v:.0%}"
    return pd.DataFrame({"run": [PANELS[(m, a)] for m, a in zip(s.method, s.ablation)], "n": s.n,
                         "top n": [f"{pct(v)} [{pct(a)}, {pct(b)}]" for v, a, b in zip(s.share, s.lo, s.hi)],
                         "random band": [f"{pct(m)} [{pct(a)}, {pct(b)}]" for m, a, b in
                                         zip(s.band_mid, s.band_lo, s.band_hi)],
                         "circuit (top n by effect rank)": s.components.map(readable)}).reset_index(drop=True)
