"""The attention control chart: each key head's role mass and density beside every non-key head.

One panel per ``measure`` (mass, density) × ``view`` (with / without the first position); per role
a grey band spans the non-key heads' 5th–95th percentiles with a tick at their median, and each key
head is a point (hover: value ± se, percentile among the non-key heads, the rule's verdict).
The numbers come from ``attention_baseline.csv``
(:func:`arithmech.methods.attention.nonkey_baseline`), so chart, table and sentences agree.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.report.plots import COLUMN, fig_title

LEGEND = alt.Legend(orient="bottom", labelLimit=400)
VERDICT_SHAPES = alt.Scale(domain=["holds", "does not hold", "inconclusive"], range=["diamond", "circle", "triangle-up"])


def nonkey_band_chart(baseline: pd.DataFrame, fig: str = "Fig. 5 control") -> alt.FacetChart:
    """Per role: the non-key heads' 5–95 % band and median, the key heads as points.

    ``baseline``: attention_baseline.csv rows ``name, role, measure, view, value, se, nonkey_median,
    nonkey_p05, nonkey_p95, percentile, n_nonkey, verdict`` (one per key head × role × measure × view).
    """
    roles = list(dict.fromkeys(baseline.role))
    band = baseline.drop_duplicates(["role", "measure", "view"])
    data = pd.concat([band.assign(kind="band"), baseline.assign(kind="key")], ignore_index=True)
    n_nonkey = int(band.n_nonkey.max()) if len(band) else 0
    n = int(baseline.n.max()) if len(baseline) else 0
    x = alt.X("role:N", sort=roles, title=None, axis=alt.Axis(labelAngle=0))
    base = alt.Chart()
    bands = base.transform_filter(alt.datum.kind == "band").mark_bar(color="#d5d8dc", size=18).encode(
        x=x, y=alt.Y("nonkey_p05:Q", title="value"), y2="nonkey_p95:Q",
        tooltip=["role", "measure", "view", alt.Tooltip("nonkey_p05:Q", format=".3f", title="non-key 5 %"),
                 alt.Tooltip("nonkey_median:Q", format=".3f", title="non-key median"),
                 alt.Tooltip("nonkey_p95:Q", format=".3f", title="non-key 95 %"), "n_nonkey"])
    ticks = base.transform_filter(alt.datum.kind == "band").mark_tick(color="#555", size=18, thickness=2).encode(x=x, y="nonkey_median:Q")
    points = base.transform_filter(alt.datum.kind == "key").mark_point(filled=True, size=70, opacity=0.85).encode(
        x=alt.X("role:N", sort=roles), y="value:Q",
        xOffset=alt.XOffset("name:N"),
        color=alt.Color("name:N", title="key head", legend=LEGEND),
        shape=alt.Shape("verdict:N", scale=VERDICT_SHAPES, title="value above the non-key 95 %?", legend=LEGEND),
        tooltip=["name", "role", "measure", "view", alt.Tooltip("value:Q", format=".3f"),
                 alt.Tooltip("se:Q", format=".3f"), alt.Tooltip("percentile:Q", format=".0f"), "verdict", "n"])
    width = max(160, min(COLUMN // 2 - 30, 42 * len(roles)))
    return alt.layer(bands, ticks, points, data=data).properties(width=width, height=150).facet(
        row=alt.Row("measure:N", title=None, sort=["mass", "density"]),
        column=alt.Column("view:N", title=None, sort=["with first", "without first"]),
    ).resolve_scale(y="independent").properties(title=fig_title(
        fig, "Key heads against every other head, by role",
        f"grey: 5–95 % of the {n_nonkey} non-key heads (tick: median); points: key heads; "
        f"mean over n = {n} prompts; 'first' = position 0"))
