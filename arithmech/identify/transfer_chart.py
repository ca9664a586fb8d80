"""Fig. 4 as a chart: the top-5 next tokens of the paper's transfer prompts, before and after knocking the heads out.

The paper's Fig. 4 shows, for four prompts that are not templates (an SVAMP word problem, multi-digit numbers,
a time span, decimals), LLaMA2-7B's five most likely next tokens before and after the key heads are knocked
out. :func:`transfer_chart` draws the same from identify's ``transfer.csv``
(:func:`arithmech.methods.ablation.transfer.transfer_table`:
``case, prompt, expected, status, when, rank, token, prob``):

* one row of two panels per prompt, "before" and "after", each with five bars (probability of each token; the
  correct next token's bar in the ``answer`` role's green, the others its grey: :mod:`arithmech.report.charts.colours`);
* above each row the prompt, its correct next token and that token's probability before → after (or "not in
  the top 5");
* a prompt with words the tokenizer does not know has no bars: the subtitle names it and the words.

Every number comes with its sample: a panel is *one* prompt, and its probabilities come from one
deterministic forward pass, so they carry no sampling interval (the subtitle says so); the one count over
prompts — how many have the correct token on top, before and after — is given with its n and a Wilson 95 %
interval (:func:`top1_counts`), which with three or four prompts is wide: Fig. 4 is an illustration, the
held-out family below it in the Identify chapter is the test.
"""

from __future__ import annotations

import re
import textwrap

import altair as alt
import pandas as pd

from arithmech.core.stats import wilson_interval
from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN, SUBTITLE_CHARS, fig_title

WHEN = {"before": "before the knockout", "after": "after the knockout"}
ANSWER = colours.scale("answer", {"correct next token": "answer", "other token": "other"})


def _text(x) -> str:
    """A token or answer as its text: a CSV reads "4" as 4, or as 4.0 in a column with missing values."""
    if x is None or x != x:
        return ""
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def _token(t) -> str:
    """A decoded token as a reader reads it: quoted, a blank one named (tokenizers decode a space to "")."""
    t = _text(t)
    return f"“{t}”" if t.strip() else "(a space)"


def _ok(transfer: pd.DataFrame) -> pd.DataFrame:
    """The rows of the prompts that ran, ``token`` and ``expected`` as text."""
    ok = transfer[transfer.status == "ok"]
    return ok.assign(token=ok.token.map(_text), expected=ok.expected.map(_text))


def _pct(x: float) -> str:
    """A probability: whole percents, two decimals below 1%, "<0.01%" below that."""
    return f"{100 * x:.0f}%" if x >= 0.01 else f"{100 * x:.2f}%" if x >= 1e-4 else "<0.01%"


def _ci(lo: float, hi: float) -> str:
    return f"95% CI {100 * lo:.0f}%–{100 * hi:.0f}%"


def case_frames(transfer: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(bars, skipped)``: the top-k rows of the prompts that ran, with ``shown`` (the token as a reader reads it,
    its probability) and ``is_answer`` (the correct next token or another), and one row per skipped prompt with
    the words its tokenizer does not know (``words``)."""
    ok = _ok(transfer)
    bars = ok.assign(
        is_answer=["correct next token" if t == e else "other token" for t, e in zip(ok.token, ok.expected)],
        shown=[f"{_token(t)}  {_pct(p)}" for t, p in zip(ok.token, ok.prob)],
        when_label=ok["when"].map(WHEN),
    )
    skip = transfer[transfer.status != "ok"].drop_duplicates("case")
    skipped = pd.DataFrame(
        {
            "case": skip.case,
            "prompt": skip.prompt,
            "words": [", ".join(f"“{w}”" for w in re.findall(r"'([^']*)'", s)) for s in skip.status],
        }
    )
    return bars, skipped


def top1_counts(transfer: pd.DataFrame) -> dict[str, tuple[int, int, float, float]]:
    """Per ``when`` (before, after): ``(k, n, lo, hi)``: prompts whose top-1 token is the correct next token, of
    the prompts that ran, with a Wilson 95% interval."""
    ok = _ok(transfer)
    ok = ok[ok["rank"] == 1]
    out = {}
    for when in WHEN:
        g = ok[ok["when"] == when]
        k, n = int((g.token == g.expected).sum()), len(g)
        out[when] = (k, n, *wilson_interval(k, n)) if n else (0, 0, float("nan"), float("nan"))
    return out


def _answer_prob(g: pd.DataFrame, when: str) -> str:
    hit = g[(g["when"] == when) & (g.token == g.expected)]
    return _pct(float(hit.prob.iloc[0])) if len(hit) else "not in the top 5"


def _panel(rows: pd.DataFrame, title: str, width: int) -> alt.LayerChart | alt.FacetChart:
    base = alt.Chart(rows)
    y = alt.Y("rank:O", title=None, axis=None)
    bars = base.mark_bar().encode(
        y=y,
        x=alt.X("prob:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%", tickCount=5), title="probability"),
        color=alt.Color("is_answer:N", scale=ANSWER, title=None, legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("rank:O", title="rank"), alt.Tooltip("shown:N", title="token, probability")],
    )
    text = base.mark_text(align="left", dx=3, fontSize=11, color=colours.colour("ink", "black")).encode(
        y=y, x="prob:Q", text="shown:N"
    )
    return alt.layer(bars, text).properties(width=width, height=alt.Step(17), title=title)


def transfer_chart(transfer: pd.DataFrame, model_name: str, knocked_out: str) -> alt.VConcatChart:
    """Fig. 4 of ``model_name`` from ``transfer.csv``'s rows; ``knocked_out``: which heads were knocked out, in
    words (the page says it from :mod:`arithmech.report.views.counts`: the key heads, or the top ones by effect
    rank)."""
    bars, skipped = case_frames(transfer)
    if bars.empty:
        raise ValueError("no transfer prompt ran on this model (every one has words its tokenizer does not know)")
    width = COLUMN // 2 - 40
    rows = []
    for case, g in bars.groupby("case", sort=True):
        prompt, expected = g.prompt.iloc[0], g.expected.iloc[0]
        head = textwrap.wrap(f"prompt {int(case) + 1}: “{prompt.strip()}”", SUBTITLE_CHARS) + [
            f"correct next token {_token(expected)}: {_answer_prob(g, 'before')} before → "
            f"{_answer_prob(g, 'after')} after"
        ]
        rows.append(
            alt.hconcat(
                *(_panel(g[g["when"] == w], WHEN[w], width) for w in WHEN),
                spacing=40,
                title=alt.TitleParams(head, fontSize=12, fontWeight="normal", anchor="start"),
            )
        )
    c = top1_counts(transfer)
    (kb, n, lb, hb), (ka, _, la, ha) = c["before"], c["after"]
    sub = [
        f"knocked out at END (mean ablation): {knocked_out}",
        f"correct token top-1 on {kb}/{n} prompts before ({_ci(lb, hb)}), {ka}/{n} after ({_ci(la, ha)}); each panel "
        "is one prompt (n = 1) and one deterministic forward pass, so its probabilities have no sampling interval",
    ]
    sub += [
        f"not run: prompt {int(r.case) + 1}, words the tokenizer does not know ({r.words})"
        for r in skipped.itertuples()
    ]
    return (
        alt.vconcat(*rows, spacing=24)
        .resolve_scale(color="shared")
        .properties(
            title=fig_title("Fig. 4", f"the heads knocked out on prompts that are not templates, {model_name}", sub)
        )
    )
