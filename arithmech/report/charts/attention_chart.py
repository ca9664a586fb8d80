"""Where the heads attend from END: each key head's attention mass by token role (Fig. 5, and a head picked in a
dropdown) and the heat strips of one prompt, one row per head (Fig. 7 / 16).

Token roles (A, B, the operator, bos, other) take the ``operand`` colour role (:data:`ROLE_COLORS`).
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.core.names import component, component_label
from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN, fig_title

_BOTTOM = alt.Legend(orient="bottom", labelLimit=400)


ROLE_COLORS = colours.ROLES["operand"]  # a token's role: A, B, operator, bos, other


_ROLE_SCALE = colours.scale("operand")


def _head_names(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a ``name`` column naming each row's head as a reader sees it ("head 13.11")."""
    return df.assign(name=[component(l, h) for l, h in zip(df["layer"], df["head"])])


def attention_roles_chart(roles: pd.DataFrame, labels: pd.DataFrame, fig: str = "Fig. 5") -> alt.Chart:
    """Fig. 5: END-row attention mass of each key head by role, one panel per operation.

    ``roles``: attention_roles.csv; ``labels``: :func:`arithmech.methods.attention.label_heads` (key heads, ranked).
    Heads are grouped operand heads first, then operator heads, then the rest.
    """
    order = labels.assign(g=labels.label.map({"operand": 0, "operator": 1}).fillna(2)).sort_values(["g"], kind="stable")
    names = [f"{component_label(n)} ({l})" for n, l in zip(order.name, order.label)]
    lab = dict(zip(map(component_label, order.name), names))
    df = _head_names(roles)
    df = df[df.name.isin(lab) & (df.task != "all") & df.role.isin(list(ROLE_COLORS))].assign(
        head_label=lambda d: d.name.map(lab)
    )
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            x=alt.X("head_label:N", sort=names, title="key head"),
            y=alt.Y("mean_score:Q", title="attention mass", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("role:N", scale=_ROLE_SCALE, sort=list(ROLE_COLORS), legend=_BOTTOM),
            order=alt.Order("role_rank:Q"),
            tooltip=["head_label", "task", "role", alt.Tooltip("mean_score:Q", format=".3f"), "kv_head", "n"],
        )
        .transform_calculate(role_rank=f"indexof({list(ROLE_COLORS)}, datum.role)")
        .properties(width=min(COLUMN // 2 - 20, max(80, 22 * len(names))), height=160)
        .facet(facet=alt.Facet("task:N", title=None), columns=2)
        .properties(
            title=fig_title(
                fig,
                "Attention of the key heads from END, by token role",
                "look for bars filled by A, B (operand heads) or the operator (operator heads); "
                "one panel per operation",
            )
        )
    )


def attention_roles_explorer(roles: pd.DataFrame, heads: list[str] | None = None) -> alt.Chart:
    """Pick a head in a dropdown → its attention mass by role, per operation (all heads precomputed).
    ``heads``: the dropdown's heads in order (file ids "13.11"); default: every head by layer, then head."""
    df = _head_names(roles[roles.role.isin(list(ROLE_COLORS))])
    names = (
        [component_label(h) for h in heads]
        if heads
        else list(dict.fromkeys(df.sort_values(["layer", "head"], kind="stable").name))
    )
    pick = alt.param(name="head_pick", value=names[0], bind=alt.binding_select(options=names, name="head "))
    return (
        alt.Chart(df, title=fig_title("Fig. 5", "Attention by role of a chosen head", "choose a head in the dropdown"))
        .mark_bar()
        .encode(
            x=alt.X("role:N", sort=list(ROLE_COLORS), title=None),
            y=alt.Y("mean_score:Q", title="attention mass", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("role:N", scale=_ROLE_SCALE, legend=None),
            column=alt.Column("task:N", title=None),
            tooltip=["name", "task", "role", alt.Tooltip("mean_score:Q", format=".3f"), "kv_head"],
        )
        .add_params(pick)
        .transform_filter(alt.datum.name == pick)
        .properties(width=90, height=160)
    )


def attention_strip_chart(
    strips: pd.DataFrame, fig: str = "Fig. 7", title: str = "Attention from END over one prompt", dropdown: bool = True
) -> alt.Chart:
    """Fig. 7 / 16: heat strips, one row per head, one cell per token (text = the token).

    ``strips``: :func:`arithmech.methods.explorer.attention_strip` rows with a ``sample`` column; with
    ``dropdown`` a select picks the sample shown.
    """
    samples = list(dict.fromkeys(strips["sample"]))
    strips = strips.assign(head=strips["head"].map(component_label))  # "head 13.11", as every page names it
    base = alt.Chart(strips, title=fig_title(fig, title, "darker = more attention; outlined = operand/operator token"))
    enc = dict(
        x=alt.X("position:O", title=None, axis=None), y=alt.Y("head:N", title=None, axis=alt.Axis(labelLimit=140))
    )
    rect = base.mark_rect().encode(
        **enc,
        color=alt.Color("score:Q", scale=alt.Scale(scheme=colours.scheme("attention"), domain=[0, 1])),
        stroke=alt.condition(
            "datum.role != 'other' && datum.role != 'bos'", alt.value(colours.colour("ink", "outline")), alt.value(None)
        ),
        tooltip=["sample", "head", "position", "token", "role", alt.Tooltip("score:Q", format=".3f")],
    )
    text = base.mark_text(fontSize=11).encode(
        **enc,
        text="token:N",
        color=alt.condition(
            "datum.score > 0.5", alt.value(colours.colour("ink", "white")), alt.value(colours.colour("ink", "black"))
        ),
    )
    n_pos = int(strips["position"].nunique()) or 1
    chart = (rect + text).properties(width=alt.Step(max(24, min(44, (COLUMN - 60) // n_pos))), height=alt.Step(26))
    if dropdown and len(samples) > 1:
        pick = alt.param(name="sample_pick", value=samples[0], bind=alt.binding_select(options=samples, name="sample "))
        chart = chart.add_params(pick).transform_filter(alt.datum.sample == pick)
    return chart
