"""Our fine-tuning tables in the paper's shape (arithmech.report.views.tables): every accuracy shown with its
interval and n, every change with its paired interval."""
from __future__ import annotations

from arithmech.core.stats import wilson_interval
from arithmech.report.views import tables


def _measure(items):
    k, n = sum(items), len(items)
    return {"value": round(k / n, 4), "n": n, "ci": list(wilson_interval(k, n)), "items": items}


def _record(mlps, after, delta_ci):
    base = {"two_digit": _measure([1] * 3 + [0] * 97), "generic": _measure([1] * 40)}
    return {"mode": "precise", "heads": [[0, 1]] * 8, "mlps": list(range(mlps)), "tuned_parameters": 100 * (mlps + 1),
            "train": {"samples_per_second": 50.0}, "base": base, "results": after,
            "delta": {b: {"delta": round(after[b]["value"] - base[b]["value"], 4), "ci": delta_ci[b]} for b in after}}


def test_the_mlp_table_shows_each_accuracy_with_its_wilson_interval_and_n():
    """Protects the MLP appendix's Table 5 (it showed bare percentages): base first, then each run, each cell the
    accuracy with its 95% Wilson interval over items, the number of items in the column's name; the chart's frame
    keeps the interval's ends as numbers."""
    after = {"two_digit": _measure([1] * 10 + [0] * 90), "generic": _measure([1] * 36 + [0] * 4)}
    recs = [_record(2, after, {"two_digit": [0.02, 0.12], "generic": [-0.2, 0.0]})]
    shown = tables.ablation_readable(recs, ("two_digit", "generic"))
    lo, hi = wilson_interval(10, 100)
    assert list(shown.index) == ["base", "precise SFT (top-8 heads + 2 MLPs)"]
    assert shown.loc["precise SFT (top-8 heads + 2 MLPs)", "two-digit (math) (n = 100)"] == f"10.0 [{100 * lo:.1f}, {100 * hi:.1f}]"
    assert shown.loc["base", "generic facts (n = 40)"] == "100.0 [91.2, 100.0]"     # Wilson at 40 of 40
    frame = tables.ablation_frame(recs, ("two_digit", "generic"))
    assert frame.loc[0, "two-digit (math) lo"] == round(100 * lo, 1) and frame.loc[0, "generic facts hi"] == round(100 * wilson_interval(36, 40)[1], 1)


def test_the_summary_gives_each_change_its_paired_interval_and_says_when_no_item_changed():
    """Protects the summary lines: a change with its paired interval in points; a bootstrap's zero-width interval
    (every item scored as before) is said in words, not printed as an exact [+0.0, +0.0]."""
    after = {"two_digit": _measure([1] * 10 + [0] * 90), "generic": _measure([1] * 40)}
    line = tables.summary([_record(0, after, {"two_digit": [0.02, 0.12], "generic": [0.0, 0.0]})])
    assert line == "precise SFT (top-8 heads): two-digit (math) +7.0 [+2.0, +12.0], generic facts +0.0 (no item changed)"


def test_every_item_flipping_is_not_called_no_change():
    """Protects the label from a zero-width interval that is not "no change" (a hostile review: every item moving
    the same way also gives the bootstrap [d, d]): only equal item lists read "no item changed"."""
    after = {"two_digit": _measure([1] * 3 + [0] * 97), "generic": _measure([0] * 40)}
    line = tables.summary([_record(0, after, {"two_digit": [0.0, 0.0], "generic": [-1.0, -1.0]})])
    assert line.endswith("two-digit (math) +0.0 (no item changed), generic facts -100.0 [-100.0, -100.0]")


def test_each_mlp_run_against_the_heads_alone_is_paired_over_the_same_items():
    """Protects the MLP appendix's question (what the MLPs add to the heads alone): each later run's change from
    the first, with the paired bootstrap of the two runs' item scores (the same resamples as
    :func:`arithmech.core.records.paired_deltas`)."""
    from arithmech.core.stats import paired_bootstrap
    heads = _record(0, {"two_digit": _measure([1] * 10 + [0] * 90)}, {"two_digit": None})
    mlps = _record(2, {"two_digit": _measure([0] * 5 + [1] * 15 + [0] * 80)}, {"two_digit": None})
    d, lo, hi = paired_bootstrap(heads["results"]["two_digit"]["items"], mlps["results"]["two_digit"]["items"], seed=0)
    assert tables.versus_first([heads, mlps]) == (
        f"precise SFT (top-8 heads + 2 MLPs) − precise SFT (top-8 heads): two-digit (math) {100 * d:+.1f} "
        f"[{100 * lo:+.1f}, {100 * hi:+.1f}]")
    assert tables.versus_first([heads]) == ""
