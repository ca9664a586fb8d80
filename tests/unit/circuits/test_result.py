"""The circuit steps' files read back (``arithmech/circuits/result.py``), on the shipped SmolLM2 run: each field from
the file or the ``run.json`` record it is named after."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from arithmech.circuits.config import Beyond, Faithfulness
from arithmech.circuits.result import (
    BEYOND_FILES,
    FAITHFULNESS_FILES,
    BeyondResult,
    FaithfulnessResult,
    read_beyond,
    read_faithfulness,
)
from arithmech.core import results

SMOL = Path(__file__).resolve().parents[3] / "results" / "smollm2-135m"


def test_the_beyond_result_holds_each_file_it_names():
    """Protects the one reader of beyond's files: :func:`read_beyond` gives ``eap`` and ``upstream`` as the checked
    reads of ``eap.csv`` and ``upstream.csv``, ``summary`` and ``model`` from run.json's beyond record, the layers
    from ``eap.csv`` and the config it is read for."""
    config = Beyond(model_name="smollm2-135m", results=str(SMOL.parent))
    r = read_beyond(SMOL, config)
    assert isinstance(r, BeyondResult) and r.config == config
    for field, name in zip(("eap", "upstream"), BEYOND_FILES):
        pd.testing.assert_frame_equal(getattr(r, field), results.read(SMOL, name), obj=name)
    rec = results.read_run(SMOL)["steps"]["beyond"]
    assert r.summary == rec["summary"] and r.model == rec["parameters"]["model"] == "smollm2-135m"
    assert r.n_layers == 30  # SmolLM2-135M's depth


def test_the_faithfulness_result_holds_its_file_and_record():
    """Protects the one reader of faithfulness's file: :func:`read_faithfulness` gives ``frame`` as the checked read of
    ``faithfulness.csv``, ``record`` as run.json's faithfulness record, ``model`` from it, and the config it is read
    for."""
    config = Faithfulness(model_name="smollm2-135m", results=str(SMOL.parent))
    r = read_faithfulness(SMOL, config)
    assert isinstance(r, FaithfulnessResult) and r.config == config
    pd.testing.assert_frame_equal(r.frame, results.read(SMOL, FAITHFULNESS_FILES[0]), obj=FAITHFULNESS_FILES[0])
    assert r.record == results.read_run(SMOL)["steps"]["faithfulness"] and r.model == "smollm2-135m"
