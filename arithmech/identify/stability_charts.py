"""Charts of the key-head stability experiment (:mod:`arithmech.steps.stability`).

* :func:`jaccard_chart` — Jaccard overlap of the key set and of the top-k set against the largest size of
  the same seed, and between seeds, as the sample size grows: one line per counterfactual and seed (or
  pair of seeds); hover a point for the sets' sizes and the prompts behind them;
* :func:`head_intervals_chart` — the ``top`` heads of most negative effect in the reference run (first
  seed, largest size), each with its 95% bootstrap interval, the threshold as a rule, key heads filled.

Both read the step's files (``stability.csv``, ``stability_heads.csv``) as they are and compute nothing
a test would need to check.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.core.names import component_label
from arithmech.paper import KEY_THRESHOLD
from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN, fig_title, integer_axis

_BOTTOM = alt.Legend(orient="bottom")
_PANELS = {"size_vs_largest": "against the largest size (same seed)", "between_seeds": "between seeds (same size)"}


def jaccard_chart(table: pd.DataFrame, title: str = "How stable are the key heads?") -> alt.FacetChart:
    """Jaccard vs pairs drawn (log scale), panels: set (key / top-k) × reference (largest size, other seed)."""
    d = table[table.comparison.isin(list(_PANELS))].copy()
    d["reference"] = d.comparison.map(_PANELS)
    d["line"] = [
        f"{k}, seed {s}" + (f" vs {r}" if c == "between_seeds" else "")
        for k, s, r, c in zip(d.kind, d.seed, d.ref_seed, d.comparison)
    ]
    d["set"] = d["set"].map(lambda s: "key set (interval rule)" if s == "key" else f"top-{s[3:]} set")
    d["sets"] = [f"{a} and {b} heads, {c} shared" for a, b, c in zip(d.n_a, d.n_b, d.n_shared)]
    sizes = sorted(set(d["size"]) | set(d.ref_size))
    base = alt.Chart(d).encode(
        x=alt.X("size:Q", title="pairs drawn", scale=alt.Scale(type="log", base=2), axis=integer_axis(values=sizes)),
        y=alt.Y("jaccard:Q", title="Jaccard overlap", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("kind:N", title="counterfactual", legend=_BOTTOM),
        detail="line:N",
        tooltip=[
            "line:N",
            "set:N",
            "size:Q",
            alt.Tooltip("jaccard:Q", format=".2f"),
            "sets:N",
            alt.Tooltip("prompts_a:Q", title="X_r prompts"),
            alt.Tooltip("ref_size:Q", title="reference size"),
        ],
    )
    layers = alt.layer(base.mark_line(opacity=0.6), base.mark_point(filled=True, size=40))
    return (
        layers.properties(width=COLUMN // 3, height=160)
        .facet(
            row=alt.Row("reference:N", title=None, sort=list(_PANELS.values())), column=alt.Column("set:N", title=None)
        )
        .properties(title=fig_title("Stability", title, "Jaccard |A∩B| / |A∪B|; missing points: both sets empty"))
    )


def head_intervals_chart(
    heads: pd.DataFrame,
    threshold: float = KEY_THRESHOLD,
    top: int = 20,
    title: str = "Effect of each head with its 95% bootstrap interval",
) -> alt.HConcatChart:
    """The ``top`` most negative heads per counterfactual: effect (point) and interval (bar); filled = key
    (interval below ``threshold``, the red rule); hover for how often the head was key across runs."""
    panels = []
    for kind, g in heads.groupby("kind", sort=False):
        panels.append(_head_panel(kind, g, threshold, top))
    return alt.hconcat(*panels).properties(
        title=fig_title(
            "Stability",
            title,
            f"red circle: key (whole interval below the dashed threshold {threshold:+.0%}); grey triangle: not key",
        )
    )


def _head_panel(kind: str, g: pd.DataFrame, threshold: float, top: int) -> alt.LayerChart | alt.FacetChart:
    """One counterfactual's panel: its ``top`` most negative heads, each an interval (bar) and its effect (point;
    filled = key), and the threshold's dashed rule."""
    g = g.sort_values(["effect", "layer", "head"]).head(top).assign(name=lambda d: d.name.map(component_label))
    g["key"] = (g.effect_hi < threshold).map({True: "key (interval below threshold)", False: "not key"})
    g["often"] = [f"key in {k} of {r} runs, top in {t}" for k, r, t in zip(g.key_runs, g.runs, g.top_runs)]
    y = alt.Y("name:N", sort=list(g.name), title=None)
    bars = (
        alt.Chart(g)
        .mark_rule(strokeWidth=2, color=colours.colour("ink", "mark"))
        .encode(
            y=y,
            x=alt.X("effect_lo:Q", title="relative change of the answer logit", axis=alt.Axis(format="%")),
            x2="effect_hi:Q",
        )
    )
    pts = (
        alt.Chart(g)
        .mark_point(size=50, filled=True)
        .encode(
            y=y,
            x="effect:Q",
            shape=alt.Shape(
                "key:N",
                title=None,
                legend=_BOTTOM,
                scale=alt.Scale(domain=["key (interval below threshold)", "not key"], range=["circle", "triangle"]),
            ),
            color=alt.Color(
                "key:N",
                title=None,
                legend=None,
                scale=colours.scale("selection", {"key (interval below threshold)": "key", "not key": "control"}),
            ),
            tooltip=[
                "name:N",
                alt.Tooltip("effect:Q", format="+.2%"),
                alt.Tooltip("effect_lo:Q", format="+.2%"),
                alt.Tooltip("effect_hi:Q", format="+.2%"),
                alt.Tooltip("n:Q", title="X_r prompts"),
                "often:N",
            ],
        )
    )
    rule = (
        alt.Chart(pd.DataFrame({"t": [threshold]}))
        .mark_rule(color=colours.colour("reference", "marker"), strokeDash=[4, 3])
        .encode(x="t:Q")
    )
    n = int(g.n.iloc[0]) if len(g) else 0
    return alt.layer(bars, pts, rule).properties(
        width=COLUMN // 3, height=14 * len(g) + 10, title=f"{kind} counterfactual ({n} prompts)"
    )
