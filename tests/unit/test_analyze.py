"""The analyze step's bookkeeping (arithmech.steps.analyze, arithmech.methods.explorer,
arithmech.report.widgets): roles of positions, breakpoints, the ripple-carry adder, the widget's wiring.

Values checked against a hand-written Llama forward are in ``parity/test_analyze_parity.py``.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from arithmech.methods import attention as At
from arithmech.methods import mlp as M
from arithmech.methods import explorer as E

from factories import make_tiny_llama


def test_end_rows_need_eager_attention():
    """Protects: under sdpa (no weights) the user gets a message naming the fix, not a TypeError."""
    model = make_tiny_llama("sdpa")
    with pytest.raises(ValueError, match="eager"):
        At.end_rows(model, torch.randint(0, 50, (1, 5)), [0])


def test_role_aggregation_on_hand_built_rows():
    """Protects the role bookkeeping: which positions are A/B/operator/bos/other, and mass sums."""
    positions = {"A": [2], "B": [4, 5], "operator": [3], "end": 6}
    labels = At.role_labels(positions, 7)
    assert labels == ["bos", "other", "A", "operator", "B", "B", "other"]
    assert At.role_labels(positions, 7, bos=False)[0] == "other"
    rows = torch.tensor([[[0.5, 0.1, 0.2, 0.05, 0.05, 0.05, 0.05],
                          [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]])          # (n=1, H=2, seq=7)
    m = At.role_mass(rows, [labels])                                         # (1, 2, 5): A B operator bos other
    torch.testing.assert_close(m[0, 0], torch.tensor([0.2, 0.1, 0.05, 0.5, 0.15]))
    torch.testing.assert_close(m[0, 1], torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0]))


def test_guess_positions_for_free_prompts():
    """Protects the explorer's role guess: first/second digit runs are A/B, operator words/symbols found."""
    toks = ["<s>", "Q", ":", "What", "is", "4", "2", "plus", "3", "?", "A", ":"]
    assert E.guess_positions(toks) == {"A": [5, 6], "B": [8], "operator": [7], "end": 11}
    assert E.guess_positions(["<s>", "▁7", "▁+", "▁5", "▁="])["operator"] == [2]


def test_breakpoints_on_synthetic_curves():
    """Protects the App. C rule: knots of rise-fall and plateau-rise curves (32 layers, noise) are found."""
    rng = np.random.default_rng(0)
    x = np.arange(32)
    rise_fall = np.interp(x, [0, 13, 18, 28, 31], [0, 0, 0.3, 0.05, 0.05]) + rng.normal(0, 0.005, 32)
    assert M.breakpoints(rise_fall) == (13, 18, 28)
    plateau_rise = np.interp(x, [0, 13, 20, 28, 31], [0, 0, 0.05, 0.4, 0.4]) + rng.normal(0, 0.005, 32)
    assert M.breakpoints(plateau_rise) == (13, 20, 28)
    assert M.breakpoints(np.interp(np.arange(6), [0, 1, 3, 4, 5], [0, 0, 1, 0.2, 0.2])) == (1, 3, 4)
    with pytest.raises(ValueError, match="at least 5"):
        M.breakpoints([0, 1, 2, 3])


def test_ripple_carry_matches_fig17_and_adds():
    """Protects App. H: 3 + 4 gives the partial results 1, 3, 7 of Fig. 17; every 4-bit sum is exact."""
    assert M.ripple_carry(3, 4).partial.tolist() == [1, 3, 7]
    for a in range(16):
        for b in range(16):
            r = M.ripple_carry(a, b, bits=4)
            assert r.partial.iloc[-1] + (int(r.carry_out.iloc[-1]) << 4) == a + b


def test_widget_runs_without_a_browser(word_llama_fig8):
    """Protects the ipywidgets explorer: toggling the knockout fires the observer, which recomputes through
    the same callbacks and fills the output area (no frontend, no kernel)."""
    from arithmech.report import widgets
    model, tok, samples = word_llama_fig8
    w = widgets.explorer(model, tok, key_heads=[(0, 1), (2, 3)], reference=samples, run=False)
    assert w.output.outputs == () and w.head.value == (0, 1)
    w.prompt.value, w.counterfactual.value = "4 + 3 =", "4 @ 3 ="
    w.knockout.value = True                                   # observer → refresh()
    assert set(w.tables) == {"top", "numbers", "attention"}
    assert set(w.tables["top"].condition) == {"intact", "knockout"}
    assert set(w.tables["top"].input) == {"prompt", "counterfactual"}
    assert len(w.output.outputs) == 3 and "text/html" in w.output.outputs[0]["data"]
