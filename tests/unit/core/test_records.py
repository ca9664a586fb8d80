"""Unit tests of ``arithmech/core/records.py``."""
from __future__ import annotations

from arithmech.core import records


def test_shipped_smollm2_records_read_in_the_one_format():
    """Protects the committed 40-minute Table 1 run: its three records read through the contract, with
    the command that made them under the one CLI."""
    from pathlib import Path
    folder = Path(__file__).resolve().parents[3] / "results" / "smollm2-135m"
    recs = records.finetune_records(folder)
    assert list(recs) == ["base", "full", "precise"]
    assert all(r["command"] == r["parameters"]["command_now"] for r in recs.values())   # the old runner's CLI
    assert all(r["parameters"]["command_now"].startswith("python -m arithmech table1") for r in recs.values())
    assert recs["precise"]["tuned_parameters"] < recs["full"]["tuned_parameters"]
