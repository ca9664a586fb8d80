"""The prompt explorer of the static book: one altair chart per model, all its data embedded, driven by
vega selections (no kernel, no network).

:func:`explorer_chart` draws :func:`arithmech.methods.explorer.precompute`'s tables as one compound chart:

* a **prompt** dropdown (every precomputed prompt) and a **key-head threshold** slider (a handful of
  precomputed steps) under the chart;
* a header naming the prompt, its answer token, the threshold and the key heads at that step, and how
  many of all the prompts keep the answer as top-1 token with those heads knocked out (Wilson 95% interval);
* the top-5 next tokens, intact and with the key heads mean-ablated at END (the answer's bar in green);
* the path-patching effect of every head (Fig. 2 style, the key heads at the current step outlined):
  **click a head** to show its attention alone (double-click: back to the key heads); beside it, layer by
  layer, the number token closest to what each MLP writes at END;
* the attention of the key heads (or the clicked head) from END over the prompt's tokens.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.core.names import components
from arithmech.paper import KEY_THRESHOLD
from arithmech.report import colours
from arithmech.report.plots import COLUMN, EFFECT_SCHEME, fig_title

ANSWERS = colours.scale("answer", {"answer token": "answer", "other": "other"})     # green: the answer token


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def step_labels(steps: pd.DataFrame) -> pd.DataFrame:
    """Two header lines (``step, line, label``) per slider step of ``steps``
    (:func:`~arithmech.methods.explorer.precompute`): the threshold and its key heads; how many prompts keep the
    answer as top-1 token knocked out and intact, with the 95% interval and the sample size."""
    intact = steps[steps.step < 0].iloc[0]
    base = (f"intact: {intact.correct}/{intact.n} ({_pct(intact.correct / intact.n)}, "
            f"95% CI {_pct(intact.ci_low)}–{_pct(intact.ci_high)})")
    out = []
    last = int(steps.step.max())
    for r in steps[steps.step >= 0].itertuples():
        heads = ", ".join(r.heads[:10]) + (f" … ({r.n_heads} in all)" if r.n_heads > 10 else "")
        out.append({"step": r.step, "line": 0, "label": f"threshold {100 * r.threshold:+g}% (step {r.step} of "
                    f"0–{last}) · " + (f"heads past it: {heads}" if r.n_heads else "no head passes it: nothing is knocked out")})
        out.append({"step": r.step, "line": 1, "label": (
            f"knocked out: top-1 = answer on {r.correct}/{r.n} prompts ({_pct(r.correct / r.n)}, 95% CI "
            f"{_pct(r.ci_low)}–{_pct(r.ci_high)}) · " if r.n_heads else "") + base})
    return pd.DataFrame(out)


def default_step(steps: pd.DataFrame, prefer: float = KEY_THRESHOLD) -> int:
    """The slider's first position: the paper's −5% when some head passes it, else the strictest step that
    has a key head (0 when none has)."""
    s = steps[steps.step >= 0]
    at = s[(s.threshold - prefer).abs() < 1e-12]
    if len(at) and int(at.n_heads.iloc[0]) > 0:
        return int(at.step.iloc[0])
    some = s[s.n_heads > 0]
    return int(some.step.iloc[0]) if len(some) else 0


def explorer_chart(data: dict[str, pd.DataFrame], heads: pd.DataFrame, model_name: str,
                   max_label: int = 60) -> alt.VConcatChart:
    """The explorer of one model. ``data``: :func:`~arithmech.methods.explorer.precompute`'s tables;
    ``heads``: :func:`~arithmech.methods.explorer.head_steps` (every head's effect and ``key_at``).

    Params: ``pid`` (prompt id, a dropdown), ``ko_step`` (slider step), ``headsel`` (a head clicked in the
    heatmap). Every view filters its own embedded table by them, so nothing is computed in the browser
    beyond flattening the per-prompt arrays.
    """
    P, steps = data["prompts"], data["steps"]
    n_steps = int((steps.step >= 0).sum())
    labels = [f"{i}: {p}" if len(p) <= max_label else f"{i}: {p[:max_label - 1]}…" for i, p in zip(P.id, P.prompt)]
    pid = alt.param(name="pid", value=0, bind=alt.binding_select(options=list(map(int, P.id)), labels=labels,
                                                                 name="prompt "))
    ko = alt.param(name="ko_step", value=default_step(steps), bind=alt.binding_range(
        min=0, max=n_steps - 1, step=1, name="key-head threshold step (left: strict, right: loose) "))
    headsel = alt.selection_point(name="headsel", fields=["name"], on="click", clear="dblclick")
    this = alt.datum.id == pid

    # --- header: the prompt, then the slider's step (four text lines)
    lines = pd.concat([
        P.assign(line=0, label=[f"prompt “{p}” · answer token “{a}”" for p, a in zip(P.prompt, P.answer)]),
        P.assign(line=1, label=[f"{o}, template {t} · prompt {i + 1} of {len(P)}"
                                for i, o, t in zip(P.id, P.op, P.template)])])[["id", "line", "label"]]
    txt = dict(align="left", baseline="top", fontSize=12, limit=COLUMN)
    y = alt.Y("line:O", axis=None, scale=alt.Scale(domain=[0, 1, 2, 3]))
    header = alt.layer(
        alt.Chart(lines).mark_text(**txt, fontWeight=600).encode(x=alt.value(0), y=y, text="label:N")
        .transform_filter(this),
        alt.Chart(step_labels(steps).assign(line=lambda d: d.line + 2)).mark_text(**txt).encode(
            x=alt.value(0), y=y, text="label:N").transform_filter(alt.datum.step == ko),
    ).properties(width=COLUMN, height=alt.Step(17))

    # --- top-5 next tokens, intact and knocked out
    def top_panel(cond, title: str) -> alt.LayerChart:
        base = alt.Chart(data["top"]).transform_filter(this).transform_filter(cond).transform_flatten(
            ["tokens", "probs"], as_=["token", "prob"]).transform_window(rank="row_number()").transform_calculate(
            is_answer="datum.rank == datum.answer_rank ? 'answer token' : 'other'",
            shown="datum.token + '  ' + format(datum.prob, '.1%')")
        y = alt.Y("rank:O", title=None, axis=None)
        bars = base.mark_bar().encode(
            y=y, x=alt.X("prob:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title="probability"),
            color=alt.Color("is_answer:N", scale=ANSWERS,
                            legend=None),
            tooltip=["rank:O", "token:N", alt.Tooltip("prob:Q", format=".2%")])
        text = base.mark_text(align="left", dx=3, fontSize=11, limit=110).encode(
            y=y, x=alt.X("prob:Q"), text="shown:N")
        return alt.layer(bars, text).properties(width=COLUMN // 2 - 30, height=alt.Step(18), title=title)

    tops = alt.hconcat(top_panel(alt.datum.step == -1, "top-5 next tokens, intact"),
                       top_panel(alt.datum.step == ko, "key heads knocked out (mean, END)"), spacing=24)

    # --- every head's effect; click one
    n_layers, n_heads = int(heads.layer.max()) + 1, int(heads["head"].max()) + 1
    cell = max(10, min(24, 420 // n_layers))
    m = float(heads.effect.abs().max()) or 1.0
    ylay = alt.Y("layer:O", sort="descending", title="layer")
    stored = set(data["attention"].name)
    hm = heads.assign(attention=["shown" if n in stored else "not precomputed" for n in heads.name])
    heat = alt.Chart(hm).mark_rect().encode(
        x=alt.X("head:O", title="head"), y=ylay,
        color=alt.Color("effect:Q", scale=alt.Scale(scheme=EFFECT_SCHEME, domain=[-m, m], domainMid=0),
                        legend=alt.Legend(format=".0%", orient="bottom", gradientLength=140, title="effect")),
        stroke=alt.condition("datum.key_at <= ko_step", alt.value(colours.colour("ink", "outline")),
                             alt.value(colours.colour("ink", "white"))),
        strokeWidth=alt.condition("datum.key_at <= ko_step", alt.value(2), alt.value(0.5)),
        opacity=alt.condition(headsel, alt.value(1.0), alt.value(0.3)),
        tooltip=["name:N", alt.Tooltip("effect:Q", format=".2%"), "rank:Q", "attention:N"],
    ).add_params(headsel).properties(width=cell * n_heads, height=cell * n_layers,
                                     title="effects (outlined: key heads; click one)")
    mlp = alt.Chart(data["mlp"]).transform_filter(this).transform_flatten(
        ["tokens", "cosines"], as_=["token", "cosine"]).transform_window(n="row_number()").transform_calculate(
        layer="datum.n - 1")
    mlp_w = max(120, COLUMN - cell * n_heads - 90)
    mlp_bars = alt.layer(
        mlp.mark_bar(color=colours.colour("ink", "mark"), opacity=0.6).encode(
            y=ylay, x=alt.X("cosine:Q", scale=alt.Scale(domain=[0, 1]), title="cosine"),
            tooltip=["layer:O", "token:N", alt.Tooltip("cosine:Q", format=".3f")]),
        mlp.mark_text(align="left", dx=3, fontSize=11).encode(y=ylay, x="cosine:Q", text="token:N"),
    ).properties(width=mlp_w, height=cell * n_layers, title="top number token of each MLP's write")
    middle = alt.hconcat(heat, mlp_bars, spacing=30)

    # --- attention from END of the key heads at this step, or of the clicked head
    n_pos = int(data["tokens"].groupby("id").size().max())
    which = "length(data('headsel_store')) ? vlSelectionTest('headsel_store', datum) : datum.key_at <= ko_step"
    att = alt.Chart(data["attention"]).transform_filter(this).transform_filter(which).transform_flatten(
        ["scores"], as_=["score"]).transform_window(n="row_number()", groupby=["name"]).transform_calculate(
        pos="datum.n - 1", key="datum.id + ':' + (datum.n - 1)", row="'head ' + datum.name").transform_lookup(
        lookup="key", from_=alt.LookupData(data["tokens"], "key", ["token", "role"]))
    enc = dict(x=alt.X("pos:O", title=None, axis=None), y=alt.Y("row:N", title=None, sort=alt.EncodingSortField(
        "key_at", order="ascending")))
    strip = alt.layer(
        att.mark_rect().encode(**enc, color=alt.Color("score:Q", scale=alt.Scale(scheme=colours.scheme("attention"), domain=[0, 1]),
                                                      legend=None),
                               stroke=alt.condition("datum.role != 'other' && datum.role != 'bos'",
                                                    alt.value(colours.colour("ink", "outline")), alt.value(None)),
                               tooltip=["name:N", "pos:O", "token:N", "role:N", alt.Tooltip("score:Q", format=".3f")]),
        att.mark_text(fontSize=10, limit=max(12, (COLUMN - 40) // n_pos - 2)).encode(
            **enc, text="token:N", color=alt.condition("datum.score > 0.5", alt.value(colours.colour("ink", "white")),
                                             alt.value(colours.colour("ink", "black")))),
    ).properties(width=COLUMN - 40, height=alt.Step(22),
                 title="attention from END (heads past this step's threshold, or the clicked head; outlined: operands, operator)")

    return alt.vconcat(header, tops, middle, strip, spacing=18).add_params(pid, ko).properties(
        title=fig_title("Explorer", f"one prompt at a time on {model_name}",
                        "pick a prompt and a threshold under the chart; click a head in the effects map"))


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
    """One row per slider step: threshold, key heads, top-1 = answer after the knockout (count, rate, 95% CI),
    intact, and :func:`knockout_verdict`."""
    intact = steps[steps.step < 0].iloc[0]
    return pd.DataFrame([{
        "model": model_name, "threshold": f"{100 * r.threshold:+g}%", "heads past it": r.n_heads,
        "top-1 = answer": f"{r.correct}/{r.n}", "rate": _pct(r.correct / r.n),
        "95% CI": f"{_pct(r.ci_low)}–{_pct(r.ci_high)}",
        "intact": f"{intact.correct}/{intact.n} ({_pct(intact.correct / intact.n)})",
        "lower than intact": knockout_verdict(r, intact)} for r in steps[steps.step >= 0].itertuples()])


def finding(steps: pd.DataFrame, model_name: str, thresholds) -> str:
    """The chapter's one computed line per model, at the slider's first position (:func:`default_step`)."""
    intact = steps[steps.step < 0].iloc[0]
    d = steps[steps.step == default_step(steps)].iloc[0]
    if not d.n_heads:
        return (f"**{model_name}**: no head passes any threshold from {100 * thresholds[0]:+g}% to "
                f"{100 * thresholds[-1]:+g}%: nothing to knock out.")
    return (f"**{model_name}**: knocking out the {d.n_heads} head(s) whose mean effect is below "
            f"{100 * d.threshold:+g}% "
            f"({components(d.heads[:5])}) leaves the answer top-1 on {d.correct}/{d.n} prompts "
            f"({_pct(d.correct / d.n)}, 95% CI {_pct(d.ci_low)}–{_pct(d.ci_high)}; intact {intact.correct}/{intact.n}): "
            f"lower than intact — {knockout_verdict(d, intact)}.")
