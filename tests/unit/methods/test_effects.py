"""Key heads from the patching effects (arithmech.methods.effects): the whole interval below the threshold."""

from __future__ import annotations

import pytest
import torch

from arithmech.methods.patching import Patched


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
