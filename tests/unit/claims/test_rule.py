"""A rule is one value: its texts, its version, its decider and the gate the decider runs behind."""
from __future__ import annotations

from arithmech.claims.rule import Rule


def test_a_rule_runs_its_decider_behind_its_gate():
    """Protects the one-object rule: ``decide`` is the decider itself where the rule has no gate, and the decider
    wrapped by its gate where it has one (the control's gate: inconclusive where the task fails its control)."""
    decider = lambda ctx: ("read", True)
    gate = lambda d: (lambda ctx: (d(ctx)[0] + "; task fails its control", None))
    assert Rule("a", "A", "p", "r", 1, decider).decide is decider
    assert Rule("a", "A", "p", "r", 1, decider, gate).decide(None) == ("read; task fails its control", None)
