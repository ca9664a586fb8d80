"""The Identify knockout page's cross-fit table (arithmech/identify/knockout_page.py): what it shows is what the
knockout rules read."""

from __future__ import annotations

import pandas as pd

from arithmech.identify.knockout_page import crossfit_table
from arithmech.methods.ablation import crossfit as cf


def _frame() -> pd.DataFrame:
    """Fold 0 holds a (2 prompts) and b (4), fold 1 c (1) and d (3); top 8 right on 0, 2, 0, 3 of them; two random
    draws right on a: 2 and 1, on b, c, d: all; one layer-matched draw in fold 0 only (so not in every fold)."""
    out = []
    for f, c, n, top, rnd in ((0, "a", 2, 0, (2, 1)), (0, "b", 4, 2, (4, 4)), (1, "c", 1, 0, (1, 1)), (1, "d", 3, 3, (3, 3))):
        out += [("addition", f, "nothing-out", -1, 0, c, n, n, 3.0, "")]
        out += [("addition", f, "effect-rank", -1, 2, c, n, top, top / n, "0.0 0.1")]
        out += [("addition", f, "random-rank", s, 2, c, n, rnd[s], rnd[s] / n, f"2.{s} 3.{s}") for s in range(2)]
    out += [("addition", 0, "layer-matched", 0, 2, "a", 2, 2, 1.0, "0.2 0.3")]
    return pd.DataFrame(out, columns=cf.COLUMNS)


def test_the_table_shows_the_paired_differences_the_rules_read_pooled_and_by_fold():
    """Protects the page against showing another number than the rules read: the pooled column is the paired
    difference's reading and interval (accuracy in points: -45 for (2·-0.75 + 4·-0.5 + 1·-1 + 3·0) / 10, its
    within-fold interval [-83, -29]), each fold's column its own (fold 0 -58 [-75, -50], fold 1 -25 [-100, +0]),
    the headers the prompts and clusters, a kind of draw not in every fold 'not run', and the distinct head sets
    each fold drew; a folder without the file: one line."""
    said, styler = crossfit_table(cf.pooled(_frame()))
    t = styler.data
    assert "4 problem clusters" in said.data and "10 held-out prompts" in said.data and "within each fold" in said.data
    assert list(t.columns) == ["all 2 folds (10 prompts, 4 clusters)", "fold 0 (6 prompts, 2 clusters)",
                               "fold 1 (4 prompts, 2 clusters)"]
    assert t.loc["accuracy (points): top 2 minus random heads"].tolist() == ["-45 [-83, -29]", "-58 [-75, -50]",
                                                                           "-25 [-100, +0]"]
    assert t.loc["logit difference: top 2 minus random heads"].tolist() == ["-0.45 [-0.83, -0.29]",
                                                                          "-0.58 [-0.75, -0.50]", "-0.25 [-1.00, +0.00]"]
    assert set(t.loc["accuracy (points): top 2 minus layer-matched"]) == {"not run"}
    assert t.loc["distinct head sets: random / layer-matched draws"].tolist() == ["", "2 of 2 / —", "2 of 2 / —"]
    assert "Not run yet" in crossfit_table(None)[0].data
