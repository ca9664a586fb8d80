"""Accuracy as bars and lines: per template (App. A, Fig. 8 / 10), per benchmark and fine-tuning setting (Table 1)
and against the number of tuned heads (Table 2 / 5).

One colour per benchmark across the book (:func:`benchmark_color`, the ``benchmark`` role) and one per
fine-tuning setting (the ``arm`` role).
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN, fig_title, integer_axis

_BOTTOM = alt.Legend(orient="bottom", labelLimit=400)


# One colour per benchmark across the book (the ``benchmark`` role); a toy benchmark takes the colour of the paper
# benchmark it stands for (two-digit problems ↔ GSM8K, generic facts ↔ MMLU), so "ours" and "paper" panels agree.
BENCHMARK_COLORS = colours.ROLES["benchmark"]


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


def _setting_scale(settings: list[str]) -> alt.Scale:
    """The ``arm`` role for Table 1's settings as :func:`arithmech.report.views.tables.setting_name` spells them:
    "base", "full SFT", and the first precise setting (the top heads by effect: the key heads) as precise-key; further
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
        bounded = all(f"{c} lo" in df for c in cols)  # ours: each point's 95% interval as a bar
        ends = lambda r, c: {"lo": r[f"{c} lo"], "hi": r[f"{c} hi"]} if bounded else {}
        m = pd.DataFrame(
            [{x: r[x], "benchmark": c, "accuracy (%)": r[c], **ends(r, c)} for _, r in df.iterrows() for c in cols]
        )
        color = benchmark_color(list(m["benchmark"].unique()))
        acc = (
            alt.Chart(m)
            .mark_line(point=True)
            .encode(
                x=alt.X(f"{x}:Q", title=f"tuned {x}", axis=integer_axis()),
                y=alt.Y("accuracy (%):Q", scale=alt.Scale(zero=False)),
                color=color,
                tooltip=[f"{x}:Q", "benchmark:N", "accuracy (%):Q"] + (["lo:Q", "hi:Q"] if bounded else []),
            )
        )
        if bounded:
            acc = acc + alt.Chart(m).mark_rule().encode(x=f"{x}:Q", y="lo:Q", y2="hi:Q", color=color)
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
