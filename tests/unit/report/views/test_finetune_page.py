"""Unit tests of ``arithmech/report/views/finetune_page.py``: the memory line, against arithmetic done here."""
from __future__ import annotations

from arithmech.report.views import finetune_page


def test_the_tuned_parameters_line_matches_table_2():
    """Protects the Fine-tune chapter's memory line: precise SFT of 32 heads of LLaMA2-7B tunes the Q, K, V and O
    slices of each (4 x 4096 x 128 parameters a head: 67,108,864 in all), the 0.067B of the paper's Table 2."""
    memory = finetune_page.memory_table()
    assert memory.attrs["tuned_parameters"] == 32 * 4 * 4096 * 128
    assert finetune_page.tuned_line(memory) == "tuned parameters: 0.067B (Table 2: 0.067B)"
