"""Table 4's knockout (arithmech.methods.ablation.overlap.overlap_knockout) with its control: each knocked-out set's
accuracy is accuracy()'s under that set, and the random band is as many heads outside both runs' top heads, the same
sets on every dataset, summarised by their mean and 5th/95th percentiles."""

from __future__ import annotations

import pytest
from factories import prompt_pairs

from arithmech.core.stats import wilson_interval
from arithmech.methods.ablation.curves import random_orders
from arithmech.methods.ablation.knockout import Ablation, accuracy, mean_activations
from arithmech.methods.ablation.overlap import overlap, overlap_knockout


def test_table4_knockout_rows_and_their_random_band(embedded_model):
    """Protects the control beside Table 4's knockout (a review found the GSM8K appendix's relative changes with no
    n, no interval and no random heads): the heads' accuracy and its Wilson interval over the prompts, and a band of
    ``n_random`` sets of as many heads drawn outside both top lists, each set's accuracy recomputed here by
    ``accuracy`` directly and its percentiles taken by numpy's rule; with ``n_random`` 0 there is no band."""
    import numpy as np
    model, tok, _ = embedded_model
    samples = prompt_pairs(tok, 24, seed=4)[0]
    means = mean_activations(model, tok, [s.corrupt for s in samples], [s.template for s in samples])
    ov = overlap([(5, 0), (4, 1), (3, 2)], [(5, 0), (2, 2), (1, 1)], top=3)
    universe = [(l, h) for l in range(6) for h in range(8)]
    ko = overlap_knockout(model, tok, ov, {"d": (samples, means)}, universe=universe, n_random=5, seed=3)
    orders = random_orders(universe, ov["a"] + ov["b"], 5, 3)
    for r in ko.itertuples():
        heads = {"shared": ov["shared"], "only_a": ov["only_a"], "only_b": ov["only_b"], "top_a": ov["a"],
                 "top_b": ov["b"]}[r.knocked_out]
        sets = [o[: len(heads)] for o in orders]
        assert all(not set(s) & set(ov["a"] + ov["b"]) for s in sets)
        got = accuracy(model, tok, samples, means, [Ablation.of(heads=heads)] + [Ablation.of(heads=s) for s in sets])
        assert r.accuracy == pytest.approx(float(got[0])) and r.n == len(samples)
        assert (r.ci_low, r.ci_high) == wilson_interval(round(r.accuracy * r.n), r.n)
        band = got[1:].numpy()
        assert r.random_sets == 5 and r.random_mean == pytest.approx(float(band.mean()))
        assert (r.random_p05, r.random_p95) == pytest.approx((np.quantile(band, 0.05), np.quantile(band, 0.95)))
    bare = overlap_knockout(model, tok, ov, {"d": (samples, means)})
    assert (bare.random_sets == 0).all() and bare.accuracy.tolist() == pytest.approx(ko.accuracy.tolist())


def test_a_random_control_smaller_than_its_set_is_refused(embedded_model):
    """Protects the band's size: where fewer heads lie outside both top lists than the largest set knocked out, no
    random set of that size exists, and the knockout says so instead of comparing with smaller random sets."""
    model, tok, _ = embedded_model
    samples = prompt_pairs(tok, 8, seed=4)[0]
    means = mean_activations(model, tok, [s.corrupt for s in samples], [s.template for s in samples])
    ov = overlap([(0, 0), (0, 1), (0, 2)], [(0, 3), (1, 0), (1, 1)], top=3)
    with pytest.raises(ValueError, match="2 heads lie outside both top lists, fewer than the largest set"):
        overlap_knockout(model, tok, ov, {"d": (samples, means)}, universe=ov["a"] + ov["b"] + [(2, 0), (2, 1)],
                         n_random=3)
