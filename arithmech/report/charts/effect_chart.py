"""The path-patching effect of every head and MLP as a layer × head heatmap (Fig. 2, Fig. 15).

:func:`effect_heatmap` draws ``effects.csv`` (one panel per task, every panel on one diverging scale centred on
0, :data:`EFFECT_SCHEME`; the MLP column beside the heads); the Beyond and Explorer views colour effects with
the same scheme.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN, fig_title

# Colours come from the one table of colour roles (arithmech.report.charts.colours); this module holds no colour
# literal. Diverging scale as in the paper's Fig. 2: red = patching lowers the answer logit (the head helps).
EFFECT_SCHEME = colours.scheme("effect")


_METRIC_TITLES = {
    "effect": "relative logit change",
    "logit_diff": "logit change",
    "prob_change": "Δ P({C})",
    "prob": "P({C}) after patching",
}


def _effect_panel(df: pd.DataFrame, metric: str, domain: list, cell: tuple[int, int], title) -> alt.HConcatChart:
    """One layer × head grid and its MLP column, sharing the diverging color scale."""
    fmt = ".1%" if metric == "effect" else ".3f"
    color = alt.Color(
        f"{metric}:Q",
        title=_METRIC_TITLES.get(metric, metric),
        scale=alt.Scale(scheme=EFFECT_SCHEME, domain=domain, domainMid=0),
        legend=alt.Legend(format=fmt, orient="bottom", gradientLength=220),
    )
    tip = [
        "task:N",
        "layer:O",
        "head:N",
        alt.Tooltip(f"{metric}:Q", format=fmt),
        alt.Tooltip("logit_diff:Q", format=".3f", title="logit change"),
        alt.Tooltip("n:Q", title="samples"),
    ]
    layers = sorted(df["layer"].unique())
    y = alt.Y("layer:O", sort="descending", title="layer", scale=alt.Scale(domain=layers[::-1]))
    heads = df[df["head"] != "mlp"].assign(head_i=lambda d: d["head"].astype(int))
    grid = (
        alt.Chart(heads)
        .mark_rect(stroke=colours.colour("ink", "white"), strokeWidth=0.5)
        .encode(
            x=alt.X("head_i:O", title="head"),
            y=y,
            color=color,
            tooltip=tip,
        )
        .properties(
            width=cell[0] * heads["head_i"].nunique(),
            height=cell[1] * len(layers),
            **({"title": title} if title else {}),
        )
    )
    mlp = (
        alt.Chart(df[df["head"] == "mlp"])
        .mark_rect(stroke=colours.colour("ink", "white"), strokeWidth=0.5)
        .encode(
            x=alt.X("head:N", title=None),
            y=y.axis(None),
            color=color,
            tooltip=tip,
        )
        .properties(width=cell[0], height=cell[1] * len(layers))
    )
    return alt.hconcat(grid, mlp, spacing=4)


def effect_heatmap(
    effects: pd.DataFrame,
    tasks: str | list[str] = "all",
    metric: str = "effect",
    fig: str = "Fig. 2",
    subtitle: str | None = None,
    cell: int | None = None,
) -> alt.Chart:
    """Fig. 2 / Fig. 15: the path-patching effect of every head (layer × head) plus the MLP column.

    ``effects``: rows ``task, layer, head, <metric>, logit_diff, n`` (``effects.csv``; ``head`` is
    ``"mlp"`` for MLP rows). One panel per task; every panel shares one diverging red-blue scale
    centred on 0 (red: patching lowers the answer logit, so the component helps).
    """
    tasks = [tasks] if isinstance(tasks, str) else list(tasks)
    df = effects[effects["task"].isin(tasks)].copy()
    df["head"] = df["head"].astype(str)
    if df.empty:
        raise ValueError(f"no effects rows for tasks {tasks}; available: {sorted(effects['task'].unique())}")
    m = float(df[metric].abs().max()) or 1.0
    n_heads = df.loc[df["head"] != "mlp", "head"].nunique()
    n_layers = df["layer"].nunique()
    # column-wide: one panel fills the column, two share it; rows stay at most 420 px tall in all
    width = COLUMN if len(tasks) == 1 else COLUMN // 2 - 20
    cw = cell or max(4, min(60, width // (n_heads + 1)))
    size = (
        cw,
        min(cw, max(10, 420 // max(1, n_layers))) if len(tasks) == 1 else min(cw, max(6, 240 // max(1, n_layers))),
    )
    panels = [_effect_panel(df[df["task"] == t], metric, [-m, m], size, t if len(tasks) > 1 else None) for t in tasks]
    rows = [alt.hconcat(*panels[i : i + 2], spacing=24) for i in range(0, len(panels), 2)]
    chart = rows[0] if len(rows) == 1 else alt.vconcat(*rows, spacing=16)
    what = "every head and MLP" + (
        ", per task" if len(tasks) > 1 else ", all tasks" if tasks[0] == "all" else f", {tasks[0]}"
    )
    return chart.resolve_scale(color="shared").properties(
        title=fig_title(
            fig,
            f"path patching of {what}",
            subtitle
            or "look for the few dark red cells: components whose END output from X_c "
            "lowers the answer logit; last column: MLP",
        )
    )
