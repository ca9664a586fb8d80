"""The fault-injection tier: hostile results folders, two writers (of sets and of fine-tune records),
a kill during the final move of a set, every bound, a corrupt input of every step, forged messages.

Each case runs the real command line in a subprocess with a timeout (a reader that hangs on a FIFO fails the
test instead of hanging the suite), on tiny hand-written result sets (no model is ever loaded), and asserts the
contract: one line on stderr starting with ``error:``, exit code 2, a message naming the file, and nothing in
the folder changed (``tools.snapshot``). Every test here carries the ``faults`` marker: ``pytest -m faults``
runs the tier alone.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest


def pytest_collection_modifyitems(config, items):
    """Mark every test of this folder ``faults``."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.faults)


@pytest.fixture
def identify_set(tmp_path) -> Path:
    """A tiny identify set of the embedded model written through the results module: ``<tmp>/results/embedded``
    with effects.csv, key_heads.json (one key head), prompts.jsonl and run.json."""
    from arithmech.core import results
    folder = tmp_path / "results" / "embedded"
    effects = pd.DataFrame({"task": ["all", "all"], "layer": [0, 1], "head": ["1", "mlp"], "effect": [-0.2, 0.1],
                            "effect_lo": [-0.21, 0.05], "effect_hi": [-0.19, 0.15]})
    prompt = {"clean": "3 plus 4 is equal to ", "corrupt": "3 nothing 4 is equal to ", "answer": "7", "target": "7",
              "a": 3, "b": 4, "op": "addition", "template": "add-1", "family": "statement",
              "positions": {"A": [0], "B": [2], "operator": [1], "end": 5}, "answer_token": "first"}
    results.write_step(folder, "identify", {"effects.csv": effects, "prompts.jsonl": [prompt],
                                      "key_heads.json": {"task": "all", "threshold": -0.05,
                                                         "heads": [{"layer": 0, "head": 1}]}},
                 {"parameters": {"seed": 0}}, model_name="embedded")
    return folder
