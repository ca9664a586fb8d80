"""The Data chapter's page (arithmech.report.views.data_page): its tables hold the rows of what they read."""
from __future__ import annotations

import json

from arithmech.core.names import EMBEDDED_DIR
from arithmech.data import templates
from arithmech.embedded import heldout
from arithmech.report.views import data_page


def test_templates_are_the_papers_48():
    """Protects the template table: every template of Fig. 8 and Fig. 10 once, each under its figure."""
    t = data_page.templates()
    assert len(t) == len(templates.FIG8) + len(templates.FIG10) == 48
    assert (t.figure == "Fig. 8").sum() == len(templates.FIG8) and t["id"].is_unique


def test_heldout_table_has_a_row_per_figure_of_accuracy_json():
    """Protects the embedded model's accuracy table: trained draws, one row per operation, answer token and exact
    match per held-out split, generic facts and two-digit problems, every figure of accuracy.json it quotes."""
    acc = json.loads((EMBEDDED_DIR / "accuracy.json").read_text())
    table = data_page.heldout_table().data
    assert len(table) == 1 + len(acc["by_operation_interval"]) + 2 * len(heldout.SPLITS) + 2
    assert table["n"].iloc[0] == acc["arithmetic_answer_token_interval"]["n"]
