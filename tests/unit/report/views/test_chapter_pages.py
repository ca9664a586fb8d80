"""Unit tests of the appendices' page modules (``arithmech/report/views/*_page.py``) where a page computes a number
itself: checked against arithmetic done here, not against the page's own output."""
from __future__ import annotations

from types import SimpleNamespace

from arithmech.report.views import computer_vs_llm_page, finetune_page


def test_the_adder_line_gives_the_papers_steps_and_ends_at_the_sum():
    """Protects the computer side of Fig. 17: for 3 + 4 on 3 bits the partial results are the paper's 1 → 3 → 7,
    and for every pair of digits on 5 bits the last partial result is their sum (no model is loaded)."""
    P = SimpleNamespace(model="embedded", device="cpu", dtype="float32", a=3, b=4, bits=3)
    assert computer_vs_llm_page.Page(P).steps() == "1 → 3 → 7"
    for a in range(10):
        for b in range(10):
            page = computer_vs_llm_page.Page(SimpleNamespace(**{**vars(P), "a": a, "b": b, "bits": 5}))
            assert int(page.steps().split(" → ")[-1]) == a + b, (a, b)


def test_the_tuned_parameters_line_matches_table_2():
    """Protects the Fine-tune chapter's memory line: precise SFT of 32 heads of LLaMA2-7B tunes the Q, K, V and O
    slices of each (4 x 4096 x 128 parameters a head: 67,108,864 in all), the 0.067B of the paper's Table 2."""
    memory = finetune_page.memory_table()
    assert memory.attrs["tuned_parameters"] == 32 * 4 * 4096 * 128
    assert finetune_page.tuned_line(memory) == "tuned parameters: 0.067B (Table 2: 0.067B)"

