"""Unit tests of ``arithmech/methods/ablation/overlap.py``."""
from __future__ import annotations

import pytest

from arithmech.methods.ablation.overlap import overlap


def test_overlap_sets():
    """Protects: Table 4's shared / run-specific split of two ranked head lists (top-k cut first)."""
    ov = overlap([(1, 1), (2, 2), (3, 3), (4, 4)], [(2, 2), (5, 5), (1, 1)], top=3)
    assert ov["shared"] == [(1, 1), (2, 2)] and ov["only_a"] == [(3, 3)] and ov["only_b"] == [(5, 5)]
    assert ov["fraction_shared"] == pytest.approx(2 / 3)
