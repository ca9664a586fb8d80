"""The Analyze chapter's page: every table, chart and sentence of ``book/analyze.md``, one call per cell.

:func:`run` runs the analyze step on the chapter's config and returns a :class:`Run` ``r``: what the run holds in
memory (``r.res``, :class:`~arithmech.analyze.run.Computed`: the model, the samples, the unrounded frames), the files
it wrote read back (``r.files``, :class:`~arithmech.analyze.result.AnalyzeResult`) and identify's key heads. Every
other function takes ``r``, or the :class:`AnalyzeResult` alone where its cell shows only what the files hold, and
returns what its cell shows: a sentence (the cell prints it), a Markdown block, a Styler or an altair chart::

    >>> r = run(P)
    >>> print(header(r)); labels(r); role_summary(r); band_chart(r.files)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd
from pandas.io.formats.style import Styler

from arithmech import paper
from arithmech.analyze.claims import specific_text
from arithmech.analyze.result import AnalyzeResult, of
from arithmech.analyze.run import Computed, compute
from arithmech.claims.decide import claims
from arithmech.claims.evidence import Context
from arithmech.core.names import component, components, stages
from arithmech.identify.result import Ranking
from arithmech.methods import attention
from arithmech.methods import explorer as explorer_method
from arithmech.methods.ablation.transfer import unknown_words
from arithmech.report.build.chapters import Analyze as AnalyzeChapter
from arithmech.report.charts import attention_chart, mlp_chart
from arithmech.report.charts.attention_control import baseline_table, labels_table, nonkey_band_chart
from arithmech.report.views import counts
from arithmech.report.views.cells import bullets
from arithmech.report.views.pages import REAL, chapter_end, claim_lines, shipped_lines
from arithmech.report.views.widgets import explorer

CURVES = [("MLP_in vs operands (Fig. 13)", "operands"), ("MLP_out - MLP_in vs {C} (Fig. 14)", "answer")]
OPERATION_WORDS = [f"8 {w} 2 equals to" for w in ("plus", "minus", "times", "over")]  # Fig. 16's sentences


@dataclass(frozen=True)
class Run:
    """The chapter's run of analyze (:func:`run`), what every cell of the page reads: the chapter's parameters ``P``,
    what the run holds in memory ``res`` (the model, its tokenizer and geometry, the samples, the studied heads, the
    unrounded frames and stages), the files it wrote read back (``files``, analyze's :class:`AnalyzeResult`) and
    identify's key heads ``kh`` (:func:`arithmech.report.views.counts.key_heads`)."""

    P: AnalyzeChapter
    res: Computed
    files: AnalyzeResult
    kh: counts.KeyHeads


def run(P: AnalyzeChapter) -> Run:
    """The analyze step on the chapter's parameters (identify's files: the Identify chapter's), rewriting
    its files, then read back."""
    config = P.to_analyze()
    res = compute(config)
    return Run(P=P, res=res, files=of(config), kh=counts.key_heads(Ranking.of(config.results, config.model_name)))


def header(r: Run) -> str:
    """The model's shape, the reference samples and the heads studied, as every page quotes them."""
    geo, kh = r.res.geometry, r.kh
    return (
        f"{r.P.model_name}: {geo.n_layers} layers x {geo.n_heads} query heads ({geo.n_kv_heads} K/V heads), "
        f"{len(r.res.samples)} reference samples; identify found {kh.summary()}; studied here: {kh.studied_phrase()}"
    )


def labels(r: Run) -> Styler:
    """Fig. 5's table: each studied head's attention mass by role, its label, and its label without the first
    position."""
    return labels_table(r.res.labels, attention.label_heads(r.res.roles, r.res.key_heads, view="without first"))


def roles_chart(r: Run) -> alt.TopLevelMixin:
    """Fig. 5: the studied heads' END-row attention mass by role."""
    return attention_chart.attention_roles_chart(r.res.roles, r.res.labels)


def roles7b() -> dict[str, str]:
    """The paper's operand and operator heads of LLaMA2-7B, spelled as components."""
    return {k: components(v) for k, v in paper.HEAD_ROLES.items()}


def role_summary(r: Run) -> str:
    """Five lines: the studied heads of each label, their mean mass by role, and the paper's roles."""
    lab, r7 = r.res.labels, roles7b()
    lines = [
        f"{kind + ' heads:':16s} {components(lab[lab.label == kind].name)}" for kind in ("operand", "operator", "other")
    ]
    lines.append(
        f"mass on the operands + operator, mean over the {len(lab)} head{'s' * (len(lab) != 1)} studied here: "
        f"{(lab.operand + lab.operator).mean():.2f} "
        f"(BOS {lab.bos.mean():.2f}, first position {lab['first'].mean():.2f}, other tokens {lab.other.mean():.2f}; "
        f"{len(r.res.samples)} prompts)"
    )
    lines.append(
        f"paper, LLaMA2-7B: operand heads {r7['operand']}; operator heads {r7['operator']}; "
        "'minimal attention to tokens outside of the operands/operators'"
    )
    return "\n".join(lines)


def roles_explorer(r: Run) -> alt.TopLevelMixin:
    """Every head's attention mass by role (the studied heads first), one head at a time."""
    geo = r.res.geometry
    others = [f"{l}.{h}" for l in range(geo.n_layers) for h in range(geo.n_heads) if (l, h) not in r.res.key_heads]
    return attention_chart.attention_roles_explorer(r.res.roles, heads=list(r.res.labels.name) + others)


def verdict_lines(files: AnalyzeResult, role: str) -> list[str]:
    """The sentences of ``role``'s rule (``attention-roles`` for the operands, ``attention-reads-operator`` for the
    operator; first position excluded), on ``attention_baseline.csv`` (each studied head against the non-key heads);
    the heads are the key heads, or the top 10 where none passes (``analyze.json``'s ``heads_from``)."""
    return attention.verdict_lines(files.baseline, role, heads_from=files.heads_from)


def verdicts(files: AnalyzeResult, role: str, skip: int = 0) -> Any:
    """:func:`verdict_lines` as a bullet list, its first ``skip`` lines left out."""
    return bullets(verdict_lines(files, role)[skip:])


def band_chart(files: AnalyzeResult) -> alt.TopLevelMixin:
    """Each studied head's role mass against the non-key heads' band."""
    return nonkey_band_chart(files.baseline)


def baseline_view(files: AnalyzeResult) -> Styler:
    """The band comparison as numbers: operands, operator and first position."""
    return baseline_table(files.baseline)


def heads_note(r: Run, kind: str) -> str:
    """The heads of ``kind`` (operand or operator) the strips show, key heads marked."""
    hs = attention.heads_of_kind(r.res.roles, r.res.key_heads, kind)
    return f"{kind} heads shown: " + ", ".join(
        component(l, h) + (" (key head)" if (l, h) in r.res.key_heads else "") for l, h in hs
    )


def operand_strips(r: Run) -> alt.TopLevelMixin:
    """Fig. 7: the operand heads' END-row attention on each template's first sample and the paper's Fig. 4
    prompts the tokenizer can spell."""
    heads = attention.heads_of_kind(r.res.roles, r.res.key_heads, "operand")
    unseen = [p for p, _ in paper.FIG4_CASES if not unknown_words(r.res.tok, p)]
    return attention_chart.attention_strip_chart(
        explorer_method.strips(r.res.model, r.res.tok, heads, r.res.samples, prompts=unseen),
        fig="Fig. 7",
        title="Attention of the operand heads from END, sentence by sentence",
    )


def operator_strips(r: Run) -> alt.TopLevelMixin:
    """Fig. 16: the operator heads on one sentence per operation word."""
    heads = attention.heads_of_kind(r.res.roles, r.res.key_heads, "operator")
    return attention_chart.attention_strip_chart(
        explorer_method.strips(r.res.model, r.res.tok, heads, prompts=OPERATION_WORDS),
        fig="Fig. 16",
        title="Attention of the operator heads on operation words",
    )


def mlp_in_chart(r: Run) -> alt.TopLevelMixin:
    """Fig. 6a / 13: cos(MLP_in, W_U[A], W_U[B]) by layer, with the stage layers."""
    return mlp_chart.mlp_in_chart(r.res.mlp, r.res.stages.get("operands"))


def mlp_diff_chart(r: Run) -> alt.TopLevelMixin:
    """Fig. 6b / 14: cos(MLP_out - MLP_in, W_U[C], W_U[other]) by layer, with the stage layers."""
    return mlp_chart.mlp_diff_chart(r.res.mlp, r.res.stages.get("answer"))


def stage(t: Any) -> str:
    """Start–inflection–end layers, or why there are none."""
    return stages(t) if t else "n/a (< 5 layers)"


def _rel(t: Any, n: int) -> str:
    return stages(t, lambda x: f"{x / n:.2f}") if t else ""


def stages_table(r: Run) -> Styler:
    """Both curves' stage layers beside App. C's, in layers and as shares of the depth (one row per curve)."""
    model, n = r.P.model_name, r.res.geometry.n_layers
    s7b, n7b = paper.STAGES["LLaMA2-7B"]
    return pd.DataFrame(
        [
            {
                "curve": curve,
                **{f"{m} ({k} layers)": stage(t) for m, (t, k) in paper.STAGES.items()},
                f"{model} ({n})": stage(r.res.stages.get(key)),
                "paper 7B, share of depth": _rel(s7b, n7b),
                f"{model}, share of depth": _rel(r.res.stages.get(key), n),
            }
            for curve, key in CURVES
        ]
    ).style.hide(axis="index")


def specific_line(r: Run) -> str:
    """The stages on the answer-specific curves (each minus its matched baseline), each knot with its 95% interval over
    problem clusters, and the interval of the answer's inflection minus the operands' (what the stages rule reads)."""
    sp = r.files.specific_stages
    if not sp:
        return "No answer-specific stages: the model has fewer than 5 layers."
    return "On the answer-specific curves (each minus its baseline over the other number tokens): " + specific_text(sp)


def peaks(r: Run) -> str:
    """Two lines: the peaks of cos(MLP_in, A / B) and the first and last layers' cos of the MLP write with C."""
    w = r.res.mlp.pivot(index="layer", columns="quantity", values="value")
    return (
        f"peak cos(MLP_in, A): {w.in_A.max():.3f} at layer {w.in_A.idxmax()}; "
        f"peak cos(MLP_in, B): {w.in_B.max():.3f} at layer {w.in_B.idxmax()}\n"
        f"cos(MLP_out - MLP_in, C): {w.diff_C.iloc[0]:.3f} at layer 0 -> {w.diff_C.iloc[-1]:.3f} at the last layer; "
        f"other numbers: {w.diff_other.iloc[0]:.3f} -> {w.diff_other.iloc[-1]:.3f}"
    )


def projection_explorer(r: Run) -> alt.TopLevelMixin:
    """Every quantity of ``mlp_projection.csv``, one at a time."""
    return mlp_chart.mlp_projection_explorer(r.res.mlp)


def next_tokens(r: Run, prompt: str) -> str:
    """The model's three most likely next tokens on ``prompt``, with their probabilities."""
    return "next-token prediction: " + ", ".join(
        f"{t.token!r} {t.prob:.1%}" for t in explorer_method.top_next(r.res.model, r.res.tok, prompt, k=3).itertuples()
    )


def top_numbers_chart(r: Run, prompt: str) -> alt.TopLevelMixin:
    """Fig. 6c: the five number tokens closest to each layer's MLP write on ``prompt``."""
    return mlp_chart.top_numbers_chart(r.res.top, prompt=prompt)


def top1(r: Run) -> pd.Series:
    """The top-1 number token of each layer's MLP write, layer 0 first."""
    return r.res.top[r.res.top["rank"] == 1].token


def top1_lines(r: Run, prompt: str) -> str:
    """Two lines: this run's top-1 number token layer by layer, and the paper's on '4 + 3 ='."""
    return (
        f"top-1 number token of each MLP's write on {prompt!r}, layer 0 → {r.res.geometry.n_layers - 1}: "
        + " → ".join(top1(r))
        + "\n"
        + "paper, LLaMA2-7B on '4 + 3 =', layers "
        + "/".join(map(str, paper.FIG6C_TOP))
        + ": "
        + " / ".join(paper.FIG6C_TOP.values())
    )


def live(r: Run, P: AnalyzeChapter) -> Any:
    """The ipywidgets prompt explorer when ``P.interactive`` (a live Jupyter session), else None."""
    return (
        explorer(
            r.res.model,
            r.res.tok,
            r.res.key_heads,
            reference=r.res.samples,
            prompt=P.prompt,
            counterfactual=P.counterfactual,
            heads_label=r.kh.studied_label(),
        )
        if P.interactive
        else None
    )


def _by_label(r: Run, kind: str) -> str:
    lab = r.res.labels
    return components(lab[lab.label == kind].name)


def paper_table(r: Run, prompt: str) -> Styler:
    """The paper beside this run: head roles, attention outside the roles, both stages and Fig. 6c's tokens."""
    lab, r7, n = r.res.labels, roles7b(), r.res.geometry.n_layers
    s7b, n7b = paper.STAGES["LLaMA2-7B"]
    return pd.DataFrame(
        [
            {
                "observation": "key heads split into operand heads and operator heads (Fig. 5)",
                "paper (LLaMA2-7B)": f"operand: {r7['operand']}; operator: {r7['operator']}",
                "this run": f"operand: {_by_label(r, 'operand')}; operator: {_by_label(r, 'operator')}",
            },
            {
                "observation": "attention of key heads outside operands/operator",
                "paper (LLaMA2-7B)": "minimal",
                "this run": f"{lab.rest.mean():.2f} of the mass (BOS {lab.bos.mean():.2f})",
            },
            {
                "observation": "MLP_in meets the operands: start–inflection–end (Fig. 13)",
                "paper (LLaMA2-7B)": f"{stage(s7b)} of {n7b}",
                "this run": f"{stage(r.res.stages.get('operands'))} of {n}",
            },
            {
                "observation": "MLP write meets the answer: start–inflection–end (Fig. 14)",
                "paper (LLaMA2-7B)": f"{stage(s7b)} of {n7b}",
                "this run": f"{stage(r.res.stages.get('answer'))} of {n}",
            },
            {
                "observation": f"top-1 number of each MLP write on {prompt!r} (Fig. 6c)",
                "paper (LLaMA2-7B)": "… "
                + ", ".join(paper.FIG6C_TOP.values())
                + f" (layers {min(paper.FIG6C_TOP)}–{max(paper.FIG6C_TOP)})",
                "this run": " ".join(top1(r)),
            },
        ]
    ).style.hide(axis="index")


END_CLAIMS = ["attention-roles", "attention-reads-operator", "stages", "mlps-late"]


def end(r: Run, P: AnalyzeChapter) -> Any:
    """The chapter's findings (:func:`arithmech.report.views.pages.chapter_end`): the heads by role, the operand
    and operator comparisons against the non-key heads (each role apart), and the chapter's claims."""
    c = claims(Context.of(r.files), END_CLAIMS)
    against = lambda role: (
        f"{role.capitalize()} attention against the {int(r.files.baseline.n_nonkey.max())} non-key heads (first "
        f"position excluded, rule: above their 95th percentile by 2 se): {verdict_lines(r.files, role)[-1]}"
    )
    return chapter_end(
        [
            f"Key heads by role: operand {_by_label(r, 'operand')}; operator {_by_label(r, 'operator')}.",
            against("operand"),
            against("operator"),
        ]
        + claim_lines(c, END_CLAIMS),
        P.model_name,
        P,
        real=shipped_lines(Context(Path(P.results) / REAL[0]), END_CLAIMS),
    )
