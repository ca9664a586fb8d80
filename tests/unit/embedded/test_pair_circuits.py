"""arithmech.embedded.pair_circuits: the top-k overlap of two sets of per-prompt effects."""
from __future__ import annotations

import torch

from arithmech.embedded.pair_circuits import overlap, top_sets


def _effects(n: int, seed: int, shift=None) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    base = torch.linspace(-3, 3, 30) if shift is None else shift
    return base + 0.1 * torch.randn(n, 30, generator=g)


def test_top_sets_are_the_most_negative_weighted_means():
    """Protects the ranking the overlap compares: with unit weights the top k are the k most negative means, and a
    weight of 0 removes a prompt."""
    x = _effects(12, 0)
    assert top_sets(x, torch.ones(1, 12, dtype=torch.float64), 5)[0] == frozenset(x.mean(0).argsort()[:5].tolist())
    w = torch.ones(1, 12, dtype=torch.float64)
    w[0, 3] = 0
    keep = torch.cat([x[:3], x[4:]])
    assert top_sets(x, w, 5)[0] == frozenset(keep.double().mean(0).argsort()[:5].tolist())


def test_overlap_counts_shared_components_with_an_interval():
    """Protects the reading of the table: the same ranking shares all k, the reversed ranking none, and the
    interval holds the point value when the rankings are clear."""
    a, b = _effects(40, 1), _effects(40, 2)
    facts = [i // 4 for i in range(40)]                     # 10 facts of 4 prompts each
    same = overlap(a, b, facts, facts, k=5, n_boot=200)
    assert same["value"] == 5 and same["lo"] <= 5 <= same["hi"] and same["k"] == 5
    rev = overlap(a, _effects(40, 3, shift=-torch.linspace(-3, 3, 30)), facts, facts, k=5, n_boot=200)
    assert rev["value"] == 0 and rev["hi"] == 0
