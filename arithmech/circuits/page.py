"""The Beyond chapter's page: every table, chart and sentence of ``book/beyond.md``, one call per cell.

:func:`runs` gives the Beyond step's result for each model of the chapter's config (``ensure``: read from its
files when they were made with these parameters, else run, with identify first where its files are missing),
:func:`faithfulness` the faithfulness step's; the other functions take those lists and return what a cell
shows: a sentence (the cell prints it), a Markdown block, a Styler, or a list of charts or tables (the cell
displays each, model by model)::

    >>> runs = runs(P)
    >>> print(header(runs, P)); methods(runs); display(*scatters(runs))
"""

from __future__ import annotations

from typing import Any

from pandas.io.formats.style import Styler

from arithmech.circuits import charts, views
from arithmech.circuits import graph as circuit_graph
from arithmech.circuits.result import BeyondResult, FaithfulnessResult
from arithmech.claims.decide import claims, rules_markdown
from arithmech.claims.evidence import Context
from arithmech.core.names import components
from arithmech.identify.result import Ranking
from arithmech.pipeline.ensure import ensure
from arithmech.report.build.chapters import Beyond as BeyondChapter
from arithmech.report.views import counts
from arithmech.report.views.cells import markdown
from arithmech.report.views.pages import chapter_end, claim_lines

MISSES = {
    "eap": "EAP",
    "miss_norm_frozen": "miss, norms frozen",
    "miss_gate_frozen": "miss, gates frozen",
    "miss_both_frozen": "miss, both frozen",
}
FAITHFUL = ["circuit-faithful"]


def runs(P: BeyondChapter) -> list[BeyondResult]:
    """The Beyond step's :class:`~arithmech.circuits.result.BeyondResult` per model of ``P.models`` (``model``,
    ``summary``, ``eap``, ``upstream``, ``n_layers``); a model without identify's files gets them first at
    ``P.identify_samples`` pairs and the book's scale."""
    return [ensure(P.to_beyond(m), P.recompute, upstream=P.to_identify(m)) for m in P.models]


def header(runs: list[BeyondResult], P: BeyondChapter) -> str:
    """One line per model: layers, samples and identify's key-head count."""
    return "\n".join(
        f"{r.model}: {r.n_layers} layers; {r.summary['n_samples']} samples; identify found "
        f"{counts.key_heads(Ranking.of(P.results, r.model)).summary()}"
        for r in runs
    )


def methods(runs: list[BeyondResult]) -> Styler:
    """Exact vs EAP vs EAP-IG per model (:func:`arithmech.circuits.views.methods_table`), formatted."""
    return (
        views.methods_table(runs)
        .style.format({"seconds": "{:.2f}", "Spearman ρ (all)": "{:+.3f}", "ρ (heads)": "{:+.3f}"})
        .hide(axis="index")
    )


def scatters(runs: list[BeyondResult]) -> list:
    """Each model's exact effect against EAP's estimate, one chart per model."""
    return [views.scatter_chart(r) for r in runs]


def misses(runs: list[BeyondResult]) -> Styler:
    """What EAP misses per model, with the norms, the gates or both frozen, as signed percentages."""
    mt = views.misses_table(runs).rename(columns=MISSES)
    return mt.style.format({c: "{:+.2%}" for c in ["exact", "EAP", "miss", *list(MISSES.values())[1:]]}).hide(
        axis="index"
    )


def receivers(runs: list[BeyondResult]) -> str:
    """One line per model: the receivers (and how they were chosen) and the upstream patching time."""
    return "\n".join(
        f"{r.model}: receivers ({r.summary['receivers_from']}): {components(r.summary['receivers'])}; "
        f"upstream patching {r.summary['times']['upstream_s']:.1f} s"
        for r in runs
    )


def upstream(runs: list[BeyondResult]) -> Styler:
    """The strongest sender → receiver paths per model, effect ± its standard error."""
    return (
        views.upstream_table(runs)
        .rename(columns={"effect_se": "± (s.e.)"})
        .style.format({"effect": "{:+.3%}", "± (s.e.)": "{:.3%}"})
        .hide(axis="index")
    )


def circuits(runs: list[BeyondResult]) -> list:
    """Each model's sender → receiver → logits graph."""
    return [circuit_graph.circuit_chart(*circuit_graph.graph(r.eap, r.upstream, r.n_layers), r.model) for r in runs]


def faithful_rule() -> Any:
    """The ``circuit-faithful`` rule, as the rules page words it."""
    return markdown(rules_markdown(FAITHFUL))


def faithfulness(P: BeyondChapter) -> list[FaithfulnessResult]:
    """The faithfulness step's :class:`~arithmech.circuits.result.FaithfulnessResult` per model (``model``,
    ``frame``)."""
    return [ensure(P.to_faithfulness(m), P.recompute) for m in P.models]


def faith_charts(faith: list[FaithfulnessResult]) -> list:
    """Each model's faithfulness chart."""
    return [charts.faithfulness_chart(f.frame, f.model) for f in faith]


def faith_tables(faith: list[FaithfulnessResult]) -> list:
    """Per model: its name in bold, then its faithfulness table."""
    return [
        x
        for f in faith
        for x in (markdown(f"**{f.model}**"), charts.faithfulness_table(f.frame).style.hide(axis="index"))
    ]


def faith_claims(faith: list[FaithfulnessResult]) -> Any:
    """The ``circuit-faithful`` verdict of each model, one bullet each, decided on the folder its Result was read
    from."""
    return markdown(
        "\n".join(
            f"* {f.model}: {line}" for f in faith for line in claim_lines(claims(Context.of(f), FAITHFUL), FAITHFUL)
        )
    )


def verdicts(runs: list[BeyondResult]) -> Styler:
    """The chapter's rule per model (:func:`arithmech.circuits.views.verdict_table`), formatted."""
    return (
        views.verdict_table(runs)
        .style.format({"D (weakest receiver, direct)": "{:.3%}", "E (strongest upstream path)": "{:.3%}"}, na_rep="—")
        .hide(axis="index")
    )


def end(runs: list[BeyondResult], P: BeyondChapter) -> None:
    """The chapter's findings (:func:`arithmech.report.views.pages.chapter_end`)."""
    chapter_end(views.finding_lines(runs), ", ".join(P.models), P)
