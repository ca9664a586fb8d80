"""Precision and recall against the planted heads with cluster intervals, and identify's rules as this wing applies
them (arithmech/planted/scoring.py)."""
from __future__ import annotations

import pytest
import torch

from arithmech.planted import scoring

MOVERS = [(2, 0), (2, 1), (2, 2)]


def test_precision_and_recall_against_a_hand_computed_literal():
    """Protects the scoring: a rule that names 2.0, 2.1 and the blind 1.3 has precision 2/3 and recall 2/3 of the
    three movers, and a rule whose set never changes has those values as both ends of its cluster interval; a rule
    that adds 2.2 only when problem "c" is drawn gets recall 1 on every prompt and an interval from 2/3 (the resamples
    without "c") to 1."""
    clusters = ["a", "a", "b", "c", "d", "e"]
    fixed = lambda rows, labels: {(2, 0), (2, 1), (1, 3)}
    s = scoring.score_finder(fixed, clusters, MOVERS, n_resamples=50, seed=0)
    assert (s["recall"]["k"], s["recall"]["n"], s["precision"]["k"], s["precision"]["n"]) == (2, 3, 2, 3)
    assert s["recall"]["value"] == s["precision"]["value"] == 0.6667
    assert s["recall"]["lo"] == s["recall"]["hi"] == pytest.approx(2 / 3, abs=1e-4)
    assert s["false_positives"] == [(1, 3)] and s["missed"] == [(2, 2)] and s["clusters"] == 5 and s["n"] == 6
    when_c = lambda rows, labels: {(2, 0), (2, 1)} | ({(2, 2)} if any(clusters[r] == "c" for r in rows) else set())
    s = scoring.score_finder(when_c, clusters, MOVERS, n_resamples=200, seed=0)
    assert s["recall"]["value"] == 1.0 and s["recall"]["lo"] == pytest.approx(2 / 3, abs=1e-4)
    assert s["recall"]["hi"] == 1.0 and s["precision"]["lo"] == s["precision"]["hi"] == 1.0
    assert 0 < s["found_share"]["2.2"] < 1


def test_a_cluster_resample_labels_each_drawn_copy_apart():
    """Protects the nested interval: a cluster drawn twice contributes its prompts twice, labelled as two problems,
    and an undrawn cluster contributes nothing."""
    rows, labels = scoring.resample([2, 2, 0, 1], ["a", "a", "b", "c"])
    assert rows == [0, 0, 1, 1, 3]
    assert labels == [("a", 0), ("a", 1), ("a", 0), ("a", 1), ("c", 0)]


def test_the_rules_are_identifys_own():
    """Protects "identify's key heads": on every prompt the paper's rule and the share rule as this module applies
    them name exactly the heads arithmech.methods.effects.key_heads and key_heads_by_share name from effects_frame."""
    from arithmech.methods.effects import effects_frame, key_heads, key_heads_by_share
    from arithmech.methods.patched import Patched

    g = torch.Generator().manual_seed(3)
    n, L, H = 40, 2, 3
    logit_o = 10 + torch.rand(n, L, generator=g)
    logit_p = logit_o[..., None] * (1 - 0.3 * torch.rand(n, L, H + 1, generator=g) * torch.tensor([1, 0, 0.2, 1]))
    counter_p = torch.rand(n, L, H + 1, generator=g)
    p = Patched(logit_p, logit_o, logit_o[:, 0], torch.ones(n), counter=torch.zeros(n, dtype=torch.long),
                counter_p=counter_p, counter_o=torch.zeros(n, L), ld_r=logit_o[:, 0], ld_c=torch.rand(n, generator=g))
    labels = [i // 2 for i in range(n)]
    eff = effects_frame(p, "t", prob=False, n_boot=200, seed=0, clusters=labels)
    rows = list(range(n))
    paper = scoring.below(p.relative_change(warn=False)[..., :H], -0.05, 200, 0)(rows, labels)
    share = scoring.share_below(p.ld_effect()[..., :H], p.ld_total(), -0.05, 200, 0)(rows, labels)
    assert paper == {(h["layer"], h["head"]) for h in key_heads(eff, "t", -0.05)["heads"]} and paper
    assert share == {(h["layer"], h["head"]) for h in key_heads_by_share(eff, "t", -0.05)["heads"]}
