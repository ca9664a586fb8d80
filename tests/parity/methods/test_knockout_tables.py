"""Parity tests of ``arithmech/methods/knockout_tables.py``."""
from __future__ import annotations

import pandas as pd

from arithmech.methods.knockout_tables import sanity_readable, sanity_table


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
    assert at["floor"] == 0.6 and at["control"] == "passes"            # a file without the conditioned floor


def test_the_floor_is_the_higher_of_the_two_and_a_failed_control_is_inconclusive():
    """Protects the floor rule: "all heads out" is compared with the higher of the majority floor (0.6) and the
    conditioned floor (0.8 here, so an interval from 0.75 that clears the majority floor still reaches the
    floor), and a task that fails its control (key_heads.json's control["failed"]) is inconclusive, saying why."""
    base = {"task": "t", "positions": "end", "kind": "sanity", "seed": -1, "k": 0, "n": 256, "correct": 0,
            "mean_source": "template 256"}
    vals = {"nothing-out": (1.0, 0.98, 1.0), "all-heads-out": (0.8, 0.75, 0.85), "all-mlps-out": (0.5, 0.4, 0.6),
            "x_c": (0.3, 0.25, 0.36), "majority-floor": (0.6, 0.54, 0.66), "conditioned-floor": (0.8, 0.75, 0.85)}
    ko = pd.DataFrame([{**base, "order": o, "accuracy": a, "ci_low": lo, "ci_high": hi} for o, (a, lo, hi) in vals.items()])
    row = sanity_table(ko).iloc[0]
    assert row["floor"] == 0.8 and row["conditioned floor"] == 0.8 and row["majority floor"] == 0.6
    assert not row["heads_out_above_floor"] and row["removes_information"]
    failed = sanity_table(ko, {"failed": {"t": "conditioned floor 80% >= 50%"}}).iloc[0]
    assert failed["removes_information"] is None and failed["control"] == "fails: conditioned floor 80% >= 50%"
    shown = sanity_readable(pd.DataFrame([row, failed]))
    verdicts = shown["all heads out removes what they carry"].tolist()
    assert verdicts[0] == "yes: reaches the floor" and verdicts[1].startswith("inconclusive (fails: conditioned")
    assert not shown.map(lambda v: isinstance(v, bool) or v is None).any().any()   # words, never True/False/None
