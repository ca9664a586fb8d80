"""Parity tests of ``arithmech/methods/knockout_tables.py``."""
from __future__ import annotations

import pandas as pd

from arithmech.methods.knockout_tables import sanity_table


def test_sanity_table_decides_the_rule_from_the_rows():
    """Protects the claim "the ablation removes the information": it holds exactly when the Wilson
    interval of all-heads-out reaches the majority floor (numbers typed here, rule computed)."""
    def rows(heads_lo):
        base = {"task": "t", "positions": "end", "kind": "sanity", "seed": -1, "k": 0, "n": 256, "correct": 0,
                "mean_source": "template 256"}
        vals = {"nothing-out": (1.0, 0.98, 1.0), "all-heads-out": (0.8, heads_lo, 0.85), "all-mlps-out": (0.5, 0.4, 0.6),
                "x_c": (0.3, 0.25, 0.36), "majority-floor": (0.6, 0.54, 0.66)}
        return pd.DataFrame([{**base, "order": o, "accuracy": a, "ci_low": lo, "ci_high": hi}
                             for o, (a, lo, hi) in vals.items()])
    above = sanity_table(rows(0.75)).iloc[0]
    assert above["heads_out_above_floor"] and not above["removes_information"]
    at = sanity_table(rows(0.55)).iloc[0]
    assert not at["heads_out_above_floor"] and at["removes_information"]
