"""Unit tests of ``arithmech/methods/upstream.py``'s table and slots (no model)."""
from __future__ import annotations

import math

import pytest
import torch

from arithmech.methods import upstream


def test_frame_has_a_position_per_path_and_skips_samples_without_the_role():
    """Protects upstream.csv's rows: one per sender x (position, path) of COLUMNS; the mean, s.e. and n of a role
    path count only the samples that have the role (NaN = no token), by hand on three samples."""
    H = 1
    d = torch.zeros(3, 2, len(upstream.COLUMNS))                 # receiver 1.0: senders 0.0 and MLP 0
    op_k = upstream.COLUMNS.index(("operator", "k"))
    d[:, 0, op_k] = torch.tensor([1.0, 3.0, float("nan")])
    logit_o = torch.tensor([2.0, 2.0, 2.0])
    f = upstream.frame({(1, 0): d}, logit_o, H)
    assert len(f) == 2 * len(upstream.COLUMNS) and set(f.position) == {"END", "A", "operator", "B"}
    assert list(f[f.position == "END"].path[:3]) == ["q", "k", "v"] and set(f[f.position == "B"].path) == {"k", "v"}
    row = f[(f.sender == "0.0") & (f.position == "operator") & (f.path == "k")].iloc[0]
    assert row.n == 2 and row.effect == pytest.approx(1.0) and row.logit_diff == pytest.approx(2.0)
    assert row.effect_se == pytest.approx(math.sqrt(0.5) / math.sqrt(2))     # rel 0.5, 1.5: sd sqrt(0.5)
    assert (f[f.path == "q"].n == 3).all()


def test_role_slots_pad_and_leave_out_end():
    """Protects the slots of the fast path: roles padded to their longest sample, END's token left out, and a
    position outside the prompt refused."""
    where, valid, cols = upstream.role_slots([{"A": [1, 2], "operator": [3], "B": [4]},
                                       {"A": [1], "operator": [2], "B": [5]}], T=6)
    assert cols == {"A": slice(0, 2), "operator": slice(2, 3), "B": slice(3, 4)}
    assert where.tolist() == [[1, 2, 3, 4], [1, 0, 2, 0]]
    assert valid.tolist() == [[True, True, True, True], [True, False, True, False]]
    with pytest.raises(ValueError, match="outside a 6-token prompt"):
        upstream.role_slots([{"A": [6]}], T=6)
