"""Unit tests of ``arithmech/report/charts/accuracy_chart.py``: what the accuracy charts show a reader."""
from __future__ import annotations

import pandas as pd

from arithmech.report.charts import accuracy_chart


def test_tuned_heads_axis_has_whole_number_ticks():
    """Protects integer axes (no half-integer ticks): Table 2's tuned-heads axis ticks whole numbers only,
    printed without decimals."""
    ours = pd.DataFrame({"heads": [1, 2, 4], "two-digit (math)": [10, 20, 30], "generic facts": [50, 50, 49],
                         "samples/s": [9, 8, 7]})
    acc = accuracy_chart.ablation_chart(ours).to_dict()["hconcat"][0]["vconcat"][0]
    assert acc["encoding"]["x"]["axis"] == {"format": "d", "tickMinStep": 1}


def test_our_points_carry_their_own_interval_bars():
    """Protects the MLP appendix's interval bars: where the frame has ``<benchmark> lo``/``hi``, each point's bar
    spans that point's own interval (looked up by row, not by the x value, which two runs can share)."""
    ours = pd.DataFrame({"mlps": [0, 2, 2], "two-digit (math)": [10.0, 20.0, 30.0], "two-digit (math) lo": [5.0, 15.0, 25.0],
                         "two-digit (math) hi": [16.0, 26.0, 36.0], "samples/s": [9, 8, 7]})
    chart = accuracy_chart.ablation_chart(ours, x="mlps", metrics=("two-digit (math)",)).to_dict()
    layer = chart["hconcat"][0]["vconcat"][0]["layer"]
    panel = chart["hconcat"][0]["vconcat"][0]
    rows = chart["datasets"][(panel.get("data") or layer[0]["data"])["name"]]
    assert [(r["accuracy (%)"], r["lo"], r["hi"]) for r in rows] == [(10.0, 5.0, 16.0), (20.0, 15.0, 26.0), (30.0, 25.0, 36.0)]
    assert layer[1]["mark"]["type"] == "rule" and layer[1]["encoding"]["y2"]["field"] == "hi"
