"""Unit tests of ``arithmech/table1/curve_views.py``: Table 1's page over whole curves, read from
synthetic records (``tests/unit/table1/synthetic.py``)."""
from __future__ import annotations

import math
import statistics

import pytest

from arithmech.table1 import curve_views, curves, frontier
from arithmech.table1.frontier import curves_of
from arithmech.table1.result import Table1Result
from tests.unit.table1.synthetic import jitter, write

ARMS = {"full": {1e-4: jitter(0.9, 0.9, -0.06), 3e-4: jitter(0.95, 0.9, -0.08)},
        "precise-key": {1e-3: jitter(0.6, 0.5, -0.01), 3e-3: jitter(0.7, 0.6, -0.02)},
        "precise-random": {1e-3: jitter(0.5, 0.5, -0.01), 3e-3: jitter(0.55, 0.5, -0.02, n=1)}}


def test_the_chart_draws_every_run_and_each_arms_frontier(tmp_path):
    """Protects the page's lead chart: one hollow mark per run (every rate, every seed), one dot per grid point,
    the frontier line through the points on it, in the arms' colours."""
    f = write(tmp_path, ARMS)
    spec = curve_views.chart(Table1Result.load(f), "t").to_dict()
    data = spec["datasets"]
    sizes = sorted(len(v) for v in data.values())
    assert 3 + 3 + 3 + 3 + 3 + 1 in sizes and 6 in sizes            # 16 runs, 6 grid points
    assert "precise-key" in spec["layer"][2]["encoding"]["color"]["scale"]["domain"]


def test_the_verdict_table_and_the_paper_beside_ours(tmp_path):
    """Protects the tables beside the chart: one row per rule and measure with the leave-one-rate-out note, the
    paper's two LLaMA2-7B rows beside each arm's frontier top, and the leave-one-rate-out matrix naming each point."""
    f = write(tmp_path, ARMS)
    rows = curves.verdicts(Table1Result.load(f))
    t = curve_views.verdict_table(rows)
    assert len(t) == len(rows) and {"whole grid", "leave-one-rate-out", "verdict"} <= set(t.columns)
    assert len(curve_views.verdict_table(rows, "pooled")) == len(rows[~rows.measure.str.contains(":")])
    beside = curve_views.paper_beside(Table1Result.load(f))
    assert list(beside.model[:2]) == ["LLaMA2-7B (paper)"] * 2 and beside.loc[0, "general change"] == "-5.6"
    assert set(beside.arm[2:]) == {"full", "precise-key", "precise-random"}
    c = curves_of(Table1Result.load(f))
    for _, r in beside.iloc[2:].iterrows():   # each arm at the verdict table's top (validation), with its interval
        top = frontier.top(c, r.arm, c.math)
        m, lo, hi = frontier.run_interval(top, c.math)
        ci = f" [{100 * lo:+.1f}, {100 * hi:+.1f}]" if lo is not None else ""   # none from one run
        assert r.rate == f"{top.lr:.0e}" and r["math gain"] == f"{100 * m:+.1f}{ci}"
    assert beside["math gain"].str.contains("[", regex=False).any()
    # by hand: validation = mean of addition and subtraction, so full's 3e-4 (92.5 %) over 1e-4 (90 %), key's 3e-3
    # (65 %) over 1e-3 (55 %), random's one-run 3e-3 (52.5 %) over 1e-3 (50 %)
    assert dict(zip(beside.arm[2:], beside.rate[2:])) == {"full": "3e-04", "precise-key": "3e-03", "precise-random": "3e-03"}
    loro = curve_views.loro_table(rows)
    assert list(loro.columns) == ["whole grid", "points left out", "another verdict"] and (loro["points left out"] > 0).all()
    tables = curve_views.points_tables(Table1Result.load(f))
    points, general = tables["math"], tables["general"]
    assert len(points) == 6 and not points.loc[points.runs < 3, "carry [runs × items]"].str.contains("[", regex=False).any()
    assert points.loc[points.runs >= 3, "carry [runs × items]"].str.contains(r"^[+−-]?[\d.]+ \[", regex=True).all()
    assert list(general.arm) == list(points.arm) and "general [runs × items]" in general and "general" not in points
    assert len(points.columns) <= 10 and len(general.columns) <= 10     # each fits a page's width
    lines = curve_views.finding_lines(rows)
    assert lines[-1].startswith("Not yet run:") and all("**" in x for x in lines[:-1])


def test_each_point_shows_a_t_interval_over_its_run_means_beside_the_item_intervals(tmp_path):
    """Protects the run-level interval: for the primary math and general measures every point of at
    least two runs has the Student t interval of its run means, mean ± t_{0.975, n-1} · sd / √n, here checked against
    the printed quantile 4.303 (2 degrees of freedom) on a 3-run point; a 1-run point has none; and it is narrower
    than the crossed interval, which adds the items' spread to the runs'."""
    f = write(tmp_path, ARMS)
    t = frontier.point_table(Table1Result.load(f), n_boot=50)
    c = curves_of(Table1Result.load(f))
    p = next(q for q in c.points["full"] if q.n == 3)
    xs = p.values(c.math)
    m, sd = statistics.fmean(xs), statistics.stdev(xs)
    row = t[(t.arm == "full") & (t.lr == p.lr)].iloc[0]
    assert row[f"{c.math} t lo"] == pytest.approx(m - 4.303 * sd / math.sqrt(3), abs=1e-4)
    assert row[f"{c.math} t hi"] == pytest.approx(m + 4.303 * sd / math.sqrt(3), abs=1e-4)
    assert row[f"{c.math} lo"] < row[f"{c.math} t lo"] and row[f"{c.math} t hi"] < row[f"{c.math} hi"]
    one = t[t.runs == 1].iloc[0]
    assert math.isnan(one["general t lo"]) and math.isnan(one["general t hi"])
    tables = curve_views.points_tables(Table1Result.load(f))
    shown = tables["general"].loc[tables["general"].runs == 1, "general run means, t"]
    assert f"{c.math} run means, t" in tables["math"] and list(shown) == ["—"]


def test_the_detectable_table_shows_the_claims_half_widths(tmp_path):
    """Protects the design table beside the verdicts: each comparison's "decidable beyond ±" cell is the claims'
    projected half-width in points (key − full on carry: a number; key − random, whose top has one run: why not)."""
    from arithmech.table1 import design as table1_design

    c = curves_of(Table1Result.load(write(tmp_path, ARMS)))
    t, claims = curve_views.detectable_table(c).set_index("comparison"), table1_design.table(c).set_index("comparison")
    col = "± at 3 runs"
    assert t.loc["precise-key − full", col].iloc[0] == f"{100 * claims.loc['precise-key − full', 'half_width'].iloc[0]:.1f}"
    assert t.loc["precise-key − precise-random", col] == "—"
    assert "one run" in t.loc["precise-key − precise-random", "not known because"]
    five = table1_design.table(c, 5).set_index("comparison").loc["precise-key − full", "half_width"].iloc[0]
    assert t.loc["precise-key − full", "± at 5 runs"].iloc[0] == f"{100 * five:.1f}"
    assert five < claims.loc["precise-key − full", "half_width"].iloc[0]      # more runs: a narrower interval


def test_the_detectable_table_shows_the_designs_runs_in_brackets(tmp_path):
    """Protects the design's column: its cell is the claims' half-width with the runs the design gives each compared
    point, and the brackets name those runs (a reader sees a random arm's 10 draws, not 3 or 5)."""
    from arithmech.table1 import design as table1_design

    c = curves_of(Table1Result.load(write(tmp_path, ARMS)))
    design = lambda arm, lr: 10 if arm.startswith("precise-random") else 5
    t = curve_views.detectable_table(c, design=design).set_index("comparison")
    hw = table1_design.table(c, design).set_index("comparison").loc["precise-key − full", "half_width"].iloc[0]
    col = "± as designed (runs a point)"
    assert t.loc["precise-key − full", col].iloc[0] == f"{100 * hw:.1f} (5 vs 5)"
    assert t.loc["precise-key − precise-random", col] == "— (5 vs 10)"      # one run so far: spread unknown
    assert col not in curve_views.detectable_table(c).columns


def test_the_uncorrected_line_names_what_the_bonferroni_level_holds_open(tmp_path):
    """Protects the account of what the rules' level keeps undecided (a hostile reading: the Bonferroni level is
    what keeps several selection rows open, and the page did not say): the undecided rows that N = 1 would decide
    are named with that verdict, each undecided at the rules' level; here full SFT's cost (rule 3, 3 runs a point,
    5 points of general loss) holds at 95 % but not at the rule's 1 − 0.05/N; decided rows are never listed."""
    arms = {"precise-key": {1e-3: jitter(0.56, 0.56, 0.0, sd=0.03)}, "precise-random": {1e-3: jitter(0.5, 0.5, 0.0, sd=0.03)},
            "full": {1e-4: jitter(0.9, 0.9, -0.05)}}
    c = curves_of(Table1Result.load(write(tmp_path, arms)))
    line = curve_views.uncorrected_line(c)
    rows = curves.verdict_rows(c)
    keeps = rows[rows.claim.str.contains("keeps")]
    assert (keeps["whole grid"] == curves.OPEN).all() and line.count(": holds") == len(keeps) == 3
    assert "the whole grid would read 3 undecided verdicts as: full − base (a); full vs precise-key (b) (carry): holds;" in line
    decided = rows[rows["whole grid"] != curves.OPEN]
    assert all(f"{r.comparison} ({r.measure})" not in line for r in decided.itertuples())


def test_the_uncorrected_line_when_nothing_is_held_open(tmp_path):
    """Protects the plain case: every rule that can be read is decided (the others not yet run, never listed): one
    sentence saying so."""
    arms = {"precise-key": {1e-3: jitter(0.8, 0.8, 0.0, n=5, sd=0.005)}, "precise-random": {1e-3: jitter(0.3, 0.3, 0.0, n=5, sd=0.005)}}
    line = curve_views.uncorrected_line(curves_of(Table1Result.load(write(tmp_path, arms))))
    assert line == "No undecided verdict would be decided at an uncorrected 95 % either."


def test_the_side_by_side_interval_of_one_run_and_of_several():
    """Protects the side-by-side table's intervals: one run of 0/1 items → Wilson over them; one run of another
    measure (a loss) → none; several runs → the crossed interval the rules read (literal half-width here: two runs
    of two items, run means 0.5 and 1.0 and item means 1.0 and 0.5, so the run term and the item term are each
    var/2 = 0.0625 on 1 degree of freedom: √2 · t_1 · 0.25, t_1 = 12.706)."""
    from arithmech.core.stats import wilson_interval
    from arithmech.table1.curve_views import _ci
    lo, hi = wilson_interval(3, 4)
    assert _ci([[1, 1, 0, 1]]) == f"[{100 * lo:.1f}, {100 * hi:.1f}]"
    assert _ci([[2.9, 3.1, 3.0]]) == "—"
    half = 2 ** 0.5 * 12.706 * 0.25
    assert _ci([[1, 0], [1, 1]]) == f"[{100 * (0.75 - half):.1f}, {100 * (0.75 + half):.1f}]"
