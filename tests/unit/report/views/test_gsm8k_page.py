"""The GSM8K appendix's knockout table (arithmech.report.views.gsm8k_page.Page.knockout_table)."""
from __future__ import annotations

import pandas as pd

from arithmech.report.views.gsm8k_page import PAPER_OURS, Page


def test_the_knockout_table_shows_each_set_beside_its_random_band():
    """Protects Table 4 as the page shows it: per dataset (ours first) the heads' relative change with accuracy,
    Wilson interval and n, then the random band's 5th-95th percentile change; an empty set's band is a dash; the
    paper's column keys on the renamed rows."""
    rows = []
    for d, base in ((PAPER_OURS, 0.8), ("GSM8K", 0.5)):
        for w, acc, sets in (("shared", 0.4, 20), ("only GSM8K", 0.5, 0)):
            rows.append({"dataset": d, "knocked_out": w, "n_heads": 2, "n": 50, "base_accuracy": base,
                         "accuracy": acc, "ci_low": acc - 0.1, "ci_high": acc + 0.1, "relative_drop": acc / base - 1,
                         "random_sets": sets, "random_mean": base, "random_p05": base * 0.9, "random_p95": base})
    page = Page.__new__(Page)
    page.name, page.__dict__["cmp"] = "GSM8K", {"knockout": pd.DataFrame(rows)}
    t = page.knockout_table().data
    assert list(t.columns) == [f"{PAPER_OURS}: these heads", f"{PAPER_OURS}: as many random heads",
                               "GSM8K: these heads", "GSM8K: as many random heads", "paper: ours / GSM8K"]
    assert t.loc["shared", f"{PAPER_OURS}: these heads"] == "-50% (40% [30%, 50%], n = 50)"
    assert t.loc["shared", "GSM8K: as many random heads"] == "-10% to +0% (20 sets)"
    assert t.loc["only GSM8K", "GSM8K: as many random heads"] == "—"
    assert t.loc["shared", "paper: ours / GSM8K"] == "−56% / −52%" and t.loc["only GSM8K", "paper: ours / GSM8K"] \
        == "−2% / −26%"
