"""The Fine-tune chapter (``book/finetune.md``): its runs and every table and chart of the page, one call each.

:func:`run` ensures identify's ranking, runs the toy arms (:func:`arithmech.table1.run.run`) and full SFT's
learning curve, and returns a :class:`Page`; each of its methods returns what one cell shows — pandas frames and
Stylers (tables), altair charts, IPython ``Markdown`` — as one object or a list the cell passes to ``display(*…)``.
The page shows two arms runs: SmolLM2-135M's (``cpu`` suite, read from its shipped files) and the embedded model's
(``toy`` suite, made by the chapter). Verdicts come from :mod:`arithmech.table1.curves` and the claims table.

>>> page = run(chapters.check("finetune", globals()))
>>> display(*page.frontiers()); display(*page.loro_tables())
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from arithmech.claims.decide import claims
from arithmech.claims.evidence import Context
from arithmech.core.names import components
from arithmech.core.results import model_folder
from arithmech.evals.suites import get_suite
from arithmech.pipeline.ensure import ensure_ranking
from arithmech.report.views import tables
from arithmech.report.views.cells import markdown
from arithmech.report.views.pages import chapter_end, claim_lines
from arithmech.table1 import charts, confirmation, curve_views, views
from arithmech.table1 import curves as curve_rules
from arithmech.table1 import run as table1_run
from arithmech.table1 import verdicts as single_rate
from arithmech.table1.confirmation import Confirmation
from arithmech.table1.design import design_runs
from arithmech.table1.frontier import MIN_RUNS, curves_of
from arithmech.table1.plan import key_and_ranked
from arithmech.table1.result import Table1Result
from arithmech.table1.train import learning_curve, train_arm

SMOL = "SmolLM2-135M (cpu suite)"
TOY = "embedded model (toy suite)"
MEASURES = ("negative", "two_digit", "single_digit", "generic")
"""The toy suite's measures, math first: Table 2's columns and the trade-off chart's panels."""


def frontier(t: Table1Result, name: str, rows: pd.DataFrame) -> list:
    """One arms run's verdicts: the trade-off chart of every run with each arm's frontier (where the run has
    curves), the curve rules' verdict table (``rows``: :func:`arithmech.table1.curves.verdicts`), what the means
    alone lean to on the trade-off plane (:func:`~arithmech.table1.views.dominated_line`), and the
    paper's Table 1 beside ours (a sentence naming the measures, then the table)."""
    chart = curve_views.chart(t, f"{name}: every run, each arm's frontier")
    beside = curve_views.paper_beside(t)
    means = views.dominated_line(curves_of(t))
    return ([chart] if chart is not None else []) + [
        curve_views.verdict_table(rows).style.hide(axis="index"),
        *([markdown(means)] if means else []),
        markdown(
            f"The paper's Table 1 beside ours ({beside.attrs['measures']}; ours at each arm's frontier top, picked "
            "on validation, with its 95 % interval over runs and test items in brackets; the paper gives none):"
        ),
        beside.style.hide(axis="index"),
    ]


def heads_line(plan: dict) -> str:
    """The heads precise-key tunes (and how they were selected), and each random draw's (``plan``: ``table1.json``)."""
    h = plan["heads"]
    line = f"precise-key tunes {components(h['tuned'])} ({h['selection']}); random draws: " + " | ".join(
        components(d) for d in h["random_draws"]
    )
    anywhere = h.get("random_any_draws", [])
    return line + ("; draws of any layer: " + " | ".join(components(d) for d in anywhere) if anywhere else "")


def arms(t: Table1Result | None, name: str, command: str) -> list:
    """One model's arms run, for a chapter other than this one (the planted model's): the heads each arm tuned, then
    :func:`frontier` (the runs, each arm's frontier, the curve rules' verdicts), where each undecided verdict leans
    and which arms' grids stop unbracketed (:func:`~arithmech.table1.views.leans_line`,
    :func:`~arithmech.table1.views.ends_line`); where ``t`` is None, the ``command`` that makes it."""
    if t is None:
        return [markdown(f"**{name}: no arms run yet** (`{command}` makes it, and resumes where it stopped).")]
    if not t.plan.get("complete"):  # a run part-way: what it made, and no verdict
        return [markdown(f"**{name}: {len(t.runs)} runs made, the grid not complete** (`{command}` resumes it).")]
    rows = curve_rules.verdict_rows(curves_of(t))
    notes = [markdown(x) for x in (views.leans_line(rows), views.ends_line(t)) if x]
    return [markdown(heads_line(t.plan) + "."), *frontier(t, name, rows), *notes]


def run(P: Any) -> Page:
    """Runs the chapter's toy arms (``P``: the chapter's config, :class:`~arithmech.report.build.chapters.Finetune`):
    identify's ranking first (made if missing), then every arm over its learning-rate grid, then full SFT's learning
    curve (scored every 20 steps). A chapter re-computes its own runs (``overwrite``)."""
    if P.threads:
        torch.set_num_threads(P.threads)
    ensure_ranking(P.model_name, P.results, seed=P.seed, device=P.device, dtype=P.dtype)
    config = P.to_table1()
    plan = table1_run.run(config)
    learning_curve(config)
    return Page(P, config, plan)


TABLE1_CLAIMS = [
    "precise-learns-math",
    "precise-learns-beyond-format",
    "precise-matches-full",
    "precise-keeps-generic",
    "selection-matters",
]
"""The Table 1 claims the chapter's findings box lists, in the order its rules are stated."""


class Page:
    """The toy run's config and plan (``plan``: :func:`arithmech.table1.run.run`'s), its folder and SmolLM2's."""

    def __init__(self, P: Any, config: table1_run.Config, plan: dict):
        self.P, self.config, self.plan = P, config, plan
        self.folder = model_folder(P.results, P.model_name)
        self.smol = model_folder(P.results, "smollm2-135m")
        self.curve_rows: dict[str, pd.DataFrame] = {}

    @cached_property
    def runs(self) -> dict[str, Table1Result | None]:
        """Each arms run the page shows (SmolLM2's, then the toy's), read once; None where none was made."""
        return {name: Table1Result.made(f) for name, f in self._both()}

    @property
    def toy(self) -> Table1Result:
        """The toy's arms run (:func:`run` made it before the page was built)."""
        toy = self.runs[TOY]
        if toy is None:
            raise FileNotFoundError(f"no arms run in {self.folder}: run the chapter's first cell")
        return toy

    def heads_line(self) -> str:
        """The heads precise-key tunes (and how they were selected), and each random draw's."""
        return heads_line(self.plan)

    def scope(self) -> Any:
        """What the toy's Table 1 can test (Markdown, glued as ``scope``: :func:`~arithmech.table1.views.
        toy_scope`)."""
        return markdown(views.toy_scope(self.toy, self.plan))

    @cached_property
    def _confirmation(self) -> Confirmation | None:
        return Confirmation.written(self.smol)

    def confirmation(self) -> Confirmation | None:
        """SmolLM2's Table 1 confirmation (:mod:`arithmech.table1.confirmation`), where its protocol was written; read
        once, at the first cell that asks."""
        return self._confirmation

    def answer(self) -> Any:
        """The chapter's first box (glued as ``answer``): SmolLM2's Table 1 confirmed on fresh seeds, one sentence per
        contrast with its interval, runs and what the design detects, and how far the runs are."""
        c = self.confirmation()
        if c is None:
            return markdown(f"No confirmation protocol in `{self.smol}/confirmation/`: only the exploration below.")
        lines = [confirmation.status(c), "", *[f"* {x}" for x in confirmation.answers(c)]]
        return markdown("\n".join(lines))

    def confirmed(self) -> list:
        """The confirmation's protocol, its decided table and the trade-off plane with its runs marked."""
        c = self.confirmation()
        if c is None:
            return []
        table = confirmation.protocol_table(c)
        return [
            markdown(
                f"**The protocol** (`{self.smol.name}/confirmation/protocol.json`, {table.attrs['n']} fresh seeds "
                "an arm; detectable differences at 80 % power and the family's level, from the exploration's "
                "spreads):"
            ),
            table.style.hide(axis="index"),
            markdown(
                "**The contrasts**, each decided once every planned seed is in (Bonferroni over these "
                f"{c.family} tests only):"
            ),
            confirmation.verdict_table(c).style.hide(axis="index"),
            *([charts.confirmation_chart(c, curves_of(smol))] if (smol := self.runs[SMOL]) is not None else []),
        ]

    def _both(self) -> tuple[tuple[str, Path], ...]:
        return ((SMOL, self.smol), (TOY, self.folder))

    def frontiers(self) -> list:
        """Per arms run (SmolLM2's, the toy's): a heading and its :func:`frontier`, or a note where it has no run."""
        out: list = []
        for name, f in self._both():
            t = self.runs[name]
            if t is None:
                out.append(
                    markdown(
                        f"**{name}: no arms run yet** in `{f}/finetune/` (`python -m arithmech table1 "
                        f"--model {f.name}` makes it and resumes where it stopped)."
                    )
                )
                continue
            self.curve_rows[name] = curve_rules.verdict_rows(curves_of(t))
            out += [markdown(f"### {name}")] + frontier(t, name, self.curve_rows[name])
        return out

    def loro_tables(self) -> list:
        """Per run with rows: the leave-one-rate-out table (each rule re-decided with one grid point left out)."""
        out: list = []
        for name, rows in self.curve_rows.items():
            table = curve_views.loro_table(rows)
            if not table.empty:
                out += [markdown(f"**{name}**"), table]
        return out

    def common_rates(self) -> list:
        """Per run: the selection at every rate both arms ran."""
        out: list = []
        for name, t in self.runs.items():
            if t is not None:
                rates = curve_views.common_rates(curves_of(t))
                if not rates.empty:
                    out += [markdown(f"**{name}**"), rates.style.hide(axis="index")]
        return out

    def points_tables(self) -> list:
        """Per run: every grid point's change from base with its crossed, hierarchical-bootstrap and run-mean t
        intervals (math, general)."""
        out: list = []
        for name, t in self.runs.items():
            if t is not None:
                out += [markdown(f"**{name}**")] + [
                    p.style.hide(axis="index") for p in curve_views.points_tables(t).values()
                ]
        return out

    def detectable(self) -> list:
        """Per run: how far from its bound an observed difference must lie for each rule to decide, at 3 and 5 runs a
        point and at the runs the design gives each compared point
        (:func:`arithmech.table1.curve_views.detectable_table`, :func:`arithmech.table1.design.design_runs`)."""
        out: list = []
        for name, t in self.runs.items():
            if t is not None:
                table = curve_views.detectable_table(curves_of(t), design=design_runs(t.plan))
                out += [markdown(f"**{name}** (spreads and half-widths in points)"), table.style.hide(axis="index")]
        return out

    def smol_run(self) -> list:
        """SmolLM2's learning curve, the scope gate and the format control
        (:func:`~arithmech.table1.views.scope_line`,
        :func:`~arithmech.table1.views.shots_line`), its base model against chance, the run's setup
        with each arm's tuned parameters, progress, grid and arms."""
        smol = self.runs[SMOL]
        if smol is None:
            return []
        chart, shots = charts.curve_chart(smol), views.shots_line(smol)
        out = [chart] if chart is not None else []
        out += [markdown(views.scope_line(smol))] + ([markdown(shots)] if shots else [])
        out += [
            markdown("The base model against chance (a measure decides a rule only where its interval clears chance):"),
            views.base_vs_chance(smol),
            markdown(views.setup_line(smol) + " " + views.tuned_line(smol)),
            markdown(views.progress_line(smol)),
            views.grid_frame(smol),
            views.arm_frame(smol),
        ]
        return out

    def smol_phrasings(self) -> list:
        """SmolLM2's chosen runs on validation and test items (other phrasings and operand pairs)."""
        smol = self.runs[SMOL]
        return [views.phrasings_frame(smol)] if smol is not None else []

    def toy_curve(self) -> list:
        """The toy's full-SFT learning curve (where made)."""
        chart = charts.curve_chart(self.toy)
        return [chart] if chart is not None else []

    def grid(self) -> pd.DataFrame:
        """The toy's grid: per arm and rate, validation math accuracy and loss, the chosen rate (★), interior."""
        return pd.DataFrame(
            [
                {
                    "arm": arm,
                    "lr": r["lr"],
                    "validation math accuracy": r["val_math"],
                    "validation math loss": r["val_nll"],
                    "chosen": "★" if r["lr"] == a["chosen_lr"] else "",
                    "interior": a["interior"],
                }
                for arm, a in self.plan["arms"].items()
                for r in a["grid_rows"]
            ]
        )

    def arm_numbers(self) -> Any:
        """The toy's Table 1: each arm's numbers at its chosen rate (reads the arm table the trade-off chart draws)."""
        self.table = single_rate.arm_table(self.toy)
        return views.arm_numbers(self.toy).style.hide(axis="index")

    def tradeoff_chart(self) -> Any:
        """Each arm's change per measure (math first, then the generic facts)."""
        return charts.arms_chart(self.table, list(MEASURES))

    def heads_ablation(self) -> pd.DataFrame:
        """Table 2 on the toy: precise SFT of the top-k heads for k in ``k_heads`` and ``top_k`` at precise-key's
        chosen rate, each scored on the test items (%); ``top_k``'s row is the arms run's own, the others are
        trained here (first seed, the data splits' seed)."""
        P, folder = self.P, self.folder
        S, lr_key = get_suite(P.suite), self.plan["arms"]["precise-key"]["chosen_lr"]
        _, ranked, _ = key_and_ranked(folder)
        rows = []
        for k in sorted(set(P.k_heads) | {P.top_k}):
            if k == P.top_k:
                res = single_rate.arm_runs(self.toy)["precise-key"][0]["results"]
            else:
                net, tok, _ = train_arm(self.config, S, ranked[:k], lr_key, P.seeds[0], P.optimizer_steps(), P.seed)
                res = S.evaluate(net, tok, "test", {"single_digit_per_template": 4}, P.seed)
            rows.append(
                {"heads": k, **{m.replace("_", "-") + " (%)": round(100 * res[m]["value"], 1) for m in MEASURES}}
            )
        return pd.DataFrame(rows)

    def end(self) -> None:
        """The chapter's last cell: the claims it decides and the runs' learning rates and sizes (the findings box,
        :func:`~arithmech.report.views.pages.chapter_end`)."""
        P = self.P
        ok, why = curves_of(self.toy).scope
        lines = (
            claim_lines(claims(Context.of(self.toy)), TABLE1_CLAIMS)
            if ok
            else [f"The toy: every Table 1 rule reads **not testable** ({why.removeprefix('not testable: ')})."]
        )
        lines.append(
            "Learning rates chosen on validation items: "
            + ", ".join(
                f"{arm} {a['chosen_lr']:.0e}{'' if a.get('interior') else ' (at the grid edge)'}"
                for arm, a in self.plan["arms"].items()
                if a.get("chosen_lr")
            )
            + f"; the rules read every rate of each grid that has {MIN_RUNS} runs; "
            f"{len(P.seeds)} seed{'s' * (len(P.seeds) != 1)}, {P.draws} random draw{'s' * (P.draws != 1)}, "
            f"{P.optimizer_steps()} steps of batch {P.batch_size} per run."
        )
        chapter_end(lines, P.model_name, P)


def memory_table() -> pd.DataFrame:
    """Table 2's memory for LLaMA2-7B (:func:`~arithmech.report.views.tables.memory_table_7b`); its
    ``attrs["tuned_parameters"]``: the parameters precise SFT tunes."""
    return tables.memory_table_7b()


def tuned_line(memory: pd.DataFrame) -> str:
    """The tuned parameters of ``memory`` in billions, beside Table 2's 0.067B."""
    return f"tuned parameters: {memory.attrs['tuned_parameters'] / 1e9:.3f}B (Table 2: 0.067B)"
