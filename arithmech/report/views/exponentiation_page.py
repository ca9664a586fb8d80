"""The appendix on exponentiation (``book/appendix_exponentiation.md``, the paper's App. D, Table 3): every table and
chart of the page, one call each.

:class:`Page` loads the model and runs identify on each exponentiation template
(:func:`arithmech.steps.generalize.table3`: key heads, and the relative accuracy change on its X_r when they are
knocked out); its methods return what each cell shows: the table beside the paper's (Styler), the heatmaps
(altair), the overlap with the basic operations' key heads (printed lines).

>>> page = Page(chapters.check("appendix_exponentiation", globals()))
>>> page.table(); page.heatmaps(); print(page.shared_lines())
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from arithmech import paper
from arithmech.core.models import load_model
from arithmech.core.names import components
from arithmech.identify.result import Ranking
from arithmech.report.charts import effect_chart
from arithmech.report.views.pages import chapter_end
from arithmech.steps.generalize import table3


class Page:
    """Table 3's rows and runs (template → identify's result) on the model (``P``: the chapter's config,
    :class:`~arithmech.report.build.chapters.Exponentiation`)."""

    def __init__(self, P: Any):
        self.P = P
        self.net, self.tok, self.geo = load_model(
            P.model_name, device=P.device, dtype=P.dtype, attn_implementation="sdpa"
        )
        self.rows, self.runs = table3(self.net, self.tok, n_samples=P.n_samples, seed=P.seed, threshold=P.threshold)

    def table(self) -> Any:
        """Per template: its X_r/X_c, the model's accuracy, X_r prompts, our key heads and knockout change beside
        the paper's (Styler; missing values: —)."""
        table = pd.DataFrame(self.rows)
        table["key heads (ours)"] = table.get("key_heads", pd.Series([None] * len(table))).map(
            lambda h: components(h) if isinstance(h, list) and h else "—"
        )
        table["paper key heads"] = components(paper.KEY_HEADS["table3_exponentiation"])
        table["paper knockout"] = [f"{x:+.0%}".replace("-", "−") for x in paper.TABLE3_KNOCKOUT][: len(table)]
        cols = [
            c
            for c in [
                "template",
                "X_r",
                "X_c",
                "example",
                "accuracy",
                "n_kept",
                "key heads (ours)",
                "knockout_change",
                "paper key heads",
                "paper knockout",
                "status",
            ]
            if c in table
        ]
        return (
            table[cols]
            .rename(
                columns={"accuracy": "model accuracy", "n_kept": "X_r prompts", "knockout_change": "knockout (ours)"}
            )
            .style.format(
                {"model accuracy": "{:.1%}", "X_r prompts": "{:.0f}", "knockout (ours)": "{:+.0%}"}, na_rep="—"
            )
            .hide(axis="index")
        )

    def _kept(self, r) -> int:
        return r.info[next(iter(r.tasks))]["n_kept"]

    def heatmaps(self) -> Any:
        """Each template's path-patching heatmap (two side by side), or a sentence where no template had X_r."""
        charts = [
            effect_chart.effect_heatmap(
                r.effects, next(iter(r.tasks)), fig="Table 3", subtitle=f"template {k}: {self._kept(r)} X_r prompts"
            )
            for k, r in self.runs.items()
        ]
        return charts[0] & charts[1] if len(charts) == 2 else (charts[0] if charts else "no template had X_r prompts")

    def shared_lines(self) -> str:
        """Per template: how many of its key heads are key heads of the basic operations (Identify's
        ``key_heads.json``), beside the paper's 4 of 5; or how to make that file."""
        basic = Ranking.made(self.P.results, self.P.model_name)  # identify's files of the basic operations
        if basic is None or not self.runs:
            return "run the Identify chapter first to compare with the basic operations' key heads"
        four = {h["name"] for h in basic.key_heads["heads"]}
        lines = []
        for k, r in self.runs.items():
            mine = {h["name"] for h in r.key_heads["heads"]}
            lines.append(
                f"{k}: {len(mine & four)} of {len(mine)} key heads are also key heads of the basic operations "
                f"({', '.join(sorted(mine & four)) or 'none'}); paper: 4 of 5"
            )
        return "\n".join(lines)

    def findings_lines(self) -> list[str]:
        """Each template's X_r count and key heads, or, where its prompts hold too few problems (the table's
        status), the heads past the threshold named as no more than that."""
        status = {row["template"]: row.get("status", "ok") for row in self.rows}
        heads = lambda r: components(h["name"] for h in r.key_heads["heads"]) or "none"  # noqa: E731
        return [
            f"template {k}: {self._kept(r)} $X_r$ prompts; "
            + (
                f"key heads: {heads(r)}"
                if status.get(k, "ok") == "ok"
                else f"{status[k]}: too few to name key heads (past the threshold on them: {heads(r)})"
            )
            for k, r in self.runs.items()
        ] or ["No template had $X_r$ prompts: this model does not answer exponentiation."]

    def end(self) -> None:
        """The page's last cell: :meth:`findings_lines` in the findings box."""
        chapter_end(self.findings_lines(), self.P.model_name, self.P)
