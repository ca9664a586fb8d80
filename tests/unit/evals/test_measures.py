"""Unit tests of ``arithmech/evals/measures.py``."""
from __future__ import annotations

import pytest

from arithmech.core.stats import wilson_interval
from arithmech.evals.measures import accuracy_measure


def test_an_accuracy_measure_keeps_its_items_and_their_wilson_interval():
    """Protects the one accuracy measure of Table 1's evaluations and the fine-tune step's records: value = mean of
    the 0/1 items, n = their count, ci = Wilson over (correct, n), and the items themselves kept in order (the
    paired intervals read them)."""
    items = [1, 1, 0, 1, 0, 0, 1, 1]
    m = accuracy_measure(items)
    assert m == {"metric": "accuracy", "value": 0.625, "n": 8, "ci": list(wilson_interval(5, 8)), "items": items}
    assert m["ci"][0] < 0.625 < m["ci"][1] and m["ci"] == pytest.approx([0.306, 0.863], abs=1e-3)
