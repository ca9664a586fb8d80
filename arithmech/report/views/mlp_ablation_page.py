"""The appendix on tuning MLPs with the heads (``book/appendix_mlp_ablation.md``, the paper's Table 5): the runs and
every table and chart of the page, one call each.

:func:`run` fine-tunes the top-k heads plus the top-m MLP layers for each m of ``m_mlps`` (precise SFT,
:func:`arithmech.table1.finetune.run`, every run against the first run's base scores); :func:`table5`
and :func:`chart` show them beside the paper's Table 5.

>>> runs = run(P); table5(runs); chart(runs)
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from arithmech import paper
from arithmech.core.names import component, components
from arithmech.pipeline.ensure import ensure_ranking
from arithmech.report.charts import accuracy_chart
from arithmech.report.views import tables
from arithmech.report.views.pages import chapter_end, finetune_lines
from arithmech.table1 import finetune


def ranking_line(P: Any) -> str:
    """The best-ranked heads (the top_k precise SFT tunes) and the MLPs by effect (identify's ranking, made if
    missing; ``P``: the chapter's config, :class:`~arithmech.report.build.chapters.MlpAblation`)."""
    heads, mlps = ensure_ranking(P.model_name, P.results, seed=P.seed, device=P.device, dtype=P.dtype)
    return f"best-ranked heads: {components(heads[: P.top_k])} | MLPs by effect: " + ", ".join(
        component(la) for la in mlps
    )


def run(P: Any) -> list[dict]:
    """One precise-SFT run per m of ``P.m_mlps`` (tag ``top{k}-mlp{m}``), each compared with the first's base
    scores; a chapter re-computes its own runs (``overwrite``). Returns the runs' records."""
    runs: list[dict] = []
    for m in P.m_mlps:
        runs.append(finetune.run(P.to_finetune(m), before=runs[0] if runs else None))
    return runs


def summary(runs: list[dict]) -> str:
    """The runs' one-line summaries, each benchmark's change from base (:func:`arithmech.report.views.tables.summary`),
    then what the MLPs add: each later run against the heads alone, paired over the same items
    (:func:`arithmech.report.views.tables.versus_first`, resampled with the runs' seed)."""
    more = tables.versus_first(runs, runs[0]["seed"])
    return tables.summary(runs) + (f"\n\nagainst the first run:\n{more}" if more else "")


def table5(runs: list[dict]) -> pd.DataFrame:
    """Table 5 here, as the page shows it: base, then per run the MLP layers tuned and each benchmark's accuracy (%)
    with its 95% interval over items and their number (:func:`arithmech.report.views.tables.ablation_readable`)."""
    return tables.ablation_readable(runs)


def paper_table5() -> pd.DataFrame:
    """The paper's Table 5 (LLaMA2-7B)."""
    return paper.TABLE5


def chart(runs: list[dict]) -> Any:
    """Each benchmark against the MLP layers tuned (ours with each point's 95% interval over items), beside the
    paper's (up to 6 MLPs)."""
    return accuracy_chart.ablation_chart(
        tables.ablation_frame(runs),
        x="mlps",
        metrics=("negative differences (math)", "two-digit (math)", "generic facts"),
        fig="Table 5",
        title="adding MLP layers to the tuned heads",
        paper=paper.TABLE5[paper.TABLE5["mlps"] <= 6],
    )


def end(runs: list[dict], P: Any) -> None:
    """The page's last cell: the first three fine-tune lines and the runs' sizes in the findings box."""
    chapter_end(
        finetune_lines(runs, tables.TOY_NAMES)[:3]
        + [
            f"Runs: top-{P.top_k} heads plus {', '.join(map(str, P.m_mlps))} MLP layers ({P.max_steps} steps, "
            f"one training seed, {P.seed}): the intervals are over test items, not over training runs, so they say "
            "how well each run is measured, not how much another seed would move it (SmolLM2's Table 1, in its "
            "appendix, runs 3 to 5 seeds per rate for that)."
        ],
        P.model_name,
        P,
    )
