"""Unit tests of ``arithmech/methods/patching.py``."""
from __future__ import annotations

import pytest
import torch

from arithmech.methods.patched import Patched, check_logit_o


def test_unstable_relative_change_warns_with_count():
    """Protects: samples with logit_o near 0 or negative are detected and counted in the warning."""
    o = torch.tensor([5.0, 0.001, -2.0, 4.0])
    with pytest.warns(UserWarning, match="unstable for 2 of 4 samples: 1 .* and 1 have logit_o <= 0"):
        assert check_logit_o(o, torch.ones(4)) == 2
    p = Patched(torch.ones(4, 1, 2), o[:, None], o, torch.ones(4))
    with pytest.warns(UserWarning):
        p.relative_change()
