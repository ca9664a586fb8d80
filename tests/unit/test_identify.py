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


def _patched(rel: torch.Tensor) -> Patched:
    """A Patched result whose relative changes are ``rel`` ``(n, L, H + 1)`` (logit_o = 10 everywhere)."""
    n, L, _ = rel.shape
    o = torch.full((n, L), 10.0, dtype=torch.float64)
    return Patched(o[..., None] * (1 + rel.double()), o, o[:, 0], torch.ones(n, dtype=torch.float64))


def test_key_head_needs_its_whole_interval_below_the_threshold():
    """Protects the key-head rule: a head is key only when the upper end of its bootstrap interval is below
    the threshold. Head 0 (every prompt −10%) is key; head 1 has a mean of −6% but a spread that reaches
    above −5%, so it is not, although its mean passes; effects_frame's interval is the bootstrap of the
    per-prompt relative changes (same seed) and contains the mean; key_heads.json states the rule."""
    from arithmech.core.stats import bootstrap_mean_intervals
    from arithmech.methods.effects import effects_frame, key_heads
    n = 40
    spread = torch.tensor([0.5, -0.5]).repeat(n // 2)
    rel = torch.stack([torch.full((n,), -0.10), -0.06 + spread, torch.full((n,), 0.02)], 1)[:, None]  # (n, 1, 3)
    eff = effects_frame(_patched(rel), "t", prob=False, n_boot=1000, seed=5)
    lo, hi = bootstrap_mean_intervals(_patched(rel).relative_change(), 1000, 0.95, 5)
    assert eff["effect_lo"].tolist() == pytest.approx(lo.flatten().tolist(), abs=1e-12)
    assert eff["effect_hi"].tolist() == pytest.approx(hi.flatten().tolist(), abs=1e-12)
    assert (eff.effect_lo <= eff.effect + 1e-12).all() and (eff.effect <= eff.effect_hi + 1e-12).all()
    assert eff.effect.tolist() == pytest.approx([-0.10, -0.06, 0.02])
    kh = key_heads(eff, "t", -0.05)
    assert [h["name"] for h in kh["heads"]] == ["0.0"] and kh["n_heads_mean_below"] == 2
    assert kh["rule"].startswith("effect_hi < threshold") and kh["heads"][0]["effect_hi"] < -0.05
    with pytest.raises(ValueError, match="effect_hi"):
        key_heads(eff.drop(columns="effect_hi"), "t")


def test_public_names_stay_importable_from_identify():
    """Protects the book's and the packages' imports: effects_frame, ranking and key_heads moved to
    methods/effects.py and are the same objects under arithmech.steps.identify."""
    from arithmech.methods import effects
    from arithmech.steps import identify
    assert identify.effects_frame is effects.effects_frame and identify.ranking is effects.ranking
    assert identify.key_heads is effects.key_heads
