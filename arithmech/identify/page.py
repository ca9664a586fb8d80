"""The Identify chapter's page: every table, chart and sentence of ``book/identify.md``, one call per cell.

:func:`run` loads the chapter's model and runs the identify step on it (path patching, key heads, knockouts,
transfer), rewriting its files; it returns a dict ``r`` (``P`` the config, ``net``, ``tok``, ``geo``, ``res``
the in-memory :class:`~arithmech.identify.pipeline.IdentifyResult` of :func:`arithmech.identify.run.compute`,
``out`` the results folder) that the other functions
read (the knockout's sections: :mod:`arithmech.identify.knockout_page`). :func:`stability` runs (or reads)
the key-head stability step. Each function returns what its cell shows: a sentence (the cell prints it), a Markdown
block, a DataFrame or Styler, an altair chart, or a list of display objects (the cell calls ``display(*…)``)::

    >>> r = run(P)
    >>> print(header(r)); info(r); print(tokens_line(r)); tokens_table(r)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd
from pandas.io.formats.style import Styler

from arithmech import paper
from arithmech.claims.decide import claims, rules_markdown
from arithmech.claims.evidence import Context
from arithmech.core import results as results_io
from arithmech.core.models import load_model
from arithmech.core.names import component, component_label, components
from arithmech.core.stats import wilson_interval
from arithmech.data.batches import answer_ids
from arithmech.data.floors import not_passed, shown
from arithmech.identify import run as identify_run
from arithmech.identify import stability_charts as stability_charts
from arithmech.identify.pipeline import IdentifyResult
from arithmech.identify.result import Result, of
from arithmech.methods.patching import path_patch
from arithmech.pipeline.ensure import ensure
from arithmech.report.build.chapters import Identify as IdentifyChapter
from arithmech.report.charts import effect_chart
from arithmech.report.views import counts
from arithmech.report.views.cells import bullets, markdown
from arithmech.report.views.pages import REAL, chapter_end, claim_lines, shipped_lines
from arithmech.report.views.table_display import verdict
from arithmech.steps import stability as stability_step

CLAIMS = [
    "key-heads-exist",
    "key-heads-exist-share",
    "few-heads",
    "middle-layers",
    "logit-diff-ranking",
    "knockout-key-vs-random",
    "knockout-ld-key-vs-random",
    "knockout-random-flat",
    "transfer",
    "answer-token-floor",
    "ablation-removes-information",
    "key-heads-stable",
    "counterfactuals-agree",
]


END_CLAIMS = [
    "key-heads-exist",
    "knockout-key-vs-random",
    "knockout-ld-key-vs-random",
    "ablation-removes-information",
    "answer-token-floor",
    "key-heads-stable",
    "counterfactuals-agree",
]


INFO = {
    "n_drawn": "pairs drawn",
    "n_correct": "answer token right",
    "n_exact_correct": "token and whole answer right",
    "n_kept": "X_r (right, X_c checked)",
    "accuracy": "answer-token accuracy",
    "exact_match": "exact match (greedy, whole answer)",
}


def rules() -> Any:
    """The rules of the chapter's claims, as the rules page words them."""
    return markdown(rules_markdown(CLAIMS))


@dataclass(frozen=True)
class Run:
    """The chapter's run of identify (:func:`run`), what every cell of the page reads: the chapter's parameters ``P``,
    the loaded model ``net``, its tokenizer ``tok`` and geometry ``geo``, identify's in-memory result ``res`` (each
    task's kept samples, the timings unrounded), the files it wrote read back (``files``, identify's :class:`Result`)
    and the folder they sit in (``out``, which :func:`header` names; the claims read the files through ``files``)."""

    P: IdentifyChapter
    net: Any
    tok: Any
    geo: Any
    res: IdentifyResult
    files: Result
    out: Path


def run(P: IdentifyChapter) -> Run:
    """Load ``P.model_name`` (sdpa attention) and run the identify step with the chapter's parameters, overwriting its
    files in ``P.results/<model-name>/``, then read them back."""
    net, tok, geo = load_model(P.model_name, device=P.device, dtype=P.dtype, attn_implementation="sdpa")
    config = P.to_identify()
    res = identify_run.compute(config, net, tok)
    out = results_io.model_folder(P.results, P.model_name)
    return Run(P=P, net=net, tok=tok, geo=geo, res=res, files=of(config), out=out)


def header(r: Run) -> str:
    """The model's shape, where the files went and the seconds spent."""
    t = r.res.timings
    return (
        f"{r.geo.n_layers} layers x {r.geo.n_heads} heads; results in {r.out}; "
        f"{t['patching']:.1f} s path patching, {t['total']:.1f} s in all"
    )


def info(r: Run) -> pd.DataFrame:
    """Per task: pairs drawn, answered right (token, and whole answer), kept as X_r, and both accuracies."""
    return pd.DataFrame(r.res.info).T[list(INFO)].rename(columns=INFO)


def rate(k: float, n: float) -> str:
    """ "k/n = share [Wilson 95%]", or "—" with no prompt."""
    if not n:
        return "—"
    lo, hi = wilson_interval(int(k), int(n))
    return f"{int(k)}/{int(n)} = {k / n:.0%} [{lo:.0%}, {hi:.0%}]"


def _tokens(files: Result) -> pd.DataFrame:
    if files.answer_tokens is None:
        raise ValueError("identify's files hold no answer_tokens.csv (ready-made samples): no answer-token table")
    return files.answer_tokens


def tokens_view(files: Result) -> pd.DataFrame:
    """``answer_tokens.csv`` in words, one row per task and template (``template`` "all" for the whole task):
    accuracy, exact match, how often X_c changes the answer and the most frequent answer token's share, each
    as "k/n = share [Wilson 95%]"."""
    t = _tokens(files)
    return pd.DataFrame(
        {
            "task": t.task,
            "template": t.template,
            "answer-token accuracy": [rate(k, n) for k, n in zip(t.correct, t.n_drawn)],
            "exact match (greedy)": [rate(k, n) for k, n in zip(t.exact, t.n_drawn)],
            "X_c changes the answer": [rate(p, c) for p, c in zip(t.xc_passed, t.xc_checked)],
            "most frequent answer token": t.top_token.fillna("—"),
            "its share of the kept X_r (floor)": [rate(round(s * n), n) for s, n in zip(t.top_share.fillna(0), t.n)],
        }
    )


def tokens_line(r: Run) -> str:
    """The answer-token rule, the largest share of one answer token among a task's kept prompts, and how often
    X_c changes the answer."""
    t = _tokens(r.files)
    whole = t[t.template == "all"]
    worst = whole.loc[whole.top_share.idxmax()]
    return (
        f"answer token: {r.P.answer_token}; the largest share of one answer token among a task's kept prompts "
        f"is {rate(round(worst.top_share * worst.n), worst.n)} ({worst.top_token!r}, task {worst.task}); "
        f"X_c changes the answer on {rate(whole.xc_passed.sum(), whole.xc_checked.sum())} of the pairs answered right"
    )


def tokens_table(files: Result, templates: bool = False) -> Styler:
    """:func:`tokens_view`: one row per task, or (``templates``) one per template."""
    v = tokens_view(files)
    return (v[v.template != "all"] if templates else v[v.template == "all"].drop(columns="template")).style.hide(
        axis="index"
    )


def heatmap(r: Run) -> alt.TopLevelMixin:
    """Fig. 3: every head's and MLP's effect, all tasks together (or the one task)."""
    res = r.res
    return effect_chart.effect_heatmap(res.effects, "all" if len(res.tasks) > 1 else next(iter(res.tasks)))


def pooled_line(key_heads: dict) -> str:
    """Which operations task ``all`` pools (key_heads.json's ``control``: the tasks that pass identify's control), and
    which do not, with why (failing, undecided or insufficient: :func:`arithmech.data.floors.shown`); "" for a
    single task or a file without a control. Every claim decided on ``all`` rests on the pooled operations only, so
    the page says which they are."""
    ctl = key_heads.get("control") or {}
    if key_heads.get("task") != "all" or not ctl.get("pooled"):
        return ""
    out = [t for t in not_passed(ctl) if t not in ctl["pooled"]]
    return (
        f"Task all pools the operations that pass identify's control: {', '.join(ctl['pooled'])}"
        + (". Not passing it: " + "; ".join(f"{t} ({shown(ctl, t)})" for t in out) if out else "")
        + "."
    )


def key_heads_lines(r: Run) -> str:
    """The key-head count in words beside the paper's, and (with key heads) their depth beside the paper's.

    Depth is layer/(L−1), the middle-layers rule's (:func:`arithmech.identify.claims._middle_layers`): 0 for the first
    layer, 1 for the last. The paper gives no count of its key heads (§5.1: "only a small number of heads");
    Table 4 lists its top 10 and precise SFT tunes its top 32."""
    paper_heads, ours = paper.KEY_HEADS["table4_ours"], pd.DataFrame(r.res.key_heads["heads"])
    last = paper.N_LAYERS - 1
    lines = [
        counts.key_heads(r.files).sentence()
        + f" Paper: a small number of the {paper.N_LAYERS * paper.N_HEADS:,} heads of LLaMA2-7B (no count given; "
        f"Table 4 lists the top {len(paper_heads)}, precise SFT tunes the top 32), mainly in layers "
        f"{paper.KEY_HEAD_LAYERS[0]}-{paper.KEY_HEAD_LAYERS[1]} of {paper.N_LAYERS}."
    ]
    if len(ours):
        depth = ours["layer"] / max(r.geo.n_layers - 1, 1)
        span = f"{depth.min():.0%}" if depth.min() == depth.max() else f"{depth.min():.0%} to {depth.max():.0%}"
        lines.append(
            f"their depth layer/(L−1): {span} (paper: "
            + " to ".join(f"{l}/{last} = {l / last:.0%}" for l in paper.KEY_HEAD_LAYERS)
            + ")"
        )
    pooled = pooled_line(r.res.key_heads)
    return "\n".join(([pooled] if pooled else []) + lines)


def key_heads_table(r: Run) -> Styler:
    """The key heads by rank with effect and 95 % interval, beside the paper's (Table 4)."""
    heads, paper_heads = r.res.key_heads["heads"], paper.KEY_HEADS["table4_ours"]
    n = max(len(heads), len(paper_heads))
    return pd.DataFrame(
        {
            "rank": range(1, n + 1),
            "ours": [
                f"{component_label(h['name'])} ({h['effect']:+.1%} [{h['effect_lo']:+.1%}, {h['effect_hi']:+.1%}])"
                for h in heads
            ]
            + [""] * (n - len(heads)),
            "paper, LLaMA2-7B (Table 4, ours)": [component(l, h) for l, h in paper_heads]
            + [""] * (n - len(paper_heads)),
        }
    ).style.hide(axis="index")


def mlps(r: Run) -> Styler | str:
    """The MLPs past the threshold: rank, effect with its interval and logit difference."""
    kh = r.res.key_heads
    if not kh["mlps"]:
        return "no MLP passes the threshold"
    m = pd.DataFrame(kh["mlps"])
    return pd.DataFrame(
        {
            "rank": m["rank"],
            "MLP": [component(l) for l in m.layer],
            "effect [95% interval]": [
                f"{e:+.1%} [{lo:+.1%}, {hi:+.1%}]" for e, lo, hi in zip(m.effect, m.effect_lo, m.effect_hi)
            ],
            "logit difference": m.logit_diff.map("{:+.3f}".format),
        }
    ).style.hide(axis="index")


def stability(r: Run) -> stability_step.Result:
    """The key-head stability step on addition (``P.stability_seeds`` draws at each of ``P.stability_sizes``),
    from its files when made with these parameters."""
    P = r.P
    return ensure(P.to_stability(), model=r.net, tok=r.tok)


def stability_line(st: stability_step.Result) -> str:
    """How many runs, their seconds, and the X_r prompts each size kept."""
    runs = st.runs
    return (
        f"{len(runs)} runs, {st.record['timings'].get('total', float('nan')):.0f} s; X_r prompts per run: "
        + ", ".join(f"{n} pairs → {g.n.min()}–{g.n.max()}" for n, g in runs[runs.family == "all"].groupby("size"))
    )


def jaccard(st: stability_step.Result) -> alt.TopLevelMixin:
    """The key-head sets' Jaccard overlap between draws, by size."""
    return stability_charts.jaccard_chart(st.table)


def head_intervals(st: stability_step.Result, r: Run) -> alt.TopLevelMixin:
    """The top 20 heads' effect intervals in every stability run, against the threshold."""
    return stability_charts.head_intervals_chart(st.heads, r.P.threshold, top=20)


def stability_claims(st: stability_step.Result) -> Styler:
    """The stability step's claims: what this run found and the verdict."""
    s = stability_step.claims(st.table, st.runs)
    return (
        s.assign(holds=s.holds.map(verdict))[["claim", "here", "holds"]]
        .rename(columns={"here": "this run", "holds": "verdict"})
        .style.hide(axis="index")
    )


def task_heatmaps(r: Run) -> alt.TopLevelMixin | str:
    """Fig. 15: the effects task by task (one task: says so)."""
    res = r.res
    return (
        effect_chart.effect_heatmap(res.effects, list(res.tasks), fig="Fig. 15")
        if len(res.tasks) > 1
        else "one task only"
    )


def per_task(r: Run) -> Styler | None:
    """Each task's own key heads and their count (None without per-task heads)."""
    per = {t: [h["name"] for h in hs] for t, hs in r.res.key_heads.get("per_task", {}).items()}
    return (
        pd.DataFrame(
            {
                "task": list(per),
                "key heads": [components(v) if v else "—" for v in per.values()],
                "count": [len(v) for v in per.values()],
            }
        ).style.hide(axis="index")
        if per
        else None
    )


def fast_vs_reference(r: Run) -> str:
    """The fast path patching against the reference implementation on 8 samples: the largest difference."""
    few, net, tok, geo = next(iter(r.res.tasks.values()))[:8], r.net, r.tok, r.geo
    args = (net, tok, [s.clean for s in few], [s.corrupt for s in few], answer_ids(tok, few))
    fast, ref = path_patch(*args, method="fast"), path_patch(*args, method="reference")
    return (
        f"max |effect fast - effect reference| over {len(few)} samples x {geo.n_layers * (geo.n_heads + 1)} senders: "
        f"{(fast.relative_change() - ref.relative_change()).abs().max():.1e}"
    )


def verdicts(r: Run) -> pd.DataFrame:
    """The chapter's claims decided on this run's files."""
    return claims(Context.of(r.files), CLAIMS)


def claims_md(r: Run) -> Any:
    """Every claim of the chapter with its verdict, one bullet each."""
    return bullets(claim_lines(verdicts(r), CLAIMS))


def end(r: Run) -> None:
    """The chapter's findings (:func:`arithmech.report.views.pages.chapter_end`): the key-head count and six claims."""
    lines = [counts.key_heads(r.files).sentence()] + claim_lines(verdicts(r), END_CLAIMS)
    chapter_end(lines, r.P.model_name, r.P, real=shipped_lines(Context(Path(r.P.results) / REAL[0]), END_CLAIMS))
