"""Unit tests of ``arithmech/methods/explorer.py``."""
from __future__ import annotations

import pandas as pd
import pytest

from arithmech.methods import explorer as E, explorer as X


def test_guess_positions_for_free_prompts():
    """Protects the explorer's role guess: first/second digit runs are A/B, operator words/symbols found."""
    toks = ["<s>", "Q", ":", "What", "is", "4", "2", "plus", "3", "?", "A", ":"]
    assert E.guess_positions(toks) == {"A": [5, 6], "B": [8], "operator": [7], "end": 11}
    assert E.guess_positions(["<s>", "▁7", "▁+", "▁5", "▁="])["operator"] == [2]


def _effects() -> pd.DataFrame:
    rows = [("all", 0, "0", -0.30), ("all", 0, "1", -0.03), ("all", 1, "0", -0.012), ("all", 1, "1", 0.02),
            ("all", 0, "mlp", -0.5), ("addition", 0, "0", -0.9)]
    df = pd.DataFrame(rows, columns=["task", "layer", "head", "effect"])
    return df.assign(effect_hi=df.effect + 0.001)       # the interval's upper end, as effects.csv v2 has it


def test_head_steps_rank_heads_and_mark_their_first_step():
    """Protects the slider's meaning: heads ranked by effect (MLPs and other tasks left out), key_at = the first
    threshold the effect is below (len(thresholds) = never), and bad thresholds refused with one message."""
    h = X.head_steps(_effects(), [-0.1, -0.02, -0.01])
    assert list(h.name) == ["0.0", "0.1", "1.0", "1.1"] and list(h.key_at) == [0, 1, 2, 3]
    assert X.step_heads(h, 3) == [[(0, 0)], [(0, 0), (0, 1)], [(0, 0), (0, 1), (1, 0)]]
    for bad in ([], [-0.01, -0.1], [-0.1, 0.0], [-0.1, -0.1]):
        with pytest.raises(ValueError, match="strict to loose"):
            X.head_steps(_effects(), bad)
    with pytest.raises(ValueError, match="no head rows"):
        X.head_steps(_effects(), [-0.1], task="division")
