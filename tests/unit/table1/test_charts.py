"""Unit tests of ``arithmech/table1/charts.py``."""
from __future__ import annotations

import re

import pandas as pd

from arithmech.report.views.tables import TOY_NAMES
from arithmech.table1 import charts as tradeoff

ARMS = ["base", "full", "precise-key", "precise-random"]
MEASURES = ["negative", "two_digit", "single_digit", "generic"]


def _table() -> pd.DataFrame:
    """A small :func:`arithmech.table1.verdicts.arm_table`: every arm × measure (and one measure the chart
    leaves out), each change unique so a point names its arm and measure."""
    rows = []
    for i, arm in enumerate(ARMS):
        for j, m in enumerate(MEASURES + ["val_nll"]):
            d = None if arm == "base" else round(0.1 * i + 0.01 * j, 3)
            rows.append({"arm": arm, "measure": m, "value": 0.5, "runs": 3, "delta": d,
                         "delta_ci_low": None if d is None else d - 0.05, "delta_ci_high": None if d is None else d + 0.05})
    return pd.DataFrame(rows)


def _panels(svg: str, layer: int) -> list[list[str]]:
    """The aria labels of layer ``layer``'s marks (a mark group holds only its items), one list per facet
    cell, in drawing order."""
    parts = svg.split(f'child_layer_{layer}_marks"')[1:]
    return [re.findall(r'aria-label="([^"]*)"', p.split("</g>")[0]) for p in parts]


def test_arms_chart_draws_each_arm_once_per_measure_panel():
    """Protects Table 1's chart (all four panels were once identical, each drawing all 12 arm × measure
    points): the rows are the facet's data, no layer holds its own, and the rendered chart has one panel per
    measure (titled by its name, "two-digit (math)", not its key) in which each fine-tuned arm is one dot and one
    interval, with that measure's change only."""
    table = _table()
    spec = tradeoff.arms_chart(table, MEASURES).to_dict()
    assert spec["facet"]["field"] == "measure" and "data" in spec
    assert all("data" not in layer for layer in spec["spec"]["layer"])
    rows = pd.DataFrame(spec["datasets"][spec["data"]["name"]])
    assert sorted(zip(rows.arm, rows.measure)) == sorted((a, TOY_NAMES[m]) for a in ARMS[1:] for m in MEASURES)

    import vl_convert as vlc
    svg = vlc.vegalite_to_svg(spec)
    points, intervals = _panels(svg, 2), _panels(svg, 1)
    assert len(points) == len(intervals) == len(MEASURES)
    for m, labels, bars in zip(MEASURES, points, intervals):
        assert len(labels) == len(bars) == 3, (m, labels)
        assert all(f"measure: {TOY_NAMES[m]};" in l for l in labels), (m, labels)
        assert sorted(re.search(r"arm: ([\w-]+)", l).group(1) for l in labels) == ARMS[1:]
        want = table[(table.measure == m) & (table.arm != "base")].delta
        assert sorted(float(re.search(r"delta: ([-\d.]+)", l).group(1)) for l in labels) == sorted(want)
