"""Unit tests of ``arithmech/claims/verdicts.py``."""
from __future__ import annotations


def test_verdict_rules_on_known_intervals():
    """Protects: the verdict rules as the chapter states them, on hand-made intervals (margin 5 points)."""
    from arithmech.claims.verdicts import rule_verdict
    assert [rule_verdict("within", lo, hi, 0.05) for lo, hi in ((-0.04, 0.03), (0.06, 0.2), (-0.1, 0.02))] == \
        ["holds", "does not hold", "inconclusive"]
    assert [rule_verdict("above0", lo, hi, 0.05) for lo, hi in ((0.01, 0.1), (0.0, 0.0), (-0.02, 0.03))] == \
        ["holds", "does not hold", "inconclusive"]
    assert [rule_verdict("above0_or_below_m", lo, hi, 0.05) for lo, hi in ((0.01, 0.2), (-0.1, 0.04), (-0.1, 0.1))] == \
        ["holds", "does not hold", "inconclusive"]
    assert [rule_verdict("above_minus_m", lo, hi, 0.05) for lo, hi in ((-0.04, 0.0), (-0.3, -0.06), (-0.2, 0.0))] == \
        ["holds", "does not hold", "inconclusive"]
