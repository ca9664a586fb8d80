"""The attention bookkeeping of the analyze step (arithmech.methods.attention): END rows need eager attention,
roles of positions.

Values checked against a hand-written Llama forward are in ``parity/methods/test_attention.py``."""

from __future__ import annotations

import pytest
import torch
from factories import make_tiny_llama

from arithmech.methods import attention as At


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
