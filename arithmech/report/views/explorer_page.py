"""The Explorer chapter's page: its precomputed explorers, the live explorer and the knockout table, one call per
cell of ``book/explorer.md``.

:func:`precompute` loads each model of the chapter's config and precomputes its explorer
(:func:`arithmech.methods.explorer.page_data`: prompts, top-5 tokens before and after each threshold step's
knockout, attention of the heads it knocks out); the other functions return what a cell displays, a list of
display objects where a cell shows several (the cell calls ``display(*…)``)::

    >>> pages = precompute(P)
    >>> display(*model_views(pages, P)); display(*live(P)); knockout(pages)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pandas as pd

from arithmech.core import results
from arithmech.core.models import load_model
from arithmech.data.draw import Draw
from arithmech.identify.result import Ranking
from arithmech.methods import explorer as explorer_method
from arithmech.pipeline.ensure import ensure
from arithmech.report.build.chapters import Explorer as ExplorerChapter
from arithmech.report.views import counts, live_explorer
from arithmech.report.views.cells import html, markdown
from arithmech.report.views.explorer_views import explorer_chart, finding, knockout_table
from arithmech.report.views.pages import answer_token_sentence, chapter_end

LIVE = "embedded"  # the model the live explorer runs in the browser


@dataclass
class Page:
    """One model's precomputed explorer: ``heads`` and ``data`` (:func:`arithmech.methods.explorer.page_data`),
    the answer-token rule and the solved examples per prompt identify's files were measured with, the seconds
    it took, and identify's files it read (``ranking``: the key heads the page quotes)."""

    heads: pd.DataFrame
    data: dict
    identify_rule: str | None
    seconds: float
    identify_shots: int = 0
    ranking: Ranking | None = None


def precompute(P: ExplorerChapter) -> dict[str, Page]:
    """Each model's explorer (model name → :class:`Page`). A model without identify's ``effects.csv`` gets
    identify's files first, at ``P.identify_samples`` pairs and the book's scale (the SmolLM2 appendix's way)."""
    pages = {}
    for m in P.models:
        t0 = time.perf_counter()
        net, tok, _ = load_model(m, device=P.device, dtype=P.dtype, attn_implementation="eager")
        folder = results.model_folder(P.results, m)
        if not results.exists(folder, "effects.csv"):  # an earlier chapter writes it; alone, make it
            ensure(P.to_identify(m))
        ranking = Ranking.of(P.results, m)
        recorded = ranking.parameters
        page = explorer_method.PageSettings(
            tuple(P.thresholds), P.n_prompts, P.n_reference, P.max_heads, P.seed, Draw(P.answer_token, 0, 1)
        )  # zero-shot prompts: short enough to read on the page
        heads, data = explorer_method.page_data(net, tok, folder, page)
        seconds = time.perf_counter() - t0
        pages[m] = Page(heads, data, recorded.get("answer_token"), seconds, int(recorded.get("shots") or 0), ranking)
        del net
    return pages


def model_views(pages: dict[str, Page], P: ExplorerChapter) -> list:
    """Per model: a sentence (prompts, key heads, threshold steps, seconds, the answer-token rule) and its
    explorer chart."""
    out: list[Any] = []
    for m, p in pages.items():
        s = p.data["steps"]
        (rule,) = set(p.data["prompts"].answer_token)  # what the prompts were drawn with, one rule
        out.append(
            markdown(
                f"**{m}**: {counts.prompt_count(p.data['prompts'].template).phrase()}; identify found "
                f"{counts.key_heads(p.ranking or Ranking.of(P.results, m)).summary()}; {int((s.step >= 0).sum())} "
                f"threshold steps; precomputed in {p.seconds:.0f} s. "
                + answer_token_sentence(rule, p.identify_rule)
                + (
                    f" Identify ranked these heads on prompts with {p.identify_shots} solved examples before each; the "
                    "explorer's prompts have none (short enough to read), so a head's effect here need not be the one "
                    "that ranked it."
                    if p.identify_shots
                    else ""
                )
            )
        )
        out.append(explorer_chart(p.data, p.heads, m))
    return out


def live(P: ExplorerChapter) -> list:
    """The live explorer of the embedded model (its key heads mean-ablated at END with identify's reference-pool
    means): a sentence and the page's HTML; a note instead when ``P.models`` leaves the embedded model out."""
    if LIVE not in P.models:
        return [markdown("*The live explorer runs the embedded model, which this run's `models` leave out.*")]
    net, tok, _ = load_model(LIVE, device="cpu", dtype="float32", attn_implementation="eager")
    ranking = Ranking.of(P.results, LIVE)
    means, source = live_explorer.identify_end_means(net, tok, ranking.parameters)
    kh = counts.key_heads(ranking)
    heads = [(int(n.split(".")[0]), int(n.split(".")[1])) for n in kh.studied]
    return [
        markdown(
            f"**Knocked out**: {kh.studied_phrase()}, mean-ablated at END with {source}. "
            "That is the mean identify's knockout gives a prompt outside its templates; a typed prompt "
            "has no template, no operands and no fold of its own."
        ),
        html(live_explorer.page_html(live_explorer.page_data(means, heads, kh.studied_label()))),
    ]


def knockout(pages: dict[str, Page]) -> pd.DataFrame:
    """Every model's knockout at each threshold step, one table."""
    return pd.concat([knockout_table(p.data["steps"], m) for m, p in pages.items()], ignore_index=True)


def end(pages: dict[str, Page], P: ExplorerChapter) -> None:
    """The chapter's findings (:func:`arithmech.report.views.pages.chapter_end`): one line per model."""
    chapter_end([finding(p.data["steps"], m, P.thresholds) for m, p in pages.items()], ", ".join(P.models), P)
