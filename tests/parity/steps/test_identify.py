"""Parity tests of ``arithmech/steps/identify.py``."""
from __future__ import annotations

import pytest


def test_positions_table_end_row_reproduces_the_knockout_curve(embedded_model):
    """Protects the book's END-vs-every-position table: its END row is the knockout curve's own point at
    k = number of key heads (same samples, same random orders); its every-position row is computed on
    the same samples."""
    from arithmech.steps.identify import identify, knockout_summary, positions_table
    model, tok, _ = embedded_model
    res = identify(model, tok, "addition", n_samples=64, seed=0, knockout_samples=16, n_random=2, transfer=False)
    assert res.key_heads["heads"], "the embedded model has key heads for addition"
    phases = res.memory["peak_rss_by_phase"]                          # the process high-water mark: monotone
    assert list(phases) == ["patching", "knockout"] and list(phases.values()) == sorted(phases.values())
    assert res.memory["peak_rss_bytes"] == phases["knockout"] > 50 << 20 and res.memory["cuda_peak_bytes"] is None
    pt = positions_table(res, model, tok).set_index("positions")
    ks = knockout_summary(res).iloc[0]
    for col in ("key_heads", "accuracy_key_heads_out", "accuracy_random_out_mean", "accuracy_random_out_std", "n"):
        assert pt.loc["end", col] == pytest.approx(ks[col]), col
    assert pt.loc["all", "accuracy_key_heads_out"] < 1 and pt.loc["all", "n"] == ks["n"]
