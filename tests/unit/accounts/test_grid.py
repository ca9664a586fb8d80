"""The operand grid and its counterfactuals (arithmech/accounts/grid.py)."""
from __future__ import annotations

from arithmech.accounts import grid
from arithmech.core.models import load_model
from arithmech.data.batches import token_ids


def test_grid_prompts_cover_every_pair_and_their_counterfactuals_keep_what_they_promise():
    """Protects the grid and the counterfactuals: every one-digit pair of add-1 has a prompt whose answer token is
    the sum's last digit; the operator counterfactual keeps the operands, the operand one changes the last digit and
    keeps the carried digits, Stolfo's result-preserving one changes the operands (not just their order) and keeps
    the sum; X_r and X_c have one token length."""
    _, tok, _ = load_model("embedded")
    samples = [s for s in grid.grid_prompts(tok, "addition", 0, 0) if s.template == "add-1"]
    assert sorted((s.a, s.b) for s in samples) == [(a, b) for a in range(1, 10) for b in range(1, 10)]
    assert all(s.answer == str(s.a + s.b)[-1] and s.carried == str(s.a + s.b)[:-1] for s in samples)
    for kind in grid.COUNTERFACTUALS:
        cf = grid.counterfactual_prompts(tok, samples, kind, 0)
        assert len(cf) > 40, kind
        for s in cf:
            assert len(token_ids(tok, s.clean, True)) == len(token_ids(tok, s.corrupt, True))
            x = s.corrupt.split()
            a2, b2 = int(x[0]), int(x[2])
            if kind == "operator":
                assert (a2, b2) == (s.a, s.b) and x[1] != "+"
            elif kind == "operand":
                assert str(a2 + b2)[-1] != s.answer and str(a2 + b2)[:-1] == s.carried
            else:
                assert a2 + b2 == s.a + s.b and {a2, b2} != {s.a, s.b}
    assert len(grid.digit_ids(tok)) == 10
