"""Forward passes at the last position (arithmech/accounts/runner.py): the last-digit logit difference, neuron
attribution against exact neuron patching, and edits that touch only END."""
from __future__ import annotations

import pytest
import torch

from arithmech.accounts import grid
from arithmech.accounts import runner as Rn
from arithmech.core.models import load_model


@pytest.fixture(scope="module")
def toy():
    model, tok, _ = load_model("embedded")
    samples = grid.grid_prompts(tok, "addition", 0, 0)[::97][:16]
    return model, tok, samples, Rn.Runner(model, tok, samples, grid.digit_ids(tok), batch_size=8)


def test_logit_difference_is_the_answer_digit_against_the_other_nine():
    """Protects the measure: LD = logit(answer digit) - mean of the other nine digits' logits."""
    logits = torch.zeros(2, 20)
    logits[0, 13], logits[1, 10:20] = 9.0, torch.arange(10.0)
    digits = torch.arange(10, 20)
    ld = Rn.logit_difference(logits, digits, torch.tensor([3, 0]))
    assert torch.allclose(ld, torch.tensor([9.0, 0 - (45 / 9)]))


def test_clean_pass_matches_the_plain_pass_and_its_gradient_is_the_finite_difference(toy):
    """Protects attribution's gradient: the clean pass's LD equals the edit-free pass, and dLD/dact of a neuron
    equals the finite difference of LD when that neuron's END activation is nudged (exact patching of a small step)."""
    model, tok, samples, r = toy
    c = r.clean([4])
    assert torch.allclose(c.ld, r.ld(), atol=1e-4)
    i, eps = int(c.grads[4].abs().mean(0).argmax()), 1e-2
    path = r.path("mlp", 4) + ".down_proj"
    mask = torch.zeros(c.acts[4].shape[1], dtype=torch.bool)
    mask[i] = True
    ld_up = torch.stack([r.ld(edit_in={path: lambda x, rows: x + eps * mask.float()})])[0]
    assert torch.allclose((ld_up - c.ld) / eps, c.grads[4][:, i], rtol=0.05, atol=1e-2)


def test_attribution_tracks_exact_mean_ablation_of_single_neurons(toy):
    """Protects the attribution-patching parity: over the most attributed neurons, (mu - act) * grad correlates with
    the exact change of LD when the neuron alone is set to its mean (r > 0.8), and exact_neuron_effects equals a
    literal hooked forward for one neuron on one prompt."""
    model, tok, samples, r = toy
    c = r.clean([4])
    mu = c.acts[4].mean(0)
    attr = (mu - c.acts[4]) * c.grads[4]
    top = attr.abs().mean(0).argsort(descending=True)[:6].tolist()
    exact = Rn.exact_neuron_effects(r, 4, top, mu)
    approx = attr[:, top].T
    assert torch.corrcoef(torch.stack([approx.flatten(), exact.flatten()]))[0, 1] > 0.8
    one = Rn.Runner(model, tok, samples[:1], grid.digit_ids(tok))
    base = one.ld()[0]

    def literal(module, args):
        x = args[0].clone()
        x[:, -1, top[0]] = mu[top[0]]
        return (x,)

    h = model.get_submodule(r.path("mlp", 4) + ".down_proj").register_forward_pre_hook(literal)
    try:
        patched = one.ld()[0]
    finally:
        h.remove()
    assert torch.isclose(patched - base, exact[0, 0], atol=1e-4)
