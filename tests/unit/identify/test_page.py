"""The Identify chapter's page (arithmech.identify.page): its answer-token tables hold every row of
the file they read, and the rates they quote are Wilson intervals, checked against a closed form written out here."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from arithmech.identify import page as identify_page
from arithmech.identify.config import Identify
from arithmech.identify.result import read

SMOL = Path(__file__).resolve().parents[3] / "results" / "smollm2-135m"


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval, from its formula (not arithmech.core.stats)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("k,n", [(8, 10), (0, 7), (145, 162), (50, 50)])
def test_rate_is_a_wilson_interval(k, n):
    """Protects the chapter's "k/n = share [Wilson 95%]" strings: the interval is the Wilson score interval."""
    lo, hi = _wilson(k, n)
    assert identify_page.rate(k, n) == f"{k}/{n} = {k / n:.0%} [{lo:.0%}, {hi:.0%}]"


def test_rate_without_prompts_is_a_dash():
    """Protects a task with no prompt: its rate reads "—", not a division by zero."""
    assert identify_page.rate(0, 0) == "—"


def test_token_tables_hold_every_row_of_answer_tokens_csv():
    """Protects the answer-token tables: one row per task in the chapter's table, one per template in the folded
    one, from the committed SmolLM2 run, and the accuracy column starts with the file's correct / n_drawn."""
    csv = pd.read_csv(SMOL / "answer_tokens.csv")
    r = read(SMOL, Identify())
    view = identify_page.tokens_view(r)
    assert len(view) == len(csv)
    assert len(identify_page.tokens_table(r).data) == (csv.template == "all").sum()
    assert len(identify_page.tokens_table(r, templates=True).data) == (csv.template != "all").sum()
    row = csv.iloc[0]
    assert view["answer-token accuracy"].iloc[0].startswith(f"{row.correct}/{row.n_drawn} = ")


def test_the_pooled_line_names_what_task_all_pools_and_what_fails():
    """Protects the reader of task all's verdicts (a review found the embedded model's "all" rows equal to its
    addition rows with nothing on the page saying so): the line names the operations key_heads.json's control pools
    and each failing one with its reason; a single task, or a file without a control, gets no line."""
    kh = {"task": "all", "control": {"pooled": ["addition"], "failed": {"division": "insufficient: 11 problems"}}}
    assert identify_page.pooled_line(kh) == ("Task all pools the operations that pass identify's control: addition. "
                                             "Not passing it: division (insufficient: 11 problems).")
    assert identify_page.pooled_line({**kh, "task": "addition"}) == "" == identify_page.pooled_line({"task": "all"})
    v6 = {**kh, "control": {**kh["control"], "failed": {}, "undecided": {"division": "undecided on 24 problems: x"},
                            "status": {"addition": "passes", "division": "undecided"}}}
    assert identify_page.pooled_line(v6).endswith("Not passing it: division (undecided on 24 problems: x).")
    import json
    smol = identify_page.pooled_line(json.loads((SMOL / "key_heads.json").read_text()))
    assert smol.startswith("Task all pools the operations that pass identify's control: addition, subtraction.")
