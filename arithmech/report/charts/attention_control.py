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

from arithmech.core.names import component_label
from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN

LEGEND = alt.Legend(orient="bottom", columns=5, labelLimit=200)
VERDICT_SHAPES = alt.Scale(
    domain=["holds", "does not hold", "inconclusive"], range=["diamond", "circle", "triangle-up"]
)


def nonkey_band_chart(baseline: pd.DataFrame, fig: str = "Fig. 5 control") -> alt.FacetChart:
    """Per role: the non-key heads' 5–95 % band and median, the key heads as points.

    ``baseline``: attention_baseline.csv rows ``name, role, measure, view, value, se, nonkey_median,
    nonkey_p05, nonkey_p95, percentile, n_nonkey, verdict`` (one per key head × role × measure × view).
    """
    baseline = baseline.assign(name=baseline.name.map(component_label))  # "head 13.11", as every page names it
    roles = list(dict.fromkeys(baseline.role))
    names = list(dict.fromkeys(baseline.name))
    at = {r: i for i, r in enumerate(roles)}
    spread = lambda name: (names.index(name) - (len(names) - 1) / 2) * 0.7 / max(len(names), 1)
    band = baseline.drop_duplicates(["role", "measure", "view"])
    data = pd.concat(
        [
            band.assign(kind="band", x=band.role.map(at) - 0.4, x2=band.role.map(at) + 0.4),
            baseline.assign(kind="key", x=[at[r] + spread(n) for r, n in zip(baseline.role, baseline.name)]),
        ],
        ignore_index=True,
    )
    n_nonkey = int(band.n_nonkey.max()) if len(band) else 0
    n = int(baseline.n.max()) if len(baseline) else 0
    x = _role_axis(roles)
    bands, ticks = _band_layers(x)
    points = _key_points(x, names)
    width = max(150, min(COLUMN // 2 - 60, 36 * len(roles)))
    return (
        alt.layer(bands, ticks, points, data=data)
        .properties(width=width, height=150)
        .facet(
            row=alt.Row("measure:N", title=None, sort=["mass", "density"]),
            column=alt.Column("view:N", title=None, sort=["with first", "without first"]),
        )
        .resolve_scale(y="independent")
        .properties(
            title=alt.TitleParams(
                f"{fig} — Key heads against every other head, by role",
                subtitle=[
                    f"grey: 5–95 % of the {n_nonkey} non-key heads (tick: median); points: key heads",
                    f"◆ above their 95 % by 2 se, ▲ inconclusive, ● not; n = {n} prompts; first = position 0",
                ],
            )
        )
    )


def _role_axis(roles: list[str]) -> alt.X:
    """The x axis: one slot per role (``x`` is the role's index, a key head's point spread around it), labelled
    with the role's name."""
    label = " : ".join(f"datum.value == {i} ? '{r}'" for i, r in enumerate(roles)) + " : ''"
    return alt.X(
        "x:Q",
        title=None,
        scale=alt.Scale(domain=[-0.6, len(roles) - 0.4], nice=False),
        axis=alt.Axis(values=list(range(len(roles))), labelExpr=label, labelAngle=-35, labelOverlap=False, grid=False),
    )


def _band_layers(x: alt.X) -> tuple[alt.Chart, alt.Chart]:
    """The non-key heads' layers: their 5–95 % band per role (a grey rectangle) and its median (a tick)."""
    base = alt.Chart()
    bands = (
        base.transform_filter(alt.datum.kind == "band")
        .mark_rect(color=colours.colour("selection", "control"), opacity=0.35)
        .encode(
            x=x,
            x2="x2:Q",
            y=alt.Y("nonkey_p05:Q", title=None),
            y2="nonkey_p95:Q",
            tooltip=[
                "role",
                "measure",
                "view",
                alt.Tooltip("nonkey_p05:Q", format=".3f", title="non-key 5 %"),
                alt.Tooltip("nonkey_median:Q", format=".3f", title="non-key median"),
                alt.Tooltip("nonkey_p95:Q", format=".3f", title="non-key 95 %"),
                "n_nonkey",
            ],
        )
    )
    ticks = (
        base.transform_filter(alt.datum.kind == "band")
        .mark_rule(color=colours.colour("reference", "marker"), strokeWidth=2)
        .encode(x=x, x2="x2:Q", y="nonkey_median:Q")
    )
    return bands, ticks


def _key_points(x: alt.X, names: list[str]) -> alt.Chart:
    """The key heads' layer: one point per head, coloured by head, shaped by its verdict against the band."""
    return (
        alt.Chart()
        .transform_filter(alt.datum.kind == "key")
        .mark_point(filled=True, size=70, opacity=0.85)
        .encode(
            x=x,
            y="value:Q",
            color=alt.Color(
                "name:N",
                title="key head",
                sort=names,
                legend=LEGEND,
                scale=alt.Scale(domain=names, range=colours.series(len(names))),
            ),
            shape=alt.Shape("verdict:N", scale=VERDICT_SHAPES, legend=None),
            tooltip=[
                "name",
                "role",
                "measure",
                "view",
                alt.Tooltip("value:Q", format=".3f"),
                alt.Tooltip("se:Q", format=".3f"),
                alt.Tooltip("percentile:Q", format=".0f"),
                "verdict",
                "n",
            ],
        )
    )


# ------------------------------------------------------------------------------ the same numbers, as tables
LABEL_COLUMNS = {
    "name": "head",
    "kv_head": "reads KV head",
    "label": "label",
    "operand": "operands",
    "operator": "operator",
    "rest": "rest",
    "first": "first position",
    "label without first": "label without first",
    "operand without first": "operands without first",
}
"""analyze's label columns (mass from END, mean over the prompts) as a reader sees them."""


def labels_table(labels: pd.DataFrame, without_first: pd.DataFrame):
    """The studied heads' attention labels, with the label again after the first position is dropped.

    ``labels``: :func:`arithmech.methods.attention.label_heads` rows; ``without_first``: the same call with
    ``view="without first"`` (same heads, same order). Masses are shares of the END row (0–1)."""
    df = labels.assign(
        **{"label without first": without_first.label.values, "operand without first": without_first.operand.values}
    )
    df = df.assign(name=df.name.map(component_label))[list(LABEL_COLUMNS)].rename(columns=LABEL_COLUMNS)
    return df.style.format(precision=3).hide(axis="index")


BASELINE_COLUMNS = {
    "name": "head",
    "role": "role",
    "view": "view",
    "value": "mass",
    "se": "± se",
    "n": "prompts",
    "nonkey_median": "non-key median",
    "nonkey_p95": "non-key 95th pct.",
    "percentile": "percentile among non-key (%)",
    "verdict": "verdict",
}


def baseline_table(baseline: pd.DataFrame, roles=("operand", "operator", "first")):
    """attention_baseline.csv's mass rows for ``roles``, readable: each head against the non-key heads."""
    show = baseline[baseline.role.isin(list(roles)) & (baseline.measure == "mass")]
    show = show.assign(name=show.name.map(component_label))[list(BASELINE_COLUMNS)].rename(columns=BASELINE_COLUMNS)
    return show.style.format(precision=3).format({"percentile among non-key (%)": "{:.0f}"}).hide(axis="index")
