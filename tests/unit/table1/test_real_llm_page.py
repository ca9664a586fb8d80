"""Unit tests of ``arithmech/table1/real_llm_page.py``: the SmolLM2 appendix's Table 1 section, composed
from the shipped results without a model."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from arithmech.table1.real_llm_page import Table1Section

REPO = Path(__file__).resolve().parents[3]


def test_the_table1_section_composes_every_part_from_the_shipped_results():
    """Protects the section the book build alone used to run (a review's find): on the shipped SmolLM2 results it
    composes without a model, and its lines include the scope gate, the format control, the seed check, what the
    Bonferroni level holds open and the tuned parameters — none printing a missing number as "nan"."""
    page = Table1Section.__new__(Table1Section)   # no model: the section reads files only
    page.P = SimpleNamespace(model_name="smollm2-135m", results=str(REPO / "results"))
    page.folder = REPO / "results" / "smollm2-135m"
    out = page.table1()
    text = [o.data for o in out if isinstance(getattr(o, "data", None), str)]
    for start in ("**Scope gate**", "**Format control**", "Random draws share training seeds",
                  ("At each interval's own 95 %", "No undecided verdict")):
        assert any(t.startswith(start) for t in text), start
    assert any("Tuned parameters per run: precise-key" in t for t in text)
    assert not any("nan" in t.split() for t in text)
