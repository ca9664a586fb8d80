"""The cloze sets read from ../shared/data (arithmech.evals.cloze): counts, golds and prompts as its README states."""
from __future__ import annotations

import pytest

from arithmech.evals import cloze
from arithmech.evals.benchmarks import data_dir

pytestmark = pytest.mark.skipif(not (data_dir() / "hellaswag").exists(), reason="benchmark folder not present")


def test_counts_and_gold_balance_match_the_data_readme():
    """Protects: the readers parse every item (the README's row counts) and golds point at a choice —
    a parse that drops or shifts HellaSwag's 6-line blocks, or PIQA's label file, fails here."""
    sizes = {"hellaswag": 10042, "piqa": 1838, "arc_easy": 2376, "mmlu": 14042, "csqa": 1221}
    for name, n in sizes.items():
        rows = cloze.read(name)
        assert len(rows) == n, name
        assert all(0 <= r.gold < len(r.choices) for r in rows), name
        assert all(c.startswith(" ") for r in rows for c in r.choices), name
    golds = [r.gold for r in cloze.read("hellaswag")]
    assert [golds.count(k) for k in range(4)] == [2515, 2485, 2584, 2458]
    assert sum(r.gold for r in cloze.read("piqa")) == 928


def test_prompt_forms():
    """Protects: the harness's zero-shot cloze prompts (PIQA, ARC: "Question: ...\\nAnswer:"), SmolLM2's MMLU
    cloze form (subject line first) and the README's chance levels (ARC-Easy 25.02 %)."""
    assert cloze.read("piqa")[0].context.startswith("Question: ") and cloze.read("piqa")[0].context.endswith("\nAnswer:")
    m = cloze.read("mmlu")[0]
    assert m.context.startswith("The following are questions about abstract algebra.\nQuestion: ")
    assert round(100 * cloze.chance(cloze.read("arc_easy")), 2) == 25.02
    assert cloze.sample("csqa", 5, 0) == cloze.sample("csqa", 5, 0) != cloze.sample("csqa", 5, 1)
