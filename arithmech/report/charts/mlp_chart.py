"""What the MLPs read and write at END, projected on the unembedding W_U (Fig. 6, 13, 14, 17).

The cosine of MLP_in with W_U[A] and W_U[B] per layer (:func:`mlp_in_chart`), of MLP_out − MLP_in with the
answer's W_U against the other numbers' (:func:`mlp_diff_chart`), every quantity from a dropdown
(:func:`mlp_projection_explorer`), the number tokens closest to MLP_out − MLP_in layer by layer
(:func:`top_numbers_chart`) and those beside a ripple-carry adder's partial results (:func:`adder_vs_llm_chart`).
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN, fig_title, integer_axis

_BOTTOM = alt.Legend(orient="bottom", labelLimit=400)


def _stage_rules(stages: tuple[int, int, int] | None) -> list:
    if not stages:
        return []
    df = pd.DataFrame({"layer": list(stages), "point": ["start", "inflection", "end"]})
    rule = alt.Chart(df).mark_rule(strokeDash=[4, 3], color=colours.colour("reference", "marker")).encode(x="layer:Q")
    text = (
        alt.Chart(df)
        .mark_text(align="left", dx=3, dy=-6, color=colours.colour("reference", "marker"))
        .encode(x="layer:Q", y=alt.value(0), text="point:N")
    )
    return [rule, text]


def _mlp_lines(
    mlp: pd.DataFrame, quantities: dict[str, tuple[str, str, str]], title, stages=None
) -> alt.LayerChart | alt.FacetChart:
    """``quantities``: ``{quantity: (label, colour role, value)}``: each curve is coloured by what it measures
    (operand A or B, the answer or the other numbers)."""
    label = {q: l for q, (l, _, _) in quantities.items()}
    df = mlp[mlp.quantity.isin(quantities)].assign(
        series=lambda d: d.quantity.map(label), lo=lambda d: d.value - d["sem"], hi=lambda d: d.value + d["sem"]
    )
    scale = alt.Scale(domain=list(label.values()), range=[colours.colour(r, v) for _, r, v in quantities.values()])
    base = alt.Chart(df).encode(
        x=alt.X("layer:Q", title="layer", axis=integer_axis()),
        color=alt.Color("series:N", title=None, legend=_BOTTOM, scale=scale),
    )
    band = base.mark_area(opacity=0.15).encode(y="lo:Q", y2="hi:Q")
    line = base.mark_line(point=True).encode(
        y=alt.Y("value:Q", title="cosine similarity (mean ± s.e.)"),
        tooltip=["layer", "series", alt.Tooltip("value:Q", format=".3f"), alt.Tooltip("std:Q", format=".3f")],
    )
    return alt.layer(band, line, *_stage_rules(stages)).properties(title=title, width=COLUMN, height=240)


def mlp_in_chart(mlp: pd.DataFrame, stages: tuple[int, int, int] | None = None) -> alt.LayerChart | alt.FacetChart:
    """Fig. 6a / 13: cos(MLP_in, W_U[A]) and cos(MLP_in, W_U[B]) per layer at END (band: ± 1 standard error)."""
    return _mlp_lines(
        mlp,
        {"in_A": ("⟨MLP_in, W_U[A]⟩", "operand", "A"), "in_B": ("⟨MLP_in, W_U[B]⟩", "operand", "B")},
        fig_title(
            "Fig. 6a",
            "What the MLPs receive: operands in MLP_in",
            "look where the curves rise and fall: the layers whose MLPs read the operands",
        ),
        stages,
    )


def mlp_diff_chart(mlp: pd.DataFrame, stages: tuple[int, int, int] | None = None) -> alt.LayerChart | alt.FacetChart:
    """Fig. 6b / 14: cos(MLP_out − MLP_in, W_U[C]) vs the mean over the other number tokens."""
    return _mlp_lines(
        mlp,
        {
            "diff_C": ("⟨MLP_out − MLP_in, W_U[C]⟩", "answer", "answer"),
            "diff_other": ("⟨MLP_out − MLP_in, W_U[other]⟩", "answer", "other"),
        },
        fig_title(
            "Fig. 6b",
            "What the MLPs write: the answer vs other numbers",
            "look for the answer's curve rising above the other numbers' in the late layers",
        ),
        stages,
    )


def mlp_projection_explorer(mlp: pd.DataFrame) -> alt.LayerChart | alt.FacetChart:
    """Every MLP quantity of mlp_projection.csv, one at a time from a dropdown (band: ± 1 std over samples)."""
    qs = list(dict.fromkeys(mlp.quantity))
    pick = alt.param(name="quantity_pick", value=qs[0], bind=alt.binding_select(options=qs, name="quantity "))
    df = mlp.assign(lo=mlp.value - mlp["std"], hi=mlp.value + mlp["std"])  # spread over samples
    base = alt.Chart(
        df,
        title=fig_title(
            "Fig. 6",
            "MLP projections on W_U, one quantity at a time",
            "in_X: MLP_in vs W_U[X]; diff_X: MLP_out − MLP_in vs W_U[X]",
        ),
    ).encode(x=alt.X("layer:Q", axis=integer_axis()))
    return (
        alt.layer(
            base.mark_area(opacity=0.15).encode(y="lo:Q", y2="hi:Q"),
            base.mark_line(point=True).encode(
                y=alt.Y("value:Q", title="cosine similarity"),
                tooltip=["layer", "quantity", alt.Tooltip("value:Q", format=".3f")],
            ),
        )
        .add_params(pick)
        .transform_filter(alt.datum.quantity == pick)
        .properties(width=COLUMN, height=220)
    )


def top_numbers_chart(
    top: pd.DataFrame, fig: str = "Fig. 6c", prompt: str | None = None, column: str | None = None
) -> alt.Chart:
    """Fig. 6c: per layer, the number tokens closest to MLP_out − MLP_in (cell text = token).

    With a ``prompt`` column holding several prompts, one panel per prompt when ``column="prompt"``,
    else a dropdown picks one.
    """
    prompts = list(dict.fromkeys(top["prompt"])) if "prompt" in top else []
    shown = prompt or (prompts[0] if len(prompts) == 1 else None)
    sub = (f"prompt “{shown}”; " if shown else "") + "color = cosine"
    base = alt.Chart(top)
    enc = dict(x=alt.X("rank:O", title="rank"), y=alt.Y("layer:O", title="layer"))
    chart = (
        base.mark_rect().encode(
            **enc,
            color=alt.Color("cosine:Q", scale=alt.Scale(scheme=colours.scheme("cosine"))),
            tooltip=["layer", "rank", "token", alt.Tooltip("cosine:Q", format=".3f")],
        )
        + base.mark_text(fontSize=13).encode(**enc, text="token:N")
    ).properties(width=alt.Step(40), height=alt.Step(24))
    title = fig_title(fig, "Top number tokens of MLP_out − MLP_in, layer by layer", sub)
    if column:
        return chart.facet(column=alt.Column(f"{column}:N", title=None, sort=prompts)).properties(title=title)
    if len(prompts) > 1:
        pick = alt.param(name="prompt_pick", value=prompts[0], bind=alt.binding_select(options=prompts, name="prompt "))
        chart = chart.add_params(pick).transform_filter(alt.datum.prompt == pick)
    return chart.properties(title=title)


def adder_vs_llm_chart(adder: pd.DataFrame, top: pd.DataFrame, a: int, b: int) -> alt.HConcatChart:
    """App. H / Fig. 17: the partial results of a ripple-carry adder, step by step, beside the model's
    top-1 number token of MLP_out − MLP_in, layer by layer."""
    comp = adder.assign(
        label=[
            (
                f"{r.a_bit}+{r.b_bit}+carry {r.carry_in} → bit {r.sum_bit}:  {r.partial} "
                f"({int(r.partial):0{len(adder)}b})"
            )
            for r in adder.itertuples()
        ]
    )
    left = (
        alt.Chart(comp, title=f"Computer: {a} + {b} (ripple-carry, bit by bit)")
        .mark_text(fontSize=16)
        .encode(y=alt.Y("step:O", title="full-adder step"), text="label:N")
        .properties(width=260, height=alt.Step(34))
    )
    top1 = top[top["rank"] == 1]
    right = (
        alt.Chart(top1, title=f"Model: {a} + {b} = (top-1 number token)")
        .mark_text(fontSize=16)
        .encode(
            y=alt.Y("layer:O", title="layer"),
            text="token:N",
            color=alt.Color("cosine:Q", scale=alt.Scale(scheme=colours.scheme("cosine"), domainMin=0)),
        )
        .properties(width=160, height=alt.Step(34))
    )
    return alt.hconcat(left, right, title=fig_title("Fig. 17", "Addition in a computer vs in the model"))
