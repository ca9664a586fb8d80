"""The registry of rules: every claim once, in the book's order, each behind the gate it needs."""
from __future__ import annotations

from arithmech.claims import decide
from arithmech.claims.controls import controlled


def test_the_gated_rules_are_identify_analyze_and_faithfulness():
    """Protects which verdicts wait on identify's control, now that each rule carries its own gate: the identify
    claims, analyze's three (the operands, the operator, the stages) and circuit-faithful run behind the control's gate; Table 1's, the stability claims and
    the controls themselves do not. Every id is listed once, so no rule hides another in BY_ID."""
    gated = {r.id for r in decide.RULES if r.gate is not None}
    assert gated == {"key-heads-exist", "key-heads-exist-share", "few-heads", "middle-layers", "logit-diff-ranking",
                     "knockout-key-vs-random", "knockout-ld-key-vs-random", "knockout-random-flat", "mlps-late", "transfer", "attention-roles",
                     "attention-reads-operator", "stages", "circuit-faithful"}
    assert all(r.gate is controlled for r in decide.RULES if r.gate is not None)
    assert len(decide.BY_ID) == len(decide.RULES) == 23 and set(decide.ADDED) <= set(decide.BY_ID)
