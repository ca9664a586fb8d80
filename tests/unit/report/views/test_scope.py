"""The introduction's scope box (arithmech.report.views.scope), on the shipped SmolLM2 runs."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from arithmech.identify.result import Ranking
from arithmech.report.views.scope import MODEL, scope_box

REPO = Path(__file__).resolve().parents[4]


def test_scope_box_states_the_shipped_yields_and_what_cannot_be_tested():
    """Protects the first screen's numbers: the share of the paper's one-digit prompts SmolLM2 answers right
    without and with solved examples is answer_tokens.csv's whole-answer count over every operation, read
    directly here; the box says negatives cannot be tested; no zero-shot run, no box."""
    runs = REPO / "results"
    box = scope_box(Ranking.made(runs, MODEL, "zero-shot"), Ranking.made(runs, MODEL))
    for folder in (REPO / "results" / "smollm2-135m" / "zero-shot", REPO / "results" / "smollm2-135m"):
        t = pd.read_csv(folder / "answer_tokens.csv")
        t = t[(t.template == "all") & (t.task != "all")]
        k, n = int(t.exact_correct.sum()), int(t.n_drawn.sum())
        assert f"{k / n:.0%} ({k:,} of {n:,};" in box
    assert box.startswith(":::{admonition} Scope") and "**It cannot test** any negative about LLaMA2-7B" in box
    assert scope_box(None, Ranking.made(runs, MODEL)) is None
