"""Fig. 4 as a chart (arithmech.identify.transfer_chart), on hand-built transfer rows and on SmolLM2's shipped
``transfer.csv``: which bar is the correct token, the counts over prompts with their n and Wilson intervals, the
skipped prompts worded for a reader, and one row of two panels per prompt that ran."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from arithmech.core import results
from arithmech.core.stats import wilson_interval
from arithmech.identify import transfer_chart

SHIPPED = Path(__file__).resolve().parents[3] / "results" / "smollm2-135m"


def _rows() -> pd.DataFrame:
    """Two prompts that ran — the first right before the knockout and wrong after, the second wrong both times —
    and one skipped for unknown words (as read back from CSV: answers are numbers, "4" reads as 4, and number
    tokens in a column with missing values read as 4.0)."""
    top = {(0, "before"): ["4", "5", "6", "7", "8"], (0, "after"): ["5", "4", "", "7", "8"],
           (1, "before"): ["1", "2", "3", "9", "0"], (1, "after"): ["1", "3", "2", "9", "0"]}
    rows = [dict(case=c, prompt=["281 + 135 =", "4.2 plus 2.5 equals to"][c], expected=[4, 6][c], status="ok",
                 when=w, rank=r + 1, token=t, prob=0.6 / (r + 1)) for (c, w), ts in top.items() for r, t in enumerate(ts)]
    rows.append(dict(case=2, prompt="Danny has 12 bottle caps", expected=6, when=None, rank=None, token=None, prob=None,
                     status="skipped: unknown to the tokenizer: 'Danny', 'bottle'"))
    df = pd.DataFrame(rows)
    return df.assign(token=[float(t) if isinstance(t, str) and t.isdigit() and c == 0 else t for t, c in zip(df.token, df.case)])


def test_bars_counts_and_skipped_prompts():
    """Protects what the chart reports: the correct token's bar is marked wherever it ranks (also when the file
    reads tokens as numbers), the top-1 count before and after is over the prompts that ran with its n and Wilson
    interval, a blank token reads "(a space)", and a skipped prompt's unknown words are quoted for a reader (no
    Python repr)."""
    bars, skipped = transfer_chart.case_frames(_rows())
    marked = bars[bars.is_answer == "correct next token"]
    assert list(zip(marked.case, marked["when"], marked["rank"])) == [(0, "before", 1), (0, "after", 2)]
    assert "(a space)  20%" in set(bars.shown) and "“4”  60%" in set(bars.shown)
    assert list(skipped.case) == [2] and skipped.words.iloc[0] == "“Danny”, “bottle”"
    c = transfer_chart.top1_counts(_rows())
    assert c["before"] == (1, 2, *wilson_interval(1, 2)) and c["after"] == (0, 2, *wilson_interval(0, 2))


def test_chart_has_one_row_per_prompt_and_states_its_samples():
    """Protects the figure's layout and its honesty about samples: one row of two panels (before, after) per prompt
    that ran, each titled with the prompt and the correct token's probability before → after; the subtitle names the
    heads knocked out, gives the top-1 counts as k/n with 95% intervals, says a panel is one prompt (n = 1), and
    names the skipped prompt with its words."""
    spec = transfer_chart.transfer_chart(_rows(), "m", "the key heads (head 0.0)").to_dict()
    assert len(spec["vconcat"]) == 2 and all(len(r["hconcat"]) == 2 for r in spec["vconcat"])
    titles = [" ".join(r["title"]["text"]) for r in spec["vconcat"]]
    assert titles[0].startswith("prompt 1: “281 + 135 =”") and "“4”: 60% before → 30% after" in titles[0]
    assert "“6”: not in the top 5 before → not in the top 5 after" in titles[1]
    sub = " ".join(spec["title"]["subtitle"])
    assert "the key heads (head 0.0)" in sub and "1/2 prompts before (95% CI" in sub and "0/2 after" in sub
    assert "n = 1" in sub and "prompt 3, words the tokenizer does not know (“Danny”, “bottle”)" in sub
    assert not any(x in json.dumps(spec["title"]) for x in ("True", "False", "None", "'Danny'"))


@pytest.mark.skipif(not (SHIPPED / "transfer.csv").exists(), reason="no shipped SmolLM2 transfer.csv")
def test_smollm2s_shipped_transfer_draws_all_four_prompts():
    """Protects the chart on the shipped file: SmolLM2's byte-level tokenizer runs all four of the paper's prompts,
    so the chart has four rows and the counts are over n = 4."""
    t = results.read(SHIPPED, "transfer.csv")
    spec = transfer_chart.transfer_chart(t, "SmolLM2-135M", "the top 10 by effect rank").to_dict()
    assert len(spec["vconcat"]) == 4
    assert all(n == 4 for _, n, _, _ in transfer_chart.top1_counts(t).values())
