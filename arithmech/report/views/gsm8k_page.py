"""The appendix on a second dataset (``book/appendix_gsm8k.md``, the paper's App. E): every table and chart, one
call each.

:class:`Page` loads the model and draws the second dataset (:func:`arithmech.steps.generalize.app_e_dataset`:
GSM8K-style word problems where the model solves them, else the reason and the dataset used instead); its methods
run identify on both datasets (:func:`~arithmech.steps.generalize.compare_runs`: Table 4's top-k overlap and the
knockout of shared vs run-specific heads) and return what each cell shows: pandas Stylers and frames, altair
charts, or the lines a cell prints.

>>> page = Page(chapters.check("appendix_gsm8k", globals()))
>>> page.top_table(); print(page.overlap_lines()); page.knockout_table()
"""

from __future__ import annotations

import warnings
from functools import cached_property
from typing import Any

import pandas as pd

from arithmech.core.models import load_model
from arithmech.core.names import component_label, components
from arithmech.core.stats import wilson_interval
from arithmech.data import pairs as pair_data
from arithmech.evals.scoring import check_counterfactuals, filter_correct
from arithmech.identify.pipeline import identify
from arithmech.report.charts import effect_chart
from arithmech.report.views import counts
from arithmech.report.views.pages import chapter_end
from arithmech.steps.generalize import WORD_PROBLEM_PAIRS, app_e_dataset, compare_runs

PAPER_OURS = "ours (Fig. 8)"
"""Our dataset's name in the tables: the templates of Fig. 8."""

STATS_LABELS = {
    "questions": "questions in the test split",
    "non_integer": "skipped: answer not a non-negative integer",
    "no_phrase": "skipped: no calculation phrase to edit",
    "unknown_words": "skipped: a word the tokenizer does not know",
    "no_answer_token": "skipped: the answer does not start on a token boundary",
    "length_mismatch": "skipped: the edit changes the token count",
    "made": "pairs made",
    "error": "error",
}
"""The rows of :meth:`Page.gsm8k_stats`: the keys of :func:`arithmech.steps.generalize.gsm8k_samples`'s stats."""


class Page:
    """The model (sdpa attention) and the second dataset (``P``: the chapter's config,
    :class:`~arithmech.report.build.chapters.Gsm8k`)."""

    def __init__(self, P: Any):
        self.P = P
        self.net, self.tok, self.geo = load_model(
            P.model_name, device=P.device, dtype=P.dtype, attn_implementation="sdpa"
        )
        self.second = app_e_dataset(self.tok, n=P.n_samples, seed=P.seed)
        self.name = self.second["name"]
        self.q: Any = None
        self.xc_line = ""

    def dataset_line(self) -> str:
        """Which second dataset the page uses, and why."""
        return f"second dataset: {self.name} ({self.second['reason']})"

    def gsm8k_stats(self) -> pd.DataFrame:
        """GSM8K's test questions, counted (one column; the index, named, says what each row counts)."""
        stats = pd.Series(self.second["gsm8k_stats"], name="GSM8K test questions")
        stats.index = [STATS_LABELS.get(k, k) for k in stats.index]
        return stats.rename_axis("counted").to_frame()

    @cached_property
    def cmp(self) -> dict:
        """identify on Fig. 8's templates and on the second dataset (:func:`compare_runs`)."""
        P = self.P
        return compare_runs(
            self.net,
            self.tok,
            "fig8",
            self.second["spec"],
            P.to_generalize(),
            names=(PAPER_OURS, self.name),
        )

    def top_table(self) -> Any:
        """The top heads by effect of each run (Styler)."""
        top = self.cmp["top"]
        return top.assign(head=top["head"].map(component_label)).style.format({"effect": "{:+.1%}"}).hide(axis="index")

    def overlap_lines(self) -> str:
        """The heads both runs' top lists share, and those only in one (beside the paper's 6 of 10)."""
        ov = self.cmp["overlap"]
        fmt = lambda hs: components(hs) if hs else "—"  # noqa: E731
        return (
            f"shared: {fmt(ov['shared'])}  ({len(ov['shared'])} of {len(ov['b'])}; paper: 6 of 10)\n"
            f"only in ours: {fmt(ov['only_a'])};  only in {self.name}: {fmt(ov['only_b'])}"
        )

    def knockout_table(self) -> Any:
        """Relative change on each dataset when the shared, run-specific or top heads are knocked out, with the
        accuracy and its Wilson 95 % interval (over the dataset's prompts), beside the control — as many random
        heads outside both runs' top heads, the 5th to 95th percentile of their relative change — and the paper's
        (Styler; rows: the heads knocked out, two columns per dataset)."""
        ko = self.cmp["knockout"]
        rel = lambda a, base: f"{(a - base) / base:+.0%}" if base else "—"  # noqa: E731
        ko = ko.assign(
            heads=[
                f"{rel(r.accuracy, r.base_accuracy)} ({r.accuracy:.0%} [{r.ci_low:.0%}, {r.ci_high:.0%}], n = {r.n})"
                for r in ko.itertuples()
            ],
            random=[
                f"{rel(r.random_p05, r.base_accuracy)} to {rel(r.random_p95, r.base_accuracy)} ({r.random_sets} sets)"
                if r.random_sets
                else "—"
                for r in ko.itertuples()
            ],
        )
        t = ko.pivot(index="knocked_out", columns="dataset", values=["heads", "random"]).rename_axis(
            index="heads knocked out"
        )
        order = list(dict.fromkeys(ko.dataset))  # the datasets as the runs name them: ours first
        t = t[[(w, d) for d in order for w in ("heads", "random")]]
        t.columns = [f"{d}: {'these heads' if w == 'heads' else 'as many random heads'}" for w, d in t.columns]
        paper = {
            "shared": ("−56%", "−52%"),
            f"only {self.name}": ("−2%", "−26%"),
            f"top {PAPER_OURS}": ("−69%", ""),
            f"top {self.name}": ("", "−65%"),
        }
        t["paper: ours / GSM8K"] = [" / ".join(x for x in paper.get(i, ("", "")) if x) or "—" for i in t.index]
        return t.style

    def _largest(self) -> tuple[float, str]:
        """The word-problem run's largest |effect| of a head, and its key-head count's summary."""
        e = self.q.effects
        return e[e["head"] != "mlp"].effect.abs().max(), counts.key_heads_of(self.q.key_heads, e).summary()

    def word_problems(self) -> str:
        """The word-problem pair (X_r, X_c), how often X_c moves the answer of the pairs the model answers right
        (Wilson 95% interval), and, where it does, identify's largest head effect and key-head count on them."""
        P = self.P
        n = min(P.n_samples, 64)
        drawn, _ = pair_data.make_pairs(
            self.tok, WORD_PROBLEM_PAIRS, n=n, seed=P.seed, draw=pair_data.Draw("last-digit", 0, 1)
        )
        right = filter_correct(self.net, self.tok, drawn)[0]
        passed = check_counterfactuals(self.net, self.tok, right)[0]
        lo, hi = wilson_interval(len(passed), len(right)) if right else (float("nan"), float("nan"))
        self.xc_line = (
            f"X_c changes the model's answer on {len(passed)} of the {len(right)} word-problem pairs it "
            f"answers right ({len(passed) / max(len(right), 1):.0%}, 95% CI {lo:.0%}–{hi:.0%})"
        )
        lines = [f"X_r: {WORD_PROBLEM_PAIRS[0].clean}", f"X_c: {WORD_PROBLEM_PAIRS[0].corrupt}", self.xc_line]
        if passed:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.q = identify(
                    self.net,
                    self.tok,
                    [WORD_PROBLEM_PAIRS],
                    n_samples=n,
                    seed=P.seed,
                    threshold=P.threshold,
                    knockout=False,
                    transfer=False,
                )
            largest, summary = self._largest()
            lines.append(f"largest |effect| of any head: {largest:.2%}; {summary}")
        return "\n".join(lines)

    def heatmap(self) -> Any:
        """App. E: the path-patching effects on the second dataset (last column: MLP)."""
        r = self.cmp["runs"][self.name]
        return effect_chart.effect_heatmap(
            r.effects, next(iter(r.tasks)), fig="App. E", subtitle=f"path patching on {self.name}; last column: MLP"
        )

    def end(self) -> None:
        """The page's last cell: the dataset, the top-k overlap and the word-problem result in the findings box."""
        P, ov = self.P, self.cmp["overlap"]
        largest, summary = self._largest() if self.q is not None else (float("nan"), "")
        chapter_end(
            [
                f"Second dataset: {self.name} ({self.second['reason']}).",
                f"Top-{P.top} heads shared between the two datasets: {len(ov['shared'])} of {len(ov['b'])} "
                "(paper: 6 of 10).",
                f"Word-problem pairs: {self.xc_line}"
                + (
                    f"; largest |effect| of any head {largest:.1%}, {summary}."
                    if self.q is not None
                    else ": the edit removes nothing this model uses, so there is nothing to patch."
                ),
            ],
            P.model_name,
            P,
        )
