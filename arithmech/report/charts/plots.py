"""One altair theme for every chart of the book, and the chart builders.

Builders take plain DataFrames (the results files) and return ``alt.Chart`` objects; they
compute nothing a test would need to check. Figure titles follow the paper's numbering
("Fig. 2 — ..."). Call :func:`use_theme` once (every chapter does, through ``setup``).
"""

from __future__ import annotations

import textwrap

import altair as alt
import pandas as pd

from arithmech.core.names import component, component_label
from arithmech.report.charts import colours
from arithmech.report.views.pages import use_table_display

# Colours come from the one table of colour roles (arithmech.report.charts.colours); this module holds no colour literal.
# Diverging scale as in the paper's Fig. 2: red = patching lowers the answer logit (the head helps).
EFFECT_SCHEME = colours.scheme("effect")
# Charts fit the text column of the book (about 700 px at a 1280 px window): plot areas at most
# COLUMN px wide, legends below the plot rather than beside it.
COLUMN = 460
# One colour per benchmark across the book (the ``benchmark`` role); a toy benchmark takes the colour of the paper
# benchmark it stands for (two-digit problems ↔ GSM8K, generic facts ↔ MMLU), so "ours" and "paper" panels agree.
BENCHMARK_COLORS = colours.ROLES["benchmark"]
_BOTTOM = alt.Legend(orient="bottom", labelLimit=400)


def benchmark_color(benchmarks: list[str], title: str | None = None) -> alt.Color:
    """The book's colour encoding of a ``benchmark`` field (the ``benchmark`` role of
    :data:`arithmech.report.charts.colours.ROLES`; a benchmark outside it takes a colour of the ``series`` palette)."""
    known = [b for b in BENCHMARK_COLORS if b in benchmarks]
    rest = [b for b in benchmarks if b not in BENCHMARK_COLORS]
    return alt.Color(
        "benchmark:N",
        title=title,
        legend=_BOTTOM,
        scale=alt.Scale(domain=known + rest, range=[BENCHMARK_COLORS[b] for b in known] + colours.series(len(rest))),
    )


def theme() -> dict:
    """The altair theme: fonts, sizes, the column's width, and colours from :mod:`arithmech.report.charts.colours` only
    (the default category range is its ``series`` palette: a legend without a role never draws red or green)."""
    ink = colours.ROLES["ink"]
    return {
        "config": {
            "view": {"stroke": None, "continuousWidth": COLUMN, "continuousHeight": 260},
            "font": "Helvetica, Arial, sans-serif",
            "title": {"fontSize": 14, "anchor": "start", "fontWeight": 600, "subtitleColor": ink["muted"]},
            "axis": {"labelFontSize": 11, "titleFontSize": 12, "grid": False, "domainColor": ink["axis"]},
            "legend": {"labelFontSize": 11, "titleFontSize": 12},
            "range": {"category": colours.series()},
            "mark": {"color": ink["mark"]},
            "header": {"labelFontSize": 12, "titleFontSize": 12},
        }
    }


def integer_axis(**kwargs) -> alt.Axis:
    """The axis of a count or an index (layer, k components knocked out, optimizer steps, tuned heads): ticks
    on whole numbers only, printed without decimals. A quantitative axis left to itself puts ticks at 0.5,
    1.5, ... when its range is short, which reads as if there were half a layer."""
    return alt.Axis(tickMinStep=1, format="d", **kwargs)


def use_theme() -> None:
    """Register and enable the arithmech theme (altair 5 and 6), and show pandas tables the book's way
    (:func:`arithmech.report.views.pages.use_table_display`: no index, rounded numbers, "—" for missing)."""
    use_table_display()
    try:
        alt.theme.register("arithmech", enable=True)(theme)
    except AttributeError:  # altair < 5.5
        alt.themes.register("arithmech", theme)
        alt.themes.enable("arithmech")


SUBTITLE_CHARS = 90  # a subtitle line longer than this would widen a chart past the column


def fig_title(fig: str, text: str, subtitle: str | list[str] | None = None) -> alt.TitleParams:
    """``fig_title("Fig. 2", "Path patching ...")`` → a title with the paper's figure number; the subtitle (a line or
    a list of lines) is wrapped at :data:`SUBTITLE_CHARS` characters (Vega-Lite does not wrap titles)."""
    if not subtitle:
        return alt.TitleParams(f"{fig} — {text}")
    lines = [
        w
        for line in ([subtitle] if isinstance(subtitle, str) else subtitle)
        for w in (textwrap.wrap(line, SUBTITLE_CHARS) or [""])
    ]
    return alt.TitleParams(f"{fig} — {text}", subtitle=lines)


# --------------------------------------------------------------------------- data charts (book)
def template_accuracy_chart(acc: pd.DataFrame, model_name: str) -> alt.Chart:
    """Answer-token accuracy per template (App. A, Fig. 8 / Fig. 10), one bar per template.

    ``acc``: one row per template with ``template, figure, op, family, accuracy``.
    """
    order = list(acc["template"])
    return (
        alt.Chart(acc)
        .mark_bar()
        .encode(
            x=alt.X(
                "accuracy:Q",
                scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%"),
                title="answer-token accuracy (top-1)",
            ),
            y=alt.Y("template:N", sort=order, title=None, axis=alt.Axis(labelLimit=150)),
            color=alt.Color("family:N", title="form", legend=_BOTTOM),
            row=alt.Row(
                "figure:N", title=None, sort=["Fig. 8", "Fig. 10"], header=alt.Header(labelAngle=0, labelAlign="left")
            ),
            tooltip=["template", "op", "family", alt.Tooltip("accuracy:Q", format=".1%")],
        )
        .resolve_scale(y="independent")
        .properties(
            width=300,
            title=fig_title(
                "Fig. 8 / 10",
                f"the templates, answered by {model_name}",
                "look for short bars: templates the model gets wrong; X_r keeps only the answered pairs",
            ),
        )
    )


# ----------------------------------------------------------------------------- identify charts
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
    cell = (
        cw,
        min(cw, max(10, 420 // max(1, n_layers))) if len(tasks) == 1 else min(cw, max(6, 240 // max(1, n_layers))),
    )
    panels = [_effect_panel(df[df["task"] == t], metric, [-m, m], cell, t if len(tasks) > 1 else None) for t in tasks]
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


# ------------------------------------------------------------------------------ analyze charts
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


def _mlp_lines(mlp: pd.DataFrame, quantities: dict[str, tuple[str, str, str]], title, stages=None) -> alt.Chart:
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


def mlp_in_chart(mlp: pd.DataFrame, stages: tuple[int, int, int] | None = None) -> alt.Chart:
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


def mlp_diff_chart(mlp: pd.DataFrame, stages: tuple[int, int, int] | None = None) -> alt.Chart:
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


def mlp_projection_explorer(mlp: pd.DataFrame) -> alt.Chart:
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
            f"{r.a_bit}+{r.b_bit}+carry {r.carry_in} → bit {r.sum_bit}:  {r.partial} ({int(r.partial):0{len(adder)}b})"
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


# ----------------------------------------------------------------------------- finetune charts
def _setting_scale(settings: list[str]) -> alt.Scale:
    """The ``arm`` role for Table 1's settings as :func:`arithmech.report.views.tables.setting_name` spells them: "base",
    "full SFT", and the first precise setting (the top heads by effect: the key heads) as precise-key; further
    precise settings (several head counts) take the ``series`` palette."""
    arm = {"base": "base", "full SFT": "full"}
    first = next((s for s in settings if s.startswith("precise")), None)
    known = [s for s in settings if s in arm or s == first]
    rest = [s for s in settings if s not in known]
    rng = [colours.colour("arm", arm.get(s, "precise-key")) for s in known] + colours.series(len(rest))
    return alt.Scale(domain=known + rest, range=rng)


def finetune_bars(
    long: pd.DataFrame, fig: str = "Table 1", title: str = "base, full SFT and precise SFT", subtitle: str | None = None
) -> alt.Chart:
    """Table 1 as grouped bars: accuracy per benchmark (x groups) and setting (colour).

    ``long``: rows ``setting, benchmark, accuracy`` (accuracy in 0..1), e.g.
    :func:`arithmech.report.views.tables.long_form`.
    """
    settings = list(dict.fromkeys(long["setting"]))
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=alt.X("setting:N", sort=settings, title=None, axis=alt.Axis(labels=False, ticks=False)),
            y=alt.Y("accuracy:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title="accuracy"),
            color=alt.Color("setting:N", scale=_setting_scale(settings), sort=settings, title=None, legend=_BOTTOM),
            column=alt.Column("benchmark:N", sort=list(dict.fromkeys(long["benchmark"])), title=None),
            tooltip=["setting:N", "benchmark:N", alt.Tooltip("accuracy:Q", format=".1%")],
        )
        .properties(
            width=min(110, COLUMN // max(1, long["benchmark"].nunique()) - 12),
            height=200,
            title=fig_title(fig, title, subtitle),
        )
    )


def ablation_chart(
    ours: pd.DataFrame,
    x: str = "heads",
    metrics: tuple[str, ...] = ("two-digit (math)", "generic facts"),
    fig: str = "Table 2",
    title: str = "how many heads to tune",
    paper: pd.DataFrame | None = None,
    paper_metrics: tuple[str, ...] = ("GSM8K", "MMLU"),
) -> alt.HConcatChart:
    """Table 2 / Table 5 as lines: accuracy (%) and samples/s against the number of tuned components ``x``;
    the paper's LLaMA2-7B numbers (``paper``) in a panel of their own beside ours."""

    def panel(df: pd.DataFrame, cols: tuple[str, ...], name: str) -> alt.Chart:
        m = df.melt(id_vars=[x], value_vars=list(cols), var_name="benchmark", value_name="accuracy (%)")
        acc = (
            alt.Chart(m)
            .mark_line(point=True)
            .encode(
                x=alt.X(f"{x}:Q", title=f"tuned {x}", axis=integer_axis()),
                y=alt.Y("accuracy (%):Q", scale=alt.Scale(zero=False)),
                color=benchmark_color(list(m["benchmark"].unique())),
                tooltip=[f"{x}:Q", "benchmark:N", "accuracy (%):Q"],
            )
        )
        speed = (
            alt.Chart(df)
            .mark_bar(opacity=0.5, color=colours.colour("ink", "mark"))
            .encode(
                x=alt.X(f"{x}:O", title=f"tuned {x}"),
                y=alt.Y("samples/s:Q", title="train samples/s"),
                tooltip=[f"{x}:Q", "samples/s:Q"],
            )
        )
        return alt.vconcat(
            acc.properties(width=COLUMN // 2 - 30, height=160, title=name),
            speed.properties(width=COLUMN // 2 - 30, height=80),
        ).resolve_scale(color="independent")

    panels = [panel(ours, metrics, "ours (embedded model)")]
    if paper is not None:
        panels.append(panel(paper, paper_metrics, "paper (LLaMA2-7B)"))
    return alt.hconcat(
        *panels,
        title=fig_title(
            fig, title, "same colour = the same kind of benchmark: two-digit ↔ GSM8K, generic facts ↔ MMLU"
        ),
    )
