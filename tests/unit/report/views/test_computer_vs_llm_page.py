"""Unit tests of ``arithmech/report/views/computer_vs_llm_page.py``: the adder side, against arithmetic done here."""
from __future__ import annotations

from types import SimpleNamespace

from arithmech.report.views import computer_vs_llm_page


def test_the_adder_line_gives_the_papers_steps_and_ends_at_the_sum():
    """Protects the computer side of Fig. 17: for 3 + 4 on 3 bits the partial results are the paper's 1 → 3 → 7,
    and for every pair of digits on 5 bits the last partial result is their sum (no model is loaded)."""
    P = SimpleNamespace(model_name="embedded", device="cpu", dtype="float32", a=3, b=4, bits=3)
    assert computer_vs_llm_page.Page(P).steps() == "1 → 3 → 7"
    for a in range(10):
        for b in range(10):
            page = computer_vs_llm_page.Page(SimpleNamespace(**{**vars(P), "a": a, "b": b, "bits": 5}))
            assert int(page.steps().split(" → ")[-1]) == a + b, (a, b)
