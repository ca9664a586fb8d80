"""Unit tests of ``arithmech/report/charts/mlp_chart.py``: what the MLP charts show a reader."""
from __future__ import annotations

import pandas as pd

from arithmech.report.charts import mlp_chart


def test_layer_axes_have_whole_number_ticks():
    """Protects integer axes (no half-integer ticks): the MLP charts' layer axis ticks whole numbers only,
    printed without decimals."""
    mlp = pd.DataFrame([{"layer": l, "quantity": q, "value": 0.1 * l, "sem": 0.01, "std": 0.02}
                        for l in range(3) for q in ("in_A", "in_B")])
    layers = mlp_chart.mlp_in_chart(mlp).to_dict()["layer"]
    assert {(l["encoding"]["x"]["axis"]["tickMinStep"], l["encoding"]["x"]["axis"]["format"])
            for l in layers[:2]} == {(1, "d")}
