"""Unit tests of ``arithmech/table1/page.py``: the memory line, against arithmetic done here."""
from __future__ import annotations

import re

from arithmech.table1 import page as finetune_page


def test_the_tuned_parameters_line_matches_table_2():
    """Protects the Fine-tune chapter's memory line: precise SFT of 32 heads of LLaMA2-7B tunes the Q, K, V and O
    slices of each (4 x 4096 x 128 parameters a head: 67,108,864 in all), the 0.067B of the paper's Table 2."""
    memory = finetune_page.memory_table()
    assert memory.attrs["tuned_parameters"] == 32 * 4 * 4096 * 128
    assert finetune_page.tuned_line(memory) == "tuned parameters: 0.067B (Table 2: 0.067B)"


def test_the_smollm2_section_composes_from_the_shipped_results():
    """Protects the Fine-tune chapter's SmolLM2 section, which only the book build ran: on the shipped results it
    composes without a model and shows the scope gate, the format control, the setup with each arm's tuned
    parameters and the progress line."""
    from pathlib import Path

    page = finetune_page.Page.__new__(finetune_page.Page)   # no toy run: the section reads SmolLM2's files only
    page.smol = Path(__file__).resolve().parents[3] / "results" / "smollm2-135m"
    page.folder = page.smol / "no-toy-run"
    text = [o.data for o in page.smol_run() if isinstance(getattr(o, "data", None), str)]
    assert [t[:18] for t in text if t.startswith("**")][:2] == ["**Scope gate** (fu", "**Format control**"]
    assert any("Tuned parameters per run: precise-key" in t for t in text)
    assert any(re.match(r"\*\*\d+ of \d+ planned runs made\*\*", t) for t in text)


def test_another_chapters_arms_section_shows_no_verdict_before_its_grid_is_complete(tmp_path):
    """Protects a chapter other than Fine-tune (the planted model's) from verdicts on a run part-way: with no run it
    names the command that makes one; with a run not complete, how many runs were made and no table."""
    from arithmech.table1 import page as table1_page
    from arithmech.table1.result import Table1Result

    none = table1_page.arms(None, "planted", "python -m arithmech table1 --model planted")
    assert len(none) == 1 and "no arms run yet" in none[0].data and "--model planted" in none[0].data
    part = Table1Result(plan={"complete": False}, base={}, shots=None, runs={"a": {}, "b": {}}, curve=None,
                        folder=tmp_path)
    shown = table1_page.arms(part, "planted", "cmd")
    assert len(shown) == 1 and shown[0].data.startswith("**planted: 2 runs made, the grid not complete**")
