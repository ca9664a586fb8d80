"""The Fourier tests (arithmech/accounts/fourier.py): the periodic filter against the literal projection, the random
control, the spectrum share and the residue probe."""
from __future__ import annotations

import numpy as np
import torch

from arithmech.accounts import fourier


def _b(d: int = 32, seed: int = 0) -> torch.Tensor:
    return torch.randn(10, d, generator=torch.Generator().manual_seed(seed))


def test_removing_periodic_components_equals_the_literal_projection_and_kills_those_frequencies():
    """Protects the filter: remove() with the orthonormal basis equals Zhou's x - pinv(M) M x, and the digit logits
    of the filtered write have no power left at periods 10, 5 and 2, and the change is the smallest one that does it
    (it lies in the span of the directions that write those patterns)."""
    b, pats = _b(), fourier.fourier_patterns()
    x = torch.randn(7, 32, generator=torch.Generator().manual_seed(1))
    q = fourier.removal_basis(b, pats)
    got, want = fourier.remove(x, q), fourier.literal_filter(x, b, pats)
    assert q.shape == (32, 5) and torch.allclose(got, want, atol=1e-4)
    z0, z1 = np.fft.rfft((x @ b.T).numpy(), axis=1), np.fft.rfft((got @ b.T).numpy(), axis=1)
    assert np.abs(z1[:, [1, 2, 5]]).max() < 1e-3 * np.abs(z0[:, [1, 2, 5]]).max()
    change = x - got
    assert torch.allclose(change, (change @ q) @ q.T, atol=1e-4)


def test_random_patterns_are_as_many_centred_orthonormal_directions():
    """Protects the matched control: random patterns are orthonormal, orthogonal to all-ones (no logit difference
    sees a constant), and give a removal basis of the same rank as the periodic one."""
    g = torch.Generator().manual_seed(0)
    r = fourier.random_patterns(5, g)
    assert torch.allclose(r.T @ r, torch.eye(5), atol=1e-5) and r.sum(0).abs().max() < 1e-5
    assert fourier.removal_basis(_b(), r).shape[1] == fourier.removal_basis(_b(), fourier.fourier_patterns()).shape[1] == 5
    assert fourier.centred_basis().shape == (10, 9)


def test_periodic_share_of_pure_and_isotropic_patterns():
    """Protects the spectrum measure: a period-5 pattern has share 1, a period-10/3 pattern (k = 3) share 0, and
    random vectors about 5/9."""
    j = np.arange(10)
    assert np.isclose(fourier.periodic_share(np.cos(2 * np.pi * 2 * j / 10)[None]), 1.0)
    assert np.isclose(fourier.periodic_share(np.cos(2 * np.pi * 3 * j / 10)[None]), 0.0, atol=1e-12)
    z = np.random.default_rng(0).normal(size=(4000, 10))
    assert abs(fourier.periodic_share(z) - fourier.ISOTROPIC_SHARE) < 0.02


def test_residue_probe_finds_a_linear_parity_code_and_not_a_permuted_one():
    """Protects the probe and its null: a representation holding x mod 2 on one axis is probed with kappa 1 on
    held-out values, above its permutation null; a mod-10 probe of 1..9 has no testable fold."""
    rng = np.random.default_rng(0)
    values = np.repeat(np.arange(1, 10), 20)
    x = rng.normal(size=(len(values), 1, 8))
    x[:, 0, 0] += 4 * (values % 2)
    r = fourier.residue_probe(x, values, 2, seed=0, n_perm=30)
    assert r["testable"] and r["kappa"][0] > 0.9 and r["kappa"][0] > np.quantile(r["null"], 0.95)
    assert not fourier.residue_probe(x, values, 10, seed=0, n_perm=5)["testable"]
    assert fourier.kappa(np.array([0, 1, 0, 1]), np.array([0, 1, 0, 1]), 2) == 1.0
