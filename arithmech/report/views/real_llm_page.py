"""The appendix on a real small LLM (``book/appendix_smollm2.md``): every table and chart of the page, one call each.

The page runs the paper's method on SmolLM2-135M: :class:`Page` loads the model once, ensures each step's files
(``accuracy``, ``shots``, ``identify``, its zero-shot twin, ``stability``, ``analyze``: reused when made with the
page's parameters, :func:`arithmech.pipeline.ensure.ensure`) and each method returns what its cell shows — pandas
Stylers and frames (tables), altair charts, IPython ``Markdown`` (computed sentences) — as one object or a list the
cell passes to ``display(*…)``. Nothing is decided here: verdicts come from the claims table
(:func:`arithmech.claims.decide.claims`), counts from :mod:`arithmech.report.views.counts`.

The page's sections live in their own modules, and :class:`Page` joins them: the model loaded once
(:mod:`~arithmech.report.views.real_llm_base`), Identify (:mod:`~arithmech.report.views.real_llm_identify_page`),
Analyze (:mod:`~arithmech.report.views.real_llm_analyze_page`) and Table 1
(:mod:`~arithmech.table1.real_llm_page`); this module holds the accuracy, the verdict and the page's
last cell.

>>> page = Page(chapters.check("appendix_smollm2", globals()))
>>> display(*page.accuracy()); page.shots_rule(); display(*page.fig2())
"""

from __future__ import annotations

from functools import cached_property

import pandas as pd

from arithmech.claims.decide import claims
from arithmech.claims.evidence import Context
from arithmech.identify.knockout_page import crossfit_table
from arithmech.pipeline.ensure import ensure
from arithmech.report.charts import accuracy_chart
from arithmech.report.views import fewshot
from arithmech.report.views.cells import markdown
from arithmech.report.views.findings import answer_sentence, controls_table, findings_table, is_control, tally
from arithmech.report.views.pages import answer_token_sentence, chapter_end, claim_lines
from arithmech.report.views.real_llm_analyze_page import AnalyzeSection
from arithmech.report.views.real_llm_identify_page import IdentifySection
from arithmech.report.views.table_display import verdict as verdict_word
from arithmech.table1.real_llm_page import Table1Section

END_CLAIMS = [
    "key-heads-exist",
    "key-heads-exist-share",
    "knockout-key-vs-random",
    "knockout-ld-key-vs-random",
    "precise-learns-math",
    "precise-matches-full",
    "precise-keeps-generic",
    "ablation-removes-information",
    "answer-token-floor",
    "key-heads-stable",
]
"""The claims the page's "What this run found" box lists after the tally."""


class Page(IdentifySection, AnalyzeSection, Table1Section):
    """The page's model and results, loaded once (``P``: the chapter's config, :class:`~arithmech.report.build.
    chapters.SmolLM2`); each step's result is read (or made) on first use, in the page's order."""

    def accuracy(self) -> list:
        """Accuracy per operation (table, Wilson 95% intervals), the answer-token rule it was scored under, and the
        per-template chart (Fig. 8 and Fig. 10's templates)."""
        P = self.P
        acc = ensure(P.to_accuracy(), P.recompute, model=self.net, tok=self.tok)
        s = acc.table[acc.table.template == "(all)"]
        table = pd.DataFrame(
            {
                "operation": s.op,
                "prompts": s.n,
                "accuracy": s.accuracy.map("{:.1%}".format),
                "95% interval": [f"{lo:.1%}–{hi:.1%}" for lo, hi in zip(s.ci_low, s.ci_high)],
                "mean P(answer)": s.mean_p_answer.map("{:.3f}".format),
            }
        ).style.hide(axis="index")
        return [
            table,
            markdown(answer_token_sentence(acc.config.answer_token)),  # what run.json records (ensure checked)
            accuracy_chart.template_accuracy_chart(acc.table[acc.table.template != "(all)"], P.model_name),
        ]

    @cached_property
    def verdict(self) -> pd.DataFrame:
        """The claims table of this run."""
        return claims(Context(self.folder))

    @property
    def alone(self):
        return self.folder / "addition"

    def answer(self):
        """The box at the top: the answer sentence, the claims decided again on addition alone (where that run
        exists), and the findings table (Markdown, to glue)."""
        verdict, alone = self.verdict, self.alone
        pair = {"pooled": Context(self.folder), "addition alone": Context(alone)}  # each folder's Results, read once
        changed = fewshot.changed_lines(pair) if (alone / "key_heads.json").exists() else []
        own = claims(pair["addition alone"], ["ablation-removes-information"]).iloc[0] if changed else None
        again = (
            (
                "\n\nDecided again on addition alone, the task its control passes (the section *Addition alone*; "
                "the pooled run's reasons are in its table): " + "; ".join(changed) + ". On addition alone the "
                f"method's own ablation control reads *{verdict_word(own.holds)}*: {own.here}."
            )
            if changed
            else ""
        )
        return markdown(
            answer_sentence("SmolLM2-135M", verdict) + again + "\n\n" + findings_table(verdict[~is_control(verdict)])
        )

    def controls(self):
        """The method's controls (not claims of the paper), as a Markdown table."""
        return markdown(
            "The paper's claims and their verdicts are in the box at the top of this page. Controls of "
            "the method (not claims of the paper):\n\n" + controls_table(self.verdict)
        )

    def addition_alone(self) -> list:
        """The pooled run and the addition-alone run side by side (circuit rows, verdicts), or a note if not run."""
        alone = self.alone
        if not (alone / "key_heads.json").exists():
            return [markdown(f"**Not run yet**: `{alone}` has no `key_heads.json` (the commands above make it).")]
        pair = {"addition and subtraction pooled (this page)": Context(self.folder), "addition alone": Context(alone)}
        return [
            fewshot.circuit_rows(pair).set_index("prompts").T,
            fewshot.verdict_rows(pair, fewshot.CLAIMS + fewshot.ANALYZE_CLAIMS).style.hide(axis="index"),
        ]

    def crossfit(self) -> list:
        """The addition-alone run's cross-fitted knockout as the knockout rules read it: a sentence and the table of
        its paired differences, pooled and by fold (:func:`~arithmech.identify.knockout_page.crossfit_table`)."""
        return crossfit_table(Context(self.alone).crossfit())

    def holds_summary(self):
        """The claims that hold, do not hold and are undecided at 135M (Markdown)."""
        v = self.verdict
        held, failed, open_ = (
            v[v.holds == True].claim.tolist(),
            v[v.holds == False].claim.tolist(),  # noqa: E712
            v[v.holds.isna()].claim.tolist(),
        )
        return markdown(
            "**Holds at 135M:** " + ("; ".join(held) or "none") + ".\n\n"
            "**Does not hold at 135M:** "
            + ("; ".join(failed) or "none")
            + "."
            + (
                "\n\n**Undecided** (results missing, or intervals that do not decide): " + "; ".join(open_) + "."
                if open_
                else ""
            )
        )

    def end(self) -> None:
        """The page's last cell: the tally and :data:`END_CLAIMS`' sentences in the findings box, and the footer
        naming the model and the parameters it ran with (K as the page ran it)."""
        P = self.P
        chapter_end(
            [tally(self.verdict).capitalize() + " (the table at the end of this page)."]
            + claim_lines(self.verdict, END_CLAIMS),
            P.model_name,
            {
                "n_samples": P.n_samples,
                "seed": P.seed,
                "device": P.device,
                "dtype": P.dtype,
                "knockout_samples": P.knockout_samples,
                "shots": self.K,
            },
        )
