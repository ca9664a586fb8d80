"""Analyze's files read back (``arithmech/analyze/result.py``), on the shipped SmolLM2 run: each field from the file
it is named after, and the stages and the heads' source as the run recorded them."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from arithmech.analyze.config import Analyze
from arithmech.analyze.result import FILES, AnalyzeResult, read
from arithmech.core import results

SMOL = Path(__file__).resolve().parents[3] / "results" / "smollm2-135m"


def test_the_result_holds_each_file_it_names():
    """Protects the one reader of analyze's files: :func:`read` gives each frame as the checked read of its file, the
    summary as ``analyze.json``, the config it is read for, and the studied heads' labels for the heads identify's
    files name; ``stages`` are ``analyze.json``'s as tuples and ``heads_from`` its source of the heads."""
    config = Analyze(model_name="smollm2-135m", results=str(SMOL.parent))
    r = read(SMOL, config)
    assert isinstance(r, AnalyzeResult) and r.config == config
    for field, name in zip(("roles", "baseline", "mlp", "top", "summary"), [f for f in FILES]):
        got, want = getattr(r, field), results.read(SMOL, name)
        if isinstance(want, pd.DataFrame):
            pd.testing.assert_frame_equal(got, want, obj=name)
        else:
            assert got == want, name
    assert r.labels.name.tolist() == [h["name"] for h in r.summary["key_heads"]]
    assert r.stages == {k: tuple(v) for k, v in r.summary["stages"].items()} and r.heads_from == r.summary["heads_from"]
