"""The prompt explorer of the static book: one altair chart per model, all its data embedded, driven by
vega selections (no kernel, no network).

:func:`explorer_chart` draws :func:`arithmech.methods.explorer.precompute`'s tables as one compound chart:

* a **prompt** dropdown (every precomputed prompt) and a **threshold** slider (a handful of precomputed steps)
  under the chart;
* a header naming the prompt, its answer token, the threshold and the heads past it at that step, and how
  many of all the prompts keep the answer as top-1 token with those heads knocked out and intact (Wilson 95%
  intervals, n). Its lines are wrapped here (:data:`HEADER_CHARS`), never cut by the chart;
* the subtitle states the rules the view applies (:func:`rules_lines`): when a head is past a threshold,
  where the slider starts and why (the paper's −5 %, or the strictest step some head passes), and which
  answer token is scored;
* the top-5 next tokens, intact and with the heads past the threshold mean-ablated at END with position-pooled
  X_c means (:func:`arithmech.methods.explorer.knockout_means`, not identify's reference pool; the answer's bar
  green);
* the path-patching effect of every head (Fig. 2 style, the heads past the current threshold outlined):
  **click a head** to show its attention alone (double-click: back); beside it, layer by layer, the number
  token closest to what each MLP writes at END;
* the attention from END of the heads past the threshold (or the clicked head), one row per head. The row
  count changes with the slider and the click, so the chart re-lays itself out on every update
  (``autosize.resize``): with a fixed size, vega kept the first layout's height and cut every row after the
  first when the slider added heads.
"""

from __future__ import annotations

import textwrap
from typing import Any

import altair as alt
import pandas as pd

from arithmech.core.names import component_label, components, token_label
from arithmech.paper import KEY_THRESHOLD
from arithmech.report.charts import colours
from arithmech.report.charts.effect_chart import EFFECT_SCHEME
from arithmech.report.charts.theme import COLUMN, fig_title
from arithmech.report.views.pages import ANSWER_TOKEN_RULES

ANSWERS = colours.scale("answer", {"answer token": "answer", "other": "other"})  # green: the answer token
HEADER_CHARS = 90  # a header line longer than this would run past the chart's width (12 px text)
NBSP = "\u00a0"  # inside "head 13.11": a wrapped line never splits a head's name
HEADER_STEP = 17  # px per header line


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _thr(x: float) -> str:
    """A threshold as a reader reads it: −5%, with a minus sign."""
    return f"{100 * x:+g}%".replace("-", "−")


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, HEADER_CHARS, break_on_hyphens=False) or [""]


def _rate(k: int, n: int, lo: float, hi: float, m: int) -> str:
    """``k`` of ``n`` prompts with the rate's 95% interval over the ``m`` problems they ask."""
    return f"{k}/{n} prompts ({_pct(k / n)}, 95% CI {_pct(lo)}–{_pct(hi)} over {m} problems)"


def step_labels(steps: pd.DataFrame) -> pd.DataFrame:
    """The header lines (``step, line, label``) of each slider step of ``steps``
    (:func:`~arithmech.methods.explorer.precompute`): the threshold and the heads past it; how many prompts keep
    the answer as top-1 token with them knocked out, and intact (counts, rates, 95% intervals, n). Long lines
    are wrapped at :data:`HEADER_CHARS`; every step has as many lines as the longest (blank ones at the end),
    so the header keeps one height while the slider moves."""
    intact = steps[steps.step < 0].iloc[0]
    base = "intact: the answer is top-1 on " + _rate(
        intact.correct, intact.n, intact.ci_low, intact.ci_high, intact.problems
    )
    last = int(steps.step.max())
    per = {}
    for r in steps[steps.step >= 0].itertuples():
        where = f"threshold {_thr(r.threshold)} (step {r.step} of 0–{last})"
        if r.n_heads:
            text = [
                f"{where}: {r.n_heads} {'head is' if r.n_heads == 1 else 'heads are'} past it: "
                + ", ".join(component_label(h).replace(" ", NBSP) for h in r.heads),
                "knocked out: the answer is top-1 on " + _rate(r.correct, r.n, r.ci_low, r.ci_high, r.problems),
            ]
        else:
            text = [f"{where}: no head is past it, nothing is knocked out"]
        per[r.step] = [w for t in text + [base] for w in _wrap(t)]
    height = max(map(len, per.values()))
    return pd.DataFrame(
        [{"step": k, "line": i, "label": (v + [""] * height)[i]} for k, v in per.items() for i in range(height)]
    )


def default_step(steps: pd.DataFrame, prefer: float = KEY_THRESHOLD) -> int:
    """The slider's first position: the paper's −5% when some head passes it, else the strictest step that some
    head passes (0 when none does); :func:`rules_lines` says which on the chart."""
    s = steps[steps.step >= 0]
    at = s[(s.threshold - prefer).abs() < 1e-12]
    if len(at) and int(at.n_heads.iloc[0]) > 0:
        return int(at.step.iloc[0])
    some = s[s.n_heads > 0]
    return int(some.step.iloc[0]) if len(some) else 0


def rules_lines(steps: pd.DataFrame, answer_rule: str) -> list[str]:
    """The rules the view applies, stated on it (the chart's subtitle): when a head is past a threshold, where
    the slider starts and why, and the answer token scored (``answer_rule``: a rule of
    :data:`arithmech.report.views.pages.ANSWER_TOKEN_RULES`, as the prompts table records it)."""
    s = steps[steps.step >= 0]
    start = float(s[s.step == default_step(steps)].threshold.iloc[0])
    paper = _thr(KEY_THRESHOLD)
    if not int(s.n_heads.max()):
        where = "no head is past any threshold of the slider: nothing is knocked out at any step"
    elif abs(start - KEY_THRESHOLD) < 1e-12:
        where = f"the slider starts at {paper}, the paper's threshold"
    elif ((s.threshold - KEY_THRESHOLD).abs() < 1e-12).any():
        where = (
            f"the slider starts at {_thr(start)}: no head is past the paper's {paper} on this model, and "
            f"{_thr(start)} is the strictest step that some head passes"
        )
    else:
        where = f"the slider starts at {_thr(start)}, the strictest step that some head passes ({paper} is not a step)"
    if answer_rule not in ANSWER_TOKEN_RULES:
        raise ValueError(f"answer token {answer_rule!r}: use one of {', '.join(ANSWER_TOKEN_RULES)}")
    return [
        "a head is past a threshold when the whole 95% interval of its path-patching effect lies below it "
        "(identify's rule; the paper compares the mean)",
        where,
        "answer token: " + ANSWER_TOKEN_RULES[answer_rule],
        "pick a prompt and move the slider under the chart; click a head in the effects map",
    ]


def explorer_chart(
    data: dict[str, pd.DataFrame], heads: pd.DataFrame, model_name: str, max_label: int = 60
) -> alt.VConcatChart:
    """The explorer of one model. ``data``: :func:`~arithmech.methods.explorer.precompute`'s tables;
    ``heads``: :func:`~arithmech.methods.explorer.head_steps` (every head's effect and ``key_at``).

    Params: ``pid`` (prompt id, a dropdown), ``ko_step`` (slider step), ``headsel`` (a head clicked in the
    heatmap). Every view filters its own embedded table by them, so nothing is computed in the browser
    beyond flattening the per-prompt arrays.
    """
    P, steps = data["prompts"], data["steps"]
    data = {
        **data,
        "top": data["top"].assign(tokens=data["top"].tokens.map(lambda ts: [token_label(t) for t in ts])),
        "mlp": data["mlp"].assign(tokens=data["mlp"].tokens.map(lambda ts: [token_label(t) for t in ts])),
        "tokens": data["tokens"].assign(token=data["tokens"].token.map(token_label)),
    }
    (rule,) = set(P.answer_token)  # one rule per page (precompute records it per prompt)
    n_steps = int((steps.step >= 0).sum())
    labels = [f"{i}: {p}" if len(p) <= max_label else f"{i}: {p[: max_label - 1]}…" for i, p in zip(P.id, P.prompt)]
    pid = alt.param(
        name="pid", value=0, bind=alt.binding_select(options=list(map(int, P.id)), labels=labels, name="prompt ")
    )
    ko = alt.param(
        name="ko_step",
        value=default_step(steps),
        bind=alt.binding_range(min=0, max=n_steps - 1, step=1, name="threshold step (left: strict, right: loose) "),
    )
    headsel = alt.selection_point(name="headsel", fields=["name"], on="click", clear="dblclick")
    this = alt.datum.id == pid

    # --- header: the prompt (wrapped), then the slider's step (wrapped; as many lines at every step)
    prompt_text = [
        _wrap(f"prompt “{p}” · answer token “{token_label(a)}”")
        + _wrap(f"{o}, template {t} · prompt {i + 1} of {len(P)}")
        for i, p, a, o, t in zip(P.id, P.prompt, P.answer, P.op, P.template)
    ]
    n_top = max(map(len, prompt_text))
    lines = pd.DataFrame(
        [
            {"id": int(i), "line": k, "label": (ls + [""] * n_top)[k]}
            for i, ls in zip(P.id, prompt_text)
            for k in range(n_top)
        ]
    )
    step_lines = step_labels(steps).assign(line=lambda d: d.line + n_top)
    txt: dict[str, Any] = dict(align="left", baseline="top", fontSize=12)
    y = alt.Y("line:O", axis=None, scale=alt.Scale(domain=list(range(int(step_lines.line.max()) + 1))))
    header = alt.layer(
        alt.Chart(lines)
        .mark_text(**txt, fontWeight=600)
        .encode(x=alt.value(0), y=y, text="label:N")
        .transform_filter(this),
        alt.Chart(step_lines)
        .mark_text(**txt)
        .encode(x=alt.value(0), y=y, text="label:N")
        .transform_filter(alt.datum.step == ko),
    ).properties(width=COLUMN, height=alt.Step(HEADER_STEP))

    # --- top-5 next tokens, intact and knocked out
    def top_panel(cond, title: str) -> alt.LayerChart | alt.FacetChart:
        base = (
            alt.Chart(data["top"])
            .transform_filter(this)
            .transform_filter(cond)
            .transform_flatten(["tokens", "probs"], as_=["token", "prob"])
            .transform_window(rank="row_number()")
            .transform_calculate(
                is_answer="datum.rank == datum.answer_rank ? 'answer token' : 'other'",
                shown="datum.token + '  ' + format(datum.prob, '.1%')",
            )
        )
        y = alt.Y("rank:O", title=None, axis=None)
        bars = base.mark_bar().encode(
            y=y,
            x=alt.X("prob:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title="probability"),
            color=alt.Color("is_answer:N", scale=ANSWERS, legend=None),
            tooltip=["rank:O", "token:N", alt.Tooltip("prob:Q", format=".2%")],
        )
        text = base.mark_text(align="left", dx=3, fontSize=11, limit=110).encode(y=y, x=alt.X("prob:Q"), text="shown:N")
        return alt.layer(bars, text).properties(width=COLUMN // 2 - 30, height=alt.Step(18), title=title)

    tops = alt.hconcat(
        top_panel(alt.datum.step == -1, "top-5 next tokens, intact"),
        top_panel(alt.datum.step == ko, "heads past the threshold out (pooled X_c mean, END)"),
        spacing=24,
    )

    # --- every head's effect; click one
    n_layers, n_heads = int(heads.layer.max()) + 1, int(heads["head"].max()) + 1
    cell = max(10, min(24, 420 // n_layers))
    m = float(heads.effect.abs().max()) or 1.0
    ylay = alt.Y("layer:O", sort="descending", title="layer")
    stored = set(data["attention"].name)
    hm = heads.assign(attention=["shown" if n in stored else "not precomputed" for n in heads.name])
    heat = (
        alt.Chart(hm)
        .mark_rect()
        .encode(
            x=alt.X("head:O", title="head"),
            y=ylay,
            color=alt.Color(
                "effect:Q",
                scale=alt.Scale(scheme=EFFECT_SCHEME, domain=[-m, m], domainMid=0),
                legend=alt.Legend(format=".0%", orient="bottom", gradientLength=140, title="effect"),
            ),
            stroke=alt.condition(
                "datum.key_at <= ko_step",
                alt.value(colours.colour("ink", "outline")),
                alt.value(colours.colour("ink", "white")),
            ),
            strokeWidth=alt.condition("datum.key_at <= ko_step", alt.value(2), alt.value(0.5)),
            opacity=alt.condition(headsel, alt.value(1.0), alt.value(0.3)),
            tooltip=["name:N", alt.Tooltip("effect:Q", format=".2%"), "rank:Q", "attention:N"],
        )
        .add_params(headsel)
        .properties(
            width=cell * n_heads, height=cell * n_layers, title="effects (outlined: past the threshold; click one)"
        )
    )
    mlp = (
        alt.Chart(data["mlp"])
        .transform_filter(this)
        .transform_flatten(["tokens", "cosines"], as_=["token", "cosine"])
        .transform_window(n="row_number()")
        .transform_calculate(layer="datum.n - 1")
    )
    mlp_w = max(120, COLUMN - cell * n_heads - 90)
    mlp_bars = alt.layer(
        mlp.mark_bar(color=colours.colour("ink", "mark"), opacity=0.6).encode(
            y=ylay,
            x=alt.X("cosine:Q", scale=alt.Scale(domain=[0, 1]), title="cosine"),
            tooltip=["layer:O", "token:N", alt.Tooltip("cosine:Q", format=".3f")],
        ),
        mlp.mark_text(align="left", dx=3, fontSize=11).encode(y=ylay, x="cosine:Q", text="token:N"),
    ).properties(width=mlp_w, height=cell * n_layers, title="top number token of each MLP's write")
    middle = alt.hconcat(heat, mlp_bars, spacing=30)

    # --- attention from END of the heads past this step's threshold, or of the clicked head
    n_pos = int(data["tokens"].groupby("id").size().max())
    which = "length(data('headsel_store')) ? vlSelectionTest('headsel_store', datum) : datum.key_at <= ko_step"
    att = (
        alt.Chart(data["attention"])
        .transform_filter(this)
        .transform_filter(which)
        .transform_flatten(["scores"], as_=["score"])
        .transform_window(n="row_number()", groupby=["name"])
        .transform_calculate(pos="datum.n - 1", key="datum.id + ':' + (datum.n - 1)", row="'head ' + datum.name")
        .transform_lookup(lookup="key", from_=alt.LookupData(data["tokens"], "key", ["token", "role"]))
    )
    enc = dict(
        x=alt.X("pos:O", title=None, axis=None),
        y=alt.Y("row:N", title=None, sort=alt.EncodingSortField("key_at", order="ascending")),
    )
    strip = alt.layer(
        att.mark_rect().encode(
            **enc,
            color=alt.Color("score:Q", scale=alt.Scale(scheme=colours.scheme("attention"), domain=[0, 1]), legend=None),
            stroke=alt.condition(
                "datum.role != 'other' && datum.role != 'bos'",
                alt.value(colours.colour("ink", "outline")),
                alt.value(None),
            ),
            tooltip=["name:N", "pos:O", "token:N", "role:N", alt.Tooltip("score:Q", format=".3f")],
        ),
        att.mark_text(fontSize=10, limit=max(12, (COLUMN - 40) // n_pos - 2)).encode(
            **enc,
            text="token:N",
            color=alt.condition(
                "datum.score > 0.5",
                alt.value(colours.colour("ink", "white")),
                alt.value(colours.colour("ink", "black")),
            ),
        ),
    ).properties(
        width=COLUMN - 40,
        height=alt.Step(22),
        title=[
            "attention from END: the heads past this step's threshold, or the clicked head",
            "(outlined: operands, operator)",
        ],
    )

    # the strip's row count follows the slider and the click: re-lay the chart out on every update
    return (
        alt.vconcat(header, tops, middle, strip, spacing=18)
        .add_params(pid, ko)
        .properties(
            autosize=alt.AutoSizeParams(type="pad", resize=True),
            title=fig_title("Explorer", f"one prompt at a time on {model_name}", rules_lines(steps, rule)),
        )
    )


def knockout_verdict(row, intact) -> str:
    """The rule fixed before the run, for one slider step (``row``) against the intact model (``intact``; both
    rows of ``steps``): the knockout *lowers* the top-1 answer rate when its Wilson interval lies entirely below
    the intact one's ("holds"), "does not hold" when its count is at least the intact count, else "inconclusive"."""
    if row.n_heads == 0:
        return "— (no head past the threshold)"
    if row.ci_high < intact.ci_low:
        return "holds"
    return "does not hold" if row.correct >= intact.correct else "inconclusive"


def knockout_table(steps: pd.DataFrame, model_name: str) -> pd.DataFrame:
    """One row per slider step: threshold, heads past it, top-1 = answer after the knockout (count, rate, 95% CI),
    intact, and :func:`knockout_verdict`."""
    intact = steps[steps.step < 0].iloc[0]
    return pd.DataFrame(
        [
            {
                "model": model_name,
                "threshold": _thr(r.threshold),
                "heads past it": r.n_heads,
                "top-1 = answer": f"{r.correct}/{r.n}",
                "rate": _pct(r.correct / r.n),
                "95% CI": f"{_pct(r.ci_low)}–{_pct(r.ci_high)} (over {r.problems} problems)",
                "intact": f"{intact.correct}/{intact.n} ({_pct(intact.correct / intact.n)})",
                "lower than intact": knockout_verdict(r, intact),
            }
            for r in steps[steps.step >= 0].itertuples()
        ]
    )


def finding(steps: pd.DataFrame, model_name: str, thresholds) -> str:
    """The chapter's one computed line per model, at the slider's first position (:func:`default_step`)."""
    intact = steps[steps.step < 0].iloc[0]
    d = steps[steps.step == default_step(steps)].iloc[0]
    if not d.n_heads:
        return (
            f"**{model_name}**: no head is past any threshold from {_thr(thresholds[0])} to "
            f"{_thr(thresholds[-1])}: nothing to knock out."
        )
    heads = "the head" if d.n_heads == 1 else f"the {d.n_heads} heads"
    return (
        f"**{model_name}**: knocking out {heads} past {_thr(d.threshold)} (the whole 95% interval of the effect "
        f"below it; {components(d.heads[:5])}{', …' if d.n_heads > 5 else ''}) leaves the answer top-1 on "
        f"{_rate(d.correct, d.n, d.ci_low, d.ci_high, d.problems)}; intact {intact.correct}/{intact.n}: "
        f"lower than intact — {knockout_verdict(d, intact)} (against the intact model only: whether these heads "
        "matter more than as many random ones is the knockout claim, decided with its random band in Identify)."
    )
