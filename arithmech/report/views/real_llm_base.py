"""The SmolLM2 appendix's page (``book/appendix_smollm2.md``), the part every section shares: the model loaded once.

:class:`PageBase` holds the chapter's config ``P``, the model, its tokenizer and geometry, the results folder,
and the results folder (each step's config comes from ``P``'s ``to_<step>()`` methods); the sections
(:mod:`~arithmech.report.views.real_llm_identify_page`, :mod:`~arithmech.report.views.real_llm_analyze_page`,
:mod:`~arithmech.table1.real_llm_page`) and :class:`arithmech.report.views.real_llm_page.Page` build
on it.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from arithmech.core.models import load_model
from arithmech.core.names import token_label
from arithmech.core.results import model_folder
from arithmech.identify.result import Ranking


class PageBase:
    """The page's model and results folder, loaded once (``P``: the chapter's config, :class:`~arithmech.report.build.
    chapters.SmolLM2`)."""

    def __init__(self, P: Any):
        self.P = P
        self.net, self.tok, self.geo = load_model(
            P.model_name, device=P.device, dtype=P.dtype, attn_implementation="eager"
        )
        self.folder = model_folder(P.results, P.model_name)

    @cached_property
    def ranking(self) -> Ranking:
        """Identify's files of the model (:class:`~arithmech.identify.result.Ranking`: its key heads and effects),
        read once, at the first cell that asks (after the page's identify run)."""
        return Ranking.of(self.P.results, self.P.model_name)

    def tokenizer_lines(self) -> str:
        """The model's geometry and how its tokenizer splits ``3 + 5 = 8`` (``␣``: a space token)."""
        ids = self.tok("3 + 5 = 8")["input_ids"]
        return f"{self.geo}\n'3 + 5 = 8' → " + " | ".join(map(token_label, self.tok.convert_ids_to_tokens(ids)))
