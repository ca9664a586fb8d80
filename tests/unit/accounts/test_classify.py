"""Heuristic classes and periodic fits of operand-grid maps (arithmech/accounts/classify.py), on constructed
neurons whose pattern is known."""
from __future__ import annotations

import numpy as np

from arithmech.accounts import classify
from arithmech.accounts.rules import R2_MIN

OPS = range(1, 10)
AB = classify.cells(OPS)


def _noisy(f: np.ndarray, seed: int, scale: float = 0.05) -> np.ndarray:
    return f + np.random.default_rng(seed).normal(0, scale, f.shape)


def test_a_period_10_neuron_is_recovered_by_the_periodic_family():
    """Protects the periodic fit: a neuron firing as cos(2 pi (a + b - 3) / 10) is fitted by exactly that feature,
    with a held-out R^2 near 1, and wins against the heuristic indicators."""
    m = _noisy(np.cos(2 * np.pi * (AB.sum(1) - 3) / 10), 0)[None]
    c = classify.classify(m, OPS, seed=0, n_perm=30)
    assert c.p_family.names[c.periodic.best[0]] == "cos 2pi(a+b - 3)/10"
    assert c.periodic.r2_heldout[0] > 0.95
    assert c.periodic.r2_heldout[0] > c.heuristic.r2_heldout[0]
    assert c.periodic_wins().tolist() == [True]


def test_a_range_neuron_is_recovered_by_the_heuristic_family():
    """Protects the heuristic classes: a neuron on for a in [3, 6] is classified "operand range" with that very
    pattern, and its pattern covers exactly those cells (the prompts it is associated with)."""
    f = ((AB[:, 0] >= 3) & (AB[:, 0] <= 6)).astype(float)
    m = _noisy(2 * f, 1)[None]
    c = classify.classify(m, OPS, seed=0, n_perm=30)
    assert c.h_family.names[c.heuristic.best[0]] == "a in [3, 6]"
    assert c.kind(0) == "operand range" and c.classified()[0]
    covers = classify.bernoulli_pattern(AB, c.h_family, int(c.heuristic.best[0]), float(c.heuristic.slope[0]))
    assert np.array_equal(covers, f > 0)
    assert c.periodic.r2_heldout[0] < c.heuristic.r2_heldout[0]


def test_a_shuffled_grid_is_rejected_and_the_null_rate_is_low():
    """Protects the permuted-grid null: maps of known patterns with their cells shuffled are mostly unclassified
    (held-out R^2 below R2_MIN), and the null rate the rule compares against is small."""
    rng = np.random.default_rng(2)
    f = ((AB[:, 0] >= 3) & (AB[:, 0] <= 6)).astype(float)
    shuffled = np.stack([rng.permutation(_noisy(f, i)) for i in range(40)])
    c = classify.classify(shuffled, OPS, seed=0, n_perm=20)
    assert c.classified().mean() < 0.2
    assert c.null_heuristic < 0.2
    real = classify.classify(np.stack([_noisy(f, i) for i in range(40)]), OPS, seed=0, n_perm=20)
    assert real.classified().mean() == 1.0 and real.null_heuristic < 0.2


def test_the_fit_is_least_squares_on_the_fit_cells_and_scored_on_the_held_out_ones():
    """Protects fit_family against a literal computation: the chosen candidate's slope is numpy's least-squares
    slope on the fit cells, and the held-out R^2 is 1 - SSE/SST on the held-out cells."""
    fam = classify.periodic_family(AB)
    fit, test = classify.split_cells(len(AB), 3)
    y = _noisy(0.7 * fam.features[:, 5] + 1.0, 4, 0.2)
    r = classify.fit_family(y[None], fam, fit, test)
    k = int(r.best[0])
    slope, icpt = np.polyfit(fam.features[fit, k], y[fit], 1)
    assert np.isclose(r.slope[0], slope)
    pred = icpt + slope * fam.features[test, k]
    sst = ((y[test] - y[test].mean()) ** 2).sum()
    assert np.isclose(r.r2_heldout[0], 1 - ((y[test] - pred) ** 2).sum() / sst)
    assert len(fit) + len(test) == 81 and not set(fit) & set(test)
    assert R2_MIN > 0
