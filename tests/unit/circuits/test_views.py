"""Unit tests of ``arithmech/circuits/views.py``."""
from __future__ import annotations

import pandas as pd

from arithmech.circuits import graph


def _frames(edge: float, se: float):
    eap = pd.DataFrame({"layer": [0, 0, 1, 1], "head": ["0", "mlp", "0", "mlp"], "exact": [-0.01, -0.2, -0.05, 0.0]})
    up = pd.DataFrame([{"receiver": "1.0", "position": "END", "path": p, "sender": s, "sender_layer": 0, "effect": e,
                        "effect_se": se, "n": 64} for s, e in (("0.0", edge), ("MLP 0", edge / 2)) for p in ("q", "k", "v")])
    return eap, up


def test_chapter_tables_take_every_model_through_one_path():
    """Protects the Beyond page's two-model tables: three method rows per model, one verdict row per model equal
    to the rule's own verdict, and the finding line quoting that verdict."""
    from arithmech.circuits import beyond, views
    runs = []
    for name, edge in (("a", -0.01), ("b", -0.09)):
        eap, up = _frames(edge, 0.001)
        eap = eap.assign(eap=eap.exact, eap_ig=eap.exact, exact_se=0.0)
        S = {"n_samples": 64, "top": 10, "ig_steps": 4, "exact_key_heads": [], "receivers": ["1.0"],
             "receivers_from": "key heads", "times": {"exact_s": 1.0, "eap_s": 0.1, "eap_ig_s": 0.4},
             "total_effect": {"mean": -0.5, "se": 0.01},
             **{m: {"spearman_all": 1.0, "spearman_all_lo": 0.9, "spearman_all_hi": 1.0, "spearman_heads": 1.0,
                     "top_overlap": 2, "key_heads": []} for m in ("eap", "eap_ig")}}
        runs.append(beyond.Result(config=beyond.Config(), model=name, summary=S, eap=eap, upstream=up, n_layers=2))
    assert list(views.methods_table(runs).model) == ["a"] * 3 + ["b"] * 3
    assert list(views.methods_table(runs)[views.CI])[:3] == ["—", "[+0.900, +1.000]", "[+0.900, +1.000]"]
    v = views.verdict_table(runs)
    assert list(v.verdict) == [graph.verdict(r.eap, r.upstream)["verdict"] for r in runs] == ["holds", "does not hold"]
    assert all(f"**{x}**" in line for x, line in zip(v.verdict, views.finding_lines(runs)))
    assert len(views.upstream_table(runs, top=2)) == 4


def test_spearman_interval_resamples_prompts_and_matches_pandas():
    """Protects the interval beside each rank correlation (prompt noise must be in it): each
    resample's ρ is pandas' Spearman of the re-averaged effects; identical methods give [1, 1]; more prompt
    noise gives a wider interval; one cluster per prompt is the prompt bootstrap."""
    import torch

    from arithmech.core.stats import bootstrap_counts
    from arithmech.methods.attribution import _spearman_rows, spearman_intervals
    g = torch.Generator().manual_seed(0)
    exact = torch.randn(40, 4, 5, generator=g) + torch.linspace(-2, 2, 20).reshape(4, 5)
    assert spearman_intervals(exact, exact.clone(), 4, 200) == {
        "spearman_all_lo": 1.0, "spearman_all_hi": 1.0, "spearman_heads_lo": 1.0, "spearman_heads_hi": 1.0}
    noisy = lambda s: exact + s * torch.randn(40, 4, 5, generator=g)
    a, b = spearman_intervals(exact, noisy(0.5), 4, 300), spearman_intervals(exact, noisy(3.0), 4, 300)
    assert b["spearman_all_hi"] - b["spearman_all_lo"] > a["spearman_all_hi"] - a["spearman_all_lo"] > 0
    est = noisy(1.0)
    assert spearman_intervals(exact, est, 4, 100, clusters=list(range(40))) == spearman_intervals(exact, est, 4, 100)
    w = bootstrap_counts(40, 3, 0)
    me, mm = (w @ exact.reshape(40, -1).double()) / 40, (w @ est.reshape(40, -1).double()) / 40
    want = [pd.Series(me[i].numpy()).rank().corr(pd.Series(mm[i].numpy()).rank()) for i in range(3)]   # as summarize
    assert torch.allclose(_spearman_rows(me, mm), torch.tensor(want, dtype=torch.float64), atol=1e-12)

