"""The planted-score step's input contract (arithmech/planted/config.py)."""
from __future__ import annotations

import sys

import pytest
import torch

from arithmech.planted.config import Chapter, PlantedScore


def test_the_step_refuses_a_model_without_a_planted_circuit(capsys, monkeypatch):
    """Protects the input contract: --model embedded has no ground truth and float16 overflows the planted terms;
    each is refused in one line with exit 2 before torch is imported."""
    from arithmech import cli

    with pytest.raises(ValueError, match="no planted circuit"):
        PlantedScore(model_name="embedded")
    with pytest.raises(ValueError, match="float16"):
        Chapter(dtype="float16")
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    for argv, why in ((["--model", "embedded"], "no planted circuit"), (["--dtype", "float16"], "overflow")):
        with pytest.raises(SystemExit) as e:
            cli.main(["planted-score", *argv])
        err = capsys.readouterr().err
        assert e.value.code == 2 and why in err and len(err.strip().splitlines()) == 1
    assert "torch" not in sys.modules
    monkeypatch.setitem(sys.modules, "torch", torch)
