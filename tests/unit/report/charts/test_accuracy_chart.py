"""Unit tests of ``arithmech/report/charts/accuracy_chart.py``: what the accuracy charts show a reader."""
from __future__ import annotations

import pandas as pd

from arithmech.report.charts import accuracy_chart


def test_tuned_heads_axis_has_whole_number_ticks():
    """Protects integer axes (issue #27: half-integer ticks): Table 2's tuned-heads axis ticks whole numbers only,
    printed without decimals."""
    ours = pd.DataFrame({"heads": [1, 2, 4], "two-digit (math)": [10, 20, 30], "generic facts": [50, 50, 49],
                         "samples/s": [9, 8, 7]})
    acc = accuracy_chart.ablation_chart(ours).to_dict()["hconcat"][0]["vconcat"][0]
    assert acc["encoding"]["x"]["axis"] == {"format": "d", "tickMinStep": 1}
