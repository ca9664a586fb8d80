"""The SmolLM2 appendix's Table 1 section: base, full SFT and precise SFT of key and random heads, on a CPU.

:class:`Table1Section`: the arms run's frontier and verdicts, the leave-one-rate-out, common-rate and grid-point
tables, full SFT's learning curve, the base model against chance, the run's setup and progress and each arm's
chosen runs — or a note where no arms run has finished.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from arithmech.core.results import folder_name
from arithmech.report.views.cells import markdown
from arithmech.report.views.real_llm_base import PageBase
from arithmech.table1 import charts, confirmation, curve_views, curves, views
from arithmech.table1 import design as seed_draws
from arithmech.table1.confirmation import Confirmation
from arithmech.table1.design import design_runs
from arithmech.table1.frontier import Curves, curves_of
from arithmech.table1.page import frontier
from arithmech.table1.result import Table1Result


class Table1Section(PageBase):
    """Table 1 of the page, read from the arms run's files."""

    def table1(self) -> list:
        """Table 1 on a CPU: the arms run's frontier and verdicts (:func:`~arithmech.table1.page.
        frontier`), the leave-one-rate-out and leave-one-seed's-draws-out checks, the common-rate and grid-point
        tables, full SFT's learning curve, the base
        model against chance, the run's setup and progress, and each arm's chosen runs — or a note where no arms
        run has finished."""
        out = confirmed(Confirmation.written(self.folder))  # the answer first: the contrasts confirmed on fresh seeds
        t = Table1Result.made(self.folder)  # the plan and every record, read once for every table below
        if t is None:
            return out + [
                markdown(
                    f"**No finished arms run in `{folder_name(self.P.model_name)}/finetune/` yet.** "
                    f"`python -m arithmech table1 --model {self.P.model_name}` makes it and resumes where it "
                    "stopped."
                )
            ]
        c = curves_of(t)
        rows = curves.verdict_rows(c)
        return out + frontier(t, "SmolLM2-135M", rows) + checks(c, rows) + grid_points(t, c) + setup(t)

    def side_by_side(self) -> pd.DataFrame:
        """The paper's Table 1 beside the embedded model's and SmolLM2's, each arm at its chosen rate
        (:func:`~arithmech.table1.curve_views.table1_side_by_side`); a model without an arms run is left out."""
        made = {m: Table1Result.made(Path(self.P.results) / m) for m in ("embedded", "smollm2-135m")}
        return curve_views.table1_side_by_side({m: t for m, t in made.items() if t is not None})


def confirmed(conf: Confirmation | None) -> list:
    """The confirmation's answer (its status and one line per contrast) and the heading of the exploration below it;
    nothing where no protocol was written."""
    if conf is None:
        return []
    return [
        markdown(
            "**Table 1, confirmed on fresh seeds** (contrasts written before their runs; the Fine-tune chapter "
            "gives the protocol and the table): "
            + confirmation.status(conf)
            + "\n\n"
            + "\n".join(f"* {x}" for x in confirmation.answers(conf))
        ),
        markdown("**The exploration** (149 runs over whole grids, its rules in their tenth version):"),
    ]


def checks(c: Curves, rows: pd.DataFrame) -> list:
    """The verdicts' robustness: leave one rate out, each random point's runs by seed and the verdicts without each
    seed's draws, and the selection at every rate both arms ran."""
    effects, seeds = seed_draws.seed_effects(c), seed_draws.seed_table(c)
    return [
        markdown(
            "Leave one rate out (each rule on the pooled measure, re-decided with one grid point's "
            "runs left out; an opposite verdict makes it inconclusive):"
        ),
        curve_views.loro_table(rows),
        markdown(curve_views.uncorrected_line(c)),
        markdown(seed_draws.seed_line(effects, seeds) + " The runs of each random point grouped by seed:"),
        effects.style.hide(axis="index"),
        markdown("Each verdict that reads a random arm, without each seed's draws:"),
        seeds.drop(columns=["claim"]).style.hide(axis="index"),
        markdown("The selection at every rate both arms ran (what one chosen rate would have decided):"),
        curve_views.common_rates(c).style.hide(axis="index"),
    ]


def grid_points(t: Table1Result, c: Curves) -> list:
    """Every grid point's change from base with its intervals, then how far an observed difference must lie for each
    rule to decide."""
    return [
        markdown(
            "Every grid point: change from base in points with its 95 % interval over runs and "
            "test items in brackets (crossed: what the rules read, at points with at least 3 runs) "
            "and the hierarchical bootstrap's (runs, then items, resampled); math first, then the general "
            "measures:"
        ),
        *[part.style.hide(axis="index") for part in curve_views.points_tables(t).values()],
        markdown(
            "How far from its bound an observed difference must lie for each rule to decide, with 3 "
            "and with 5 runs a point, and with the runs the design gives each compared point (a frontier "
            "rate its frontier seeds, a random arm's point its draws, a cut end its one run; in "
            "brackets) — the half-width of its interval at the rule's level, from the spreads seen so far "
            "at the compared frontier tops (`arithmech.table1.design`), in points; not a power calculation:"
        ),
        curve_views.detectable_table(c, design=design_runs(t.plan)).style.hide(axis="index"),
    ]


def setup(t: Table1Result) -> list:
    """Full SFT's learning curve, the scope and shots lines, the base model against chance, the run's setup and
    progress, and each arm's chosen runs on both sides."""
    chart, shots = charts.curve_chart(t), views.shots_line(t)
    return (
        ([chart] if chart is not None else [])
        + [markdown(views.scope_line(t))]
        + ([markdown(shots)] if shots else [])
        + [
            views.base_vs_chance(t),
            markdown(views.setup_line(t) + " " + views.tuned_line(t)),
            markdown(views.progress_line(t)),
            views.arm_frame(t),
            markdown(
                "The rate is chosen on the validation items (seed 0's score is the one it was chosen "
                "on), the rules score the test items (other phrasings and operand pairs); both sides "
                "of each arm's chosen runs:"
            ),
            views.phrasings_frame(t),
        ]
    )
