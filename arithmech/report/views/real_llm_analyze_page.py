"""The SmolLM2 appendix's Analyze section: what the studied heads read and what the MLPs write.

:class:`AnalyzeSection`: analyze's run on the studied heads (key heads, or the top 10 where none passes), their
labels and attention by token role (Fig. 5 and its control), the start–inflection–end layers and the MLPs'
projections on W_U (Fig. 6, 13, 14).
"""

from __future__ import annotations

from functools import cached_property

from arithmech import paper
from arithmech.analyze.claims import specific_text
from arithmech.analyze.result import AnalyzeResult
from arithmech.core.names import stages as stage_layers
from arithmech.data import pairs
from arithmech.methods import attention
from arithmech.pipeline.ensure import ensure
from arithmech.report.charts import attention_chart, mlp_chart
from arithmech.report.charts.attention_control import labels_table, nonkey_band_chart
from arithmech.report.views.cells import markdown
from arithmech.report.views.real_llm_base import PageBase


class AnalyzeSection(PageBase):
    """The analyze step of the page, read (or made) on first use."""

    @cached_property
    def analyze(self) -> AnalyzeResult:
        """analyze.run's result on the studied heads (key heads, or the top 10 where none passes)."""
        P = self.P
        return ensure(P.to_analyze(), P.recompute)

    def attention(self) -> list:
        """The studied heads' labels (without the first position) and their attention from END by token role."""
        an = self.analyze
        labels = an.labels
        heads = [(int(n.split(".")[0]), int(n.split(".")[1])) for n in labels.name]
        return [
            labels_table(labels, attention.label_heads(an.roles, heads, view="without first")),
            attention_chart.attention_roles_chart(an.roles, labels),
        ]

    def attention_lines(self, role: str = "operand"):
        """The sentences of ``role``'s rule (``attention-roles`` for the operands, ``attention-reads-operator`` for
        the operator) on the studied heads, and for the operands where ``{A}`` sits (Markdown list)."""
        lines = attention.verdict_lines(self.analyze.baseline, role, heads_from=self.analyze.heads_from)
        if role != "operand":
            return markdown("\n".join(f"* {line}" for line in lines))
        prompts = pairs.samples(self.folder)
        at0 = sum(0 in s.positions["A"] for s in prompts)
        return markdown(
            "\n".join(f"* {line}" for line in lines)
            + f"\n* `{{A}}` sits at position 0 in {at0} of the {len(prompts)} prompts identify kept (every operation)."
        )

    def nonkey_band(self):
        """Fig. 5's control: the studied heads against the band of the other heads."""
        return nonkey_band_chart(self.analyze.baseline, fig="Fig. 5 control (SmolLM2)")

    def stages_line(self) -> str:
        """The start–inflection–end layers found here, beside LLaMA2-7B's."""
        s7b, n7b = paper.STAGES["LLaMA2-7B"]
        return (
            "start–inflection–end layers: "
            + "; ".join(f"{k} {stage_layers(v)}" for k, v in self.analyze.summary["stages"].items())
            + f" (LLaMA2-7B: {stage_layers(s7b)} of {n7b} layers)"
            + (
                "; on the answer-specific curves, " + specific_text(self.analyze.specific_stages)
                if self.analyze.specific_stages
                else ""
            )
        )

    def mlp_charts(self) -> list:
        """Fig. 6, 13, 14: the MLPs' projections on W_U (operands read, answer written) and their top numbers."""
        an, stages = self.analyze, self.analyze.summary["stages"]
        return [
            mlp_chart.mlp_in_chart(an.mlp, tuple(stages.get("operands", ())) or None),
            mlp_chart.mlp_diff_chart(an.mlp, tuple(stages.get("answer", ())) or None),
            mlp_chart.top_numbers_chart(an.top, prompt="4 + 3 = "),
        ]
