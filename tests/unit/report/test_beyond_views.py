"""Unit tests of ``arithmech/report/beyond_views.py``."""
from __future__ import annotations

import pandas as pd

from arithmech.report import circuit as C


def _frames(edge: float, se: float):
    eap = pd.DataFrame({"layer": [0, 0, 1, 1], "head": ["0", "mlp", "0", "mlp"], "exact": [-0.01, -0.2, -0.05, 0.0]})
    up = pd.DataFrame([{"receiver": "1.0", "position": "END", "path": p, "sender": s, "sender_layer": 0, "effect": e,
                        "effect_se": se, "n": 64} for s, e in (("0.0", edge), ("MLP 0", edge / 2)) for p in ("q", "k", "v")])
    return eap, up


def test_chapter_tables_take_every_model_through_one_path():
    """Protects the Beyond page's two-model tables: three method rows per model, one verdict row per model equal
    to the rule's own verdict, and the finding line quoting that verdict."""
    from arithmech.report import beyond_views as V
    runs = []
    for name, edge in (("a", -0.01), ("b", -0.09)):
        eap, up = _frames(edge, 0.001)
        eap = eap.assign(eap=eap.exact, eap_ig=eap.exact, exact_se=0.0)
        S = {"n_samples": 64, "top": 10, "ig_steps": 4, "exact_key_heads": [], "receivers": ["1.0"],
             "receivers_from": "key heads", "times": {"exact_s": 1.0, "eap_s": 0.1, "eap_ig_s": 0.4},
             "total_effect": {"mean": -0.5, "se": 0.01},
             **{m: {"spearman_all": 1.0, "spearman_heads": 1.0, "top_overlap": 2, "key_heads": []} for m in ("eap", "eap_ig")}}
        runs.append({"model": name, "summary": S, "eap": eap, "upstream": up, "n_layers": 2})
    assert list(V.methods_table(runs).model) == ["a"] * 3 + ["b"] * 3
    v = V.verdict_table(runs)
    assert list(v.verdict) == [C.verdict(r["eap"], r["upstream"])["verdict"] for r in runs] == ["holds", "does not hold"]
    assert all(f"**{x}**" in line for x, line in zip(v.verdict, V.finding_lines(runs)))
    assert list(V.shares_table(runs).model) == ["a", "b"] and len(V.upstream_table(runs, top=2)) == 4


def test_spearman_interval_is_fisher_z_and_narrows_with_n():
    """Protects the interval shown beside each rank correlation: Fisher z with s.e. 1.03/√(n−3), containing ρ,
    narrower for more items, and degenerate (ρ, ρ) where the transform is undefined."""
    import math
    from arithmech.report.beyond_views import spearman_ci
    lo, hi = spearman_ci(0.9, 300)
    assert lo < 0.9 < hi and math.isclose(math.atanh(hi) - math.atanh(0.9), 1.959964 * 1.03 / math.sqrt(297), rel_tol=1e-9)
    assert (hi - lo) < (lambda a: a[1] - a[0])(spearman_ci(0.9, 30))
    assert spearman_ci(1.0, 300) == (1.0, 1.0) and spearman_ci(0.5, 3) == (0.5, 0.5)
