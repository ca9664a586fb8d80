"""Parity tests of ``arithmech/report/charts/attention_control.py``."""
from __future__ import annotations

import numpy as np
import pandas as pd
from factories import fake_roles

from arithmech.methods import attention as At


def test_band_chart_draws_the_baseline_file_values():
    """Protects the control chart against drifting from the results file: one grey band per role ×
    measure × view spanning exactly the non-key 5–95 % of attention_baseline.csv, and one point per key
    head at exactly its value, placed over its role's band."""
    from arithmech.report.charts.attention_control import nonkey_band_chart
    values = {(l, h): 0.01 * (l * 6 + h) for l in range(5) for h in range(6)}
    b = At.nonkey_baseline(fake_roles(values), [(2, 3), (4, 0)])
    spec = nonkey_band_chart(b).to_dict()
    rows = pd.DataFrame(next(iter(spec["datasets"].values())))
    bands, keys = rows[rows.kind == "band"], rows[rows.kind == "key"]
    assert len(bands) == len(b.drop_duplicates(["role", "measure", "view"])) == 4
    np.testing.assert_allclose(np.sort(bands.nonkey_p95), np.sort(b.drop_duplicates(["role", "measure", "view"]).nonkey_p95))
    np.testing.assert_allclose(keys.value, b.value)
    assert ((keys.x > bands.x.min()) & (keys.x < bands.x2.max())).all()
