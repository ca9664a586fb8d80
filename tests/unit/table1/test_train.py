"""The step budget of a Table 1 run (arithmech.table1.train): the knee of full SFT's learning curve."""
from __future__ import annotations

from arithmech.table1.train import knee


def test_knee_rule_on_a_known_curve():
    """Protects: the step budget's rule, written before the run — the fewest steps reaching base + 0.9 x
    (best - base); a flat curve takes its first checkpoint after 0, never step 0 (the base model)."""
    pts = [{"step": s, "val_math": v} for s, v in ((0, 0.0), (20, 0.3), (40, 0.6), (60, 0.68), (80, 0.7), (100, 0.69))]
    assert knee(pts) == 60                      # 0.68 >= 0.63; 0.6 < 0.63
    assert knee([{"step": 0, "val_math": 0.1}, {"step": 20, "val_math": 0.1}]) == 20
