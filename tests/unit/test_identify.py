"""The identify step's bookkeeping: unstable-effect warnings, overlap of head lists, results folder names."""
from __future__ import annotations

import pytest
import torch

from arithmech.methods.knockout_overlap import overlap
from arithmech.methods.patching import Patched, check_logit_o


def test_unstable_relative_change_warns_with_count():
    """Protects: samples with logit_o near 0 or negative are detected and counted in the warning."""
    o = torch.tensor([5.0, 0.001, -2.0, 4.0])
    with pytest.warns(UserWarning, match="unstable for 2 of 4 samples: 1 .* and 1 have logit_o <= 0"):
        assert check_logit_o(o, torch.ones(4)) == 2
    p = Patched(torch.ones(4, 1, 2), o[:, None], o, torch.ones(4))
    with pytest.warns(UserWarning):
        p.relative_change()


def test_overlap_sets():
    """Protects: Table 4's shared / run-specific split of two ranked head lists (top-k cut first)."""
    ov = overlap([(1, 1), (2, 2), (3, 3), (4, 4)], [(2, 2), (5, 5), (1, 1)], top=3)
    assert ov["shared"] == [(1, 1), (2, 2)] and ov["only_a"] == [(3, 3)] and ov["only_b"] == [(5, 5)]
    assert ov["fraction_shared"] == pytest.approx(2 / 3)


def test_results_name_keeps_the_whole_last_part():
    """Protects: one results folder per model, named after the alias, the hub id's or folder's last
    part (dots kept: Qwen2.5-0.5B is not Qwen2) or the .gguf file's name."""
    from pathlib import Path

    from arithmech.core.results import folder_name
    assert folder_name("embedded") == "embedded"
    assert folder_name("Qwen/Qwen2.5-0.5B") == "Qwen2.5-0.5B"
    assert folder_name("/models/Llama-2-7b-hf/") == "Llama-2-7b-hf"
    assert folder_name("/tmp/SmolLM2-135M-Instruct.Q4_1.gguf") == "SmolLM2-135M-Instruct.Q4_1"
    assert folder_name(".") == Path.cwd().name                       # `--model .`: the folder's own name
