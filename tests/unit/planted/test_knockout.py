"""The knockout on the planted model (arithmech/planted/knockout.py), checked against the ground truth's ablation."""
from __future__ import annotations

import pytest
import torch

from arithmech.core.names import PLANTED_DIR
from arithmech.embedded import planted, planted_truth
from arithmech.planted import knockout


@pytest.mark.skipif(not (PLANTED_DIR / "model.safetensors").exists(), reason="no shipped planted model")
def test_the_batched_knockout_matches_the_ground_truths_mean_ablation():
    """Protects the knockout's batched hook: with no head ablated it is the model's own accuracy, with the movers
    ablated it is arithmech.embedded.planted_truth.mean_ablation's, the floor is its majority share, and a blind head
    ablated changes no answer."""
    from arithmech.core.models import load_model

    model, tok, _ = load_model("planted")
    items = planted.split_items("in_distribution_small", seed=5, n=3)
    correct, floor = knockout.knockout_outcomes(model, tok, items, [[], list(planted.MOVERS), [(0, 1)]])
    ref = planted_truth.mean_ablation(model, tok, items, planted.MOVERS)
    assert round(correct[:, 0].float().mean().item(), 4) == ref["accuracy"]
    assert round(correct[:, 1].float().mean().item(), 4) == ref["ablated_accuracy"]
    assert round(sum(floor) / len(items), 4) == ref["majority_share"]
    assert torch.equal(correct[:, 2], correct[:, 0])
