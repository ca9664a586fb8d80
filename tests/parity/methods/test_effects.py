"""The calibrated effect (a sender's share of the counterfactual's effect on the logit difference) equals a
literal re-computation, and adding it left the paper's effect columns bit for bit as they were."""
from __future__ import annotations

import warnings

import numpy as np
import torch
from factories import prompt_pairs

from arithmech.core.stats import bootstrap_indices, bootstrap_mean_intervals
from arithmech.methods.effects import effects_frame, key_heads_by_share
from arithmech.methods.patching import path_patch

PAPER_COLUMNS = ["task", "layer", "head", "effect", "effect_lo", "effect_hi", "logit_diff", "prob", "prob_change", "n"]


def _end_logits(model, prompt: str, tok, edit=None) -> torch.Tensor:
    """``(vocab,)`` END logits of one prompt run alone; ``edit(layer, z)`` may rewrite o_proj's input ``z``."""
    hooks = []
    if edit is not None:
        for l, layer in enumerate(model.model.layers):
            hooks.append(layer.self_attn.o_proj.register_forward_pre_hook(lambda m, a, l=l: (edit(l, a[0].clone()),)))
    try:
        with torch.no_grad():
            return model(tok(prompt, return_tensors="pt")["input_ids"]).logits[0, -1].float()
    finally:
        for h in hooks:
            h.remove()


def _z(model, prompt: str, tok) -> list[torch.Tensor]:
    """o_proj's END input ``(H * dh,)`` of every layer, for one prompt run alone."""
    got = {}
    def keep(l, z):
        got[l] = z[0, -1].clone()
        return z
    _end_logits(model, prompt, tok, keep)
    return [got[l] for l in range(len(got))]


def test_share_equals_a_literal_recomputation(embedded_model):
    """Protects the calibrated measure end to end: X_c's answer is the model's top-1 on X_c run alone; the
    whole effect LD(X_r) − LD(X_c) and a head's effect LD(patched) − LD(X_r) equal one plain forward per
    prompt (the head's slice at END from X_c, every later layer's heads at END frozen at X_r, hooked by hand);
    effects_frame's share is the ratio of the means, and its interval the percentile bootstrap of that ratio
    over the same resampled prompts as the paper's effect (numpy, a loop over resamples)."""
    model, tok, _ = embedded_model
    _, clean, corrupt, ans = prompt_pairs(tok, 6)
    p = path_patch(model, tok, clean, corrupt, ans)
    H = model.config.num_attention_heads
    dh = model.config.hidden_size // H
    n = len(clean)
    counter = [int(_end_logits(model, x, tok).argmax()) for x in corrupt]
    assert p.counter.tolist() == counter
    ld = lambda lg, k: float(lg[ans[k]] - lg[counter[k]])
    total = [ld(_end_logits(model, c, tok), k) - ld(_end_logits(model, x, tok), k) for k, (c, x) in enumerate(zip(clean, corrupt))]
    np.testing.assert_allclose(p.ld_total().numpy(), total, atol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eff = effects_frame(p, "t", prob=False, n_boot=300, seed=4)
    i, j = divmod(int(eff[eff["head"] != "mlp"].share.idxmin()), H + 1)     # the head of largest share
    for k in range(n):
        zr, zc = _z(model, clean[k], tok), _z(model, corrupt[k], tok)
        def patch(l, z):
            if l == i:
                z[0, -1, j * dh:(j + 1) * dh] = zc[i][j * dh:(j + 1) * dh]  # noqa: B023 (used at once)
            elif l > i:
                z[0, -1] = zr[l]  # noqa: B023 (used at once)
            return z
        mine = ld(_end_logits(model, clean[k], tok, patch), k) - ld(_end_logits(model, clean[k], tok), k)
        assert abs(mine - float(p.ld_effect()[k, i, j])) <= 1e-4, k
    num, den = p.ld_effect().reshape(n, -1).numpy(), p.ld_total().numpy()
    np.testing.assert_allclose(eff.share, num.mean(0) / den.mean(), rtol=1e-12)
    idx = bootstrap_indices(n, 300, 4).numpy()
    ratios = np.stack([num[b].mean(0) / den[b].mean() for b in idx])
    np.testing.assert_allclose(eff.share_lo, np.percentile(ratios, 2.5, axis=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(eff.share_hi, np.percentile(ratios, 97.5, axis=0), rtol=1e-9, atol=1e-12)
    assert eff.share.min() < -0.05 and (eff.share_lo <= eff.share + 1e-12).all() and (eff.share <= eff.share_hi + 1e-12).all()
    kh = key_heads_by_share(eff, "t", -0.05)
    assert all(h["share_hi"] < -0.05 for h in kh["heads"]) and kh["rule"].startswith("share_hi < share_threshold")
    assert [h["share"] for h in kh["heads"]] == sorted(h["share"] for h in kh["heads"])


def test_paper_effect_columns_are_unchanged_by_the_share(embedded_model):
    """Protects the paper's numbers: effects_frame's columns before the share are exactly (==, not approx)
    the relative change of Algorithm 1 and its bootstrap interval computed directly, in the order they were
    written before the share existed; the share's three columns come after them."""
    model, tok, _ = embedded_model
    _, clean, corrupt, ans = prompt_pairs(tok, 8, seed=2)
    p = path_patch(model, tok, clean, corrupt, ans, prob=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eff = effects_frame(p, "t", n_boot=200, seed=7)
        rel = p.relative_change()
    assert list(eff.columns) == PAPER_COLUMNS + ["share", "share_lo", "share_hi", "n_clusters"]
    lo, hi = bootstrap_mean_intervals(rel, 200, 0.95, 7)
    assert eff.effect.tolist() == [float(v) for v in rel.mean(0).flatten()]
    assert eff.effect_lo.tolist() == [float(v) for v in lo.flatten()]
    assert eff.effect_hi.tolist() == [float(v) for v in hi.flatten()]
    assert eff.logit_diff.tolist() == [float(v) for v in p.logit_diff().mean(0).flatten()]
    assert eff.prob.tolist() == [float(v) for v in p.prob().mean(0).flatten()]
