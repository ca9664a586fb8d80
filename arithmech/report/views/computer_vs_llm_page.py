"""The appendix comparing a computer's adder with the LLM (``book/appendix_computer_vs_llm.md``, the paper's Fig. 17):
every table and chart of the page, one call each.

:class:`Page` runs the binary ripple-carry adder on ``a + b`` (:func:`arithmech.methods.mlp.ripple_carry`: one row
per full-adder step with its partial result) and, on first use, the model's top numbers written by each MLP layer
on the prompt ``"a + b ="`` (:func:`arithmech.methods.mlp.layer_top_numbers`, rows: layer × rank).

>>> page = Page(chapters.check("appendix_computer_vs_llm", globals()))
>>> page.adder_table(); print(page.next_token_line()); page.chart()
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import pandas as pd

from arithmech import paper
from arithmech.core.models import load_model
from arithmech.methods import mlp
from arithmech.methods.explorer import top_next
from arithmech.report.charts import mlp_chart
from arithmech.report.views.pages import chapter_end


class Page:
    """The adder's steps for ``P.a + P.b`` on ``P.bits`` bits (``P``: :class:`~arithmech.report.build.chapters.
    ComputerVsLlm`); the model is loaded on first use."""

    def __init__(self, P: Any):
        self.P = P
        self.adder = mlp.ripple_carry(P.a, P.b, P.bits)
        self.prompt = f"{P.a} + {P.b} ="

    def adder_table(self) -> Any:
        """The full-adder steps: bits in, carry in, sum bit, carry out, partial result (Styler)."""
        return self.adder.rename(
            columns={
                "a_bit": "bit of a",
                "b_bit": "bit of b",
                "carry_in": "carry in",
                "sum_bit": "sum bit",
                "carry_out": "carry out",
                "partial": "partial result",
            }
        ).style.hide(axis="index")

    @cached_property
    def model(self) -> tuple[Any, Any]:
        """The model and its tokenizer."""
        net, tok, _ = load_model(self.P.model_name, device=self.P.device, dtype=self.P.dtype)
        return net, tok

    @cached_property
    def top(self) -> pd.DataFrame:
        """The top-3 numbers each MLP layer writes on the prompt (rows: layer × rank)."""
        net, tok = self.model
        return mlp.layer_top_numbers(net, tok, self.prompt, k=3)

    def next_token(self) -> str:
        """The model's next token on the prompt."""
        net, tok = self.model
        return top_next(net, tok, self.prompt, k=1).token[0]

    def next_token_line(self) -> str:
        """The model's next token on the prompt, as a line (the top numbers are computed first)."""
        _ = self.top
        return f"{self.P.model_name} on {self.prompt!r}: next token {self.next_token()}"

    def chart(self) -> Any:
        """The adder's partial results beside the model's MLP writes, layer by layer."""
        return mlp_chart.adder_vs_llm_chart(self.adder, self.top, self.P.a, self.P.b)

    def steps(self) -> str:
        """The computer's partial results, step by step."""
        return " → ".join(map(str, self.adder.partial))

    def layers(self) -> str:
        """The model's top-1 number of each MLP write, layer by layer."""
        return " → ".join(self.top[self.top["rank"] == 1].token)

    def steps_lines(self) -> str:
        """The computer's steps and the model's layers, each beside the paper's."""
        return (
            f"computer, partial result per full-adder step:      {self.steps()}   (paper: 1 → 3 → 7)\n"
            f"{self.P.model_name}, top-1 number of each MLP write per layer: {self.layers()}   "
            f"(paper, LLaMA2-7B: {' → '.join(dict.fromkeys(paper.FIG6C_TOP.values()))})"
        )

    def fig17(self) -> Any:
        """Fig. 17: the top numbers of each MLP layer on the prompt."""
        return mlp_chart.top_numbers_chart(self.top.assign(prompt=self.prompt), fig="Fig. 17", prompt=self.prompt)

    def end(self) -> None:
        """The page's last cell: the adder's steps, the model's layers and its next token in the findings box."""
        chapter_end(
            [
                f"Computer: partial results per full-adder step {self.steps()}.",
                f"{self.P.model_name}: top-1 number of each MLP's write, layer by layer: {self.layers()}.",
                f"{self.P.model_name}'s next token on {self.prompt!r}: {self.next_token()!r}.",
            ],
            self.P.model_name,
            self.P,
        )
