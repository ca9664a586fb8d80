"""The faithfulness curves against their random bands, from ``faithfulness.csv`` alone.

One panel per (method, ablation) — noising with mean ablation, noising with resample ablation, denoising —, the
y axis the measure the claim reads: the bounded **recovery** (each prompt's share of its own effect clipped to
[0, 1], mean over prompts; :func:`arithmech.methods.faithfulness.recovery`):

* top-n by effect rank at END (red line): with its interval at the rule's level (1 − 0.05/11, ``level``);
* the same circuits' **unclipped** mean recovery (red hollow squares, drawn at the nearer end of :data:`RAW_SPAN`
  when outside it; the tooltip has the value and the share of prompts above 1): clipping hides over-recovery,
  this shows it;
* random circuits of n components outside the top n at END (grey): their median and 5–95% band
  (:func:`arithmech.methods.faithfulness.band`);
* the cross-position circuit (red diamond, :mod:`arithmech.methods.faithfulness_sites`: operand-reading heads at
  A, B, operator and END plus the key heads at END) and its layer-matched random circuits at the same positions
  (grey diamond, 5–95%), at ``n`` = its number of heads (noising with mean ablation and denoising only);
* a dashed rule at 80%, the claim's target (``circuit-faithful``).

:func:`faithfulness_table` is the same numbers as a table (candidates beside their bands, both measures).
"""

from __future__ import annotations

import re

import altair as alt
import pandas as pd

from arithmech.core.names import components
from arithmech.methods.faithfulness_rule import summary
from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN, fig_title, integer_axis

PANELS = {
    ("noising", "mean"): "noising, mean ablation",
    ("noising", "resample"): "noising, resample ablation",
    ("converse", "mean"): "converse (circuit ablated), mean",
    ("converse", "resample"): "converse, resample",
    ("denoising", "x_r"): "denoising (circuit patched into X_c)",
}
SHOWN = [("noising", "mean"), ("noising", "resample"), ("denoising", "x_r")]
TARGET = 0.8
RAW_SPAN = (-0.5, 1.5)  # an unclipped mean outside is drawn at the nearer end (the tooltip has its value)
SERIES = {
    ("top", False): "top n by effect rank (END)",
    ("top", True): "random circuits (outside top n, END)",
    ("operands", False): "operand-reading + key heads (A, B, operator, END)",
    ("operands", True): "random heads, same layers and positions",
}
ROLE = {label: ("control" if rnd else "key") for (_, rnd), label in SERIES.items()}


def readable(ids: str) -> str:
    """faithfulness.csv's ``components`` ("MLP 0 0.0 MLP 2") as a reader sees them ("MLP 0, head 0.0, MLP 2"); a
    cross-position site "3.1@operands" as "head 3.1 (A, B, operator, END)"."""
    names = re.findall(r"MLP \d+|\d+\.\d+(?:@\w+)?", str(ids))
    if not any("@" in n for n in names):
        return components(names)
    at = {"operands": "A, B, operator, END", "end": "END"}  # a cross-position site "3.1@operands"
    return ", ".join(f"head {n.split('@')[0]} ({at[n.split('@')[1]]})" if "@" in n else components([n]) for n in names)


def curve_frame(frame: pd.DataFrame, panels=SHOWN) -> pd.DataFrame:
    """Rows ``panel, series, kind, n, share, lo, hi, components, draws`` (``share``: the recovery's value;
    ``kind``: ``curve`` for END, ``point`` for the cross-position circuit): each candidate and its random band."""
    key = list(zip(frame.method, frame.ablation))
    f = frame[[k in panels for k in key]]
    s = summary(f, "recovery")
    cand = s.assign(
        series=[SERIES[(o, False)] for o in s.order], draws=1, share=s.value, components=s.components.map(readable)
    )
    rnd = s.assign(
        series=[SERIES[(o, True)] for o in s.order], share=s.band_mid, lo=s.band_lo, hi=s.band_hi, components=""
    )
    cols = ["method", "ablation", "order", "n", "share", "lo", "hi", "components", "draws", "series"]
    out = pd.concat([cand[cols], rnd[cols]], ignore_index=True)
    out = out.assign(kind=["point" if o == "operands" else "curve" for o in out.order])
    raw = cand[cols].assign(  # the unclipped mean beside it
        share=cand.recovery_raw.clip(*RAW_SPAN),
        lo=cand.recovery_raw_lo,
        hi=cand.recovery_raw_hi,
        raw=cand.recovery_raw,
        over_one=cand.over_one,
        kind="raw",
    )
    out = pd.concat([out, raw], ignore_index=True)
    return out.assign(panel=[PANELS[(m, a)] for m, a in zip(out.method, out.ablation)])


def faithfulness_chart(frame: pd.DataFrame, model_name: str, fig: str = "Faithfulness", panels=SHOWN) -> alt.FacetChart:
    """The curves and points of :func:`curve_frame`, one panel per (method, ablation), 80% dashed."""
    data = curve_frame(frame, panels)
    color = alt.Color(
        "series:N", title=None, scale=colours.scale("selection", ROLE), legend=alt.Legend(orient="bottom", columns=2)
    )
    x = alt.X("n:Q", title="components in the circuit (n)", axis=integer_axis())
    title = "recovery (bounded, per prompt)"
    y = alt.Y("share:Q", title=title, axis=alt.Axis(format="%"))
    tip = [
        "series:N",
        "n:Q",
        alt.Tooltip("share:Q", format=".1%"),
        alt.Tooltip("lo:Q", format=".1%", title="low"),
        alt.Tooltip("hi:Q", format=".1%", title="high"),
        "components:N",
        "draws:Q",
    ]
    curve, point = alt.datum.kind == "curve", alt.datum.kind == "point"
    base = alt.Chart()
    area = (
        base.transform_filter(curve)
        .mark_area(opacity=0.2)
        .encode(x=x, y=alt.Y("lo:Q", title=title), y2="hi:Q", color=color)
    )
    line = base.transform_filter(curve).mark_line(point=True).encode(x=x, y=y, color=color, tooltip=tip)
    bar = (
        base.transform_filter(point)
        .mark_rule(strokeWidth=2)
        .encode(x=x, y=alt.Y("lo:Q", title=title), y2="hi:Q", color=color)
    )
    dot = (
        base.transform_filter(point)
        .mark_point(shape="diamond", filled=True, size=70)
        .encode(x=x, y=y, color=color, tooltip=tip)
    )
    unclipped = _unclipped_points(x, y, color)
    target = base.mark_rule(strokeDash=[4, 3], color=colours.colour("reference", "marker")).encode(y=alt.datum(TARGET))
    layers = (area, line, bar, dot) + ((unclipped,) if (data.kind == "raw").any() else ()) + (target,)
    chart = (
        alt.layer(*layers, data=data)
        .properties(width=COLUMN // 2 - 30, height=180)
        .facet(facet=alt.Facet("panel:N", title=None, sort=[PANELS[p] for p in panels]), columns=3)
    )
    return chart.properties(title=_faithfulness_title(frame, (data.kind == "raw").any(), model_name, fig))


def _unclipped_points(x: alt.X, y: alt.Y, color: alt.Color) -> alt.Chart:
    """The hollow squares' layer: each point's unclipped mean recovery (the bounded share's mean hides prompts
    above 1), with how many prompts go above 1."""
    rtip = [
        "series:N",
        "n:Q",
        alt.Tooltip("raw:Q", format=".1%", title="unclipped mean"),
        alt.Tooltip("lo:Q", format=".1%", title="low"),
        alt.Tooltip("hi:Q", format=".1%", title="high"),
        alt.Tooltip("over_one:Q", format=".0%", title="prompts above 1"),
    ]
    return (
        alt.Chart()
        .transform_filter(alt.datum.kind == "raw")
        .mark_point(shape="square", filled=False, size=40)
        .encode(x=x, y=y, color=color, tooltip=rtip)
    )


def _faithfulness_title(frame: pd.DataFrame, has_raw: bool, model_name: str, fig: str):
    """The chart's title: the recovery measure, how many prompts, the interval's level, the hollow squares (when
    drawn), the random circuits' band and the 80% target."""
    n_p = int(frame.n_prompts.iloc[0]) if len(frame) else 0
    what = "per prompt (LD − LD(baseline)) / (LD(X_r) − LD(baseline)) clipped to [0, 1], mean over"
    level = f"{frame.level.iloc[0]:.1%}" if len(frame) else "95%"
    hollow = (
        f"; hollow squares: unclipped mean (drawn at {RAW_SPAN[0]:.0%} / {RAW_SPAN[1]:.0%} when outside)"
        if has_raw
        else ""
    )
    return fig_title(
        fig,
        f"does the circuit keep the answer alone, and bring it back into X_c? {model_name}",
        [
            f"{what} {n_p} evaluation-side prompts; bars: {level} cluster bootstrap{hollow};",
            "grey: 5–95% of random circuits (END: outside the top n; diamonds: heads of the same layers at "
            "the same positions); dashed: 80%",
        ],
    )


def faithfulness_table(frame: pd.DataFrame, ns=(1, 2, 3, 5, 10, 20)) -> pd.DataFrame:
    """Each candidate at a few ``n`` (the cross-position circuit at its own): the bounded recovery [interval] beside
    its unclipped mean [interval] and share of used prompts above 1, the prompts and problem
    clusters it rests on, its random band [5%, 95%] and maximum, and the ratio-of-means share [interval], one row per
    (method, ablation, circuit)."""
    pct = lambda v: "—" if pd.isna(v) else f"{v:.0%}"
    cell = lambda v, a, b: f"{pct(v)} [{pct(a)}, {pct(b)}]"
    sh = summary(frame, "share")
    rec = summary(frame, "recovery")
    keys = ["task", "method", "ablation", "positions", "n", "order"]
    s = rec.merge(sh[keys + ["value", "lo", "hi"]], on=keys, suffixes=("", "_share"))
    s = s[s.n.isin(ns) | (s.order == "operands")]
    out = {
        "run": [PANELS[(m, a)] for m, a in zip(s.method, s.ablation)],
        "n": s.n,
        "circuit": [
            ("across positions: " if o == "operands" else "top n, END: ") + readable(c)
            for o, c in zip(s.order, s.components)
        ],
        "recovery": [cell(v, a, b) for v, a, b in zip(s.value, s.lo, s.hi)],
        "unclipped (share > 1)": [
            f"{cell(v, a, b)} ({pct(o)})"
            for v, a, b, o in zip(s.recovery_raw, s.recovery_raw_lo, s.recovery_raw_hi, s.over_one)
        ],
        "prompts used (clusters)": [f"{u} of {p} ({c})" for u, p, c in zip(s.n_used, s.n_prompts, s.n_used_clusters)],
    }
    out["random band"] = [
        cell(m, a, b) + f", max {pct(x)}" for m, a, b, x in zip(s.band_mid, s.band_lo, s.band_hi, s.band_max)
    ]
    out["share (ratio of means)"] = [cell(v, a, b) for v, a, b in zip(s.value_share, s.lo_share, s.hi_share)]
    return pd.DataFrame(out).reset_index(drop=True)
