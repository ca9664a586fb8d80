"""Unit tests of ``arithmech/circuits/faithfulness.py``: its typed Result, read back from the files a run writes."""
from __future__ import annotations

import pandas as pd
import pytest

from arithmech.circuits import faithfulness
from arithmech.circuits.config import Faithfulness
from arithmech.core import results
from arithmech.core.safe_read import ResultsError
from arithmech.methods.faithfulness import COLUMNS


def _old_frame() -> pd.DataFrame:
    """Three circuits' rows with the columns of a file written before rule version 5 (no recovery, no positions)."""
    return pd.DataFrame(
        [{"task": "all", "method": "mean", "ablation": "noising", "order": o, "draw": d, "n": n, "share": s,
          "lo": s - 0.1, "hi": s + 0.1, "n_prompts": 32, "n_clusters": 16, "split": "heldout", "components": c}
         for o, d, n, s, c in (("top", 0, 1, 0.25, "0.1"), ("top", 0, 2, 0.5, "0.1 1.0"), ("random", 3, 2, 0.125, "0.0 1.1"))]
    )


def test_the_result_read_back_is_what_the_run_wrote(tmp_path):
    """Protects the step's typed Result: ``faithfulness.csv`` and the step's ``run.json`` record, written
    through the results contract as :func:`run` writes them, are read back unchanged, with the model the record
    names and the config the Result is read for; the command line's summary is made from it."""
    old = _old_frame()
    frame = old.assign(**{c: 0.5 for c in COLUMNS if c not in old}).assign(positions="end", baseline="b")[COLUMNS]
    info = {"n_prompts": 32, "n_clusters": 16, "circuits": 3, "ranking": ["0.1", "1.0", "MLP 0"]}
    record = {"parameters": {"model": "embedded", "n_samples": 32}, "info": info, "rule": {"holds": False},
              "wall_s": 2.25}
    folder = results.model_folder(tmp_path, "embedded")
    results.write_step(folder, "faithfulness", {"faithfulness.csv": frame}, record, model_name="embedded")
    config = Faithfulness(results=str(tmp_path), n_samples=32)
    back = faithfulness.read(folder, config)
    assert isinstance(back, faithfulness.Result) and back.config == config and back.model == "embedded"
    pd.testing.assert_frame_equal(back.frame, frame)
    assert {k: back.record[k] for k in record} == record and back.record == results.read_run(folder)["steps"]["faithfulness"]
    lines = faithfulness.summary(back).splitlines()
    assert lines[0].startswith("32 evaluation prompts (16 problems), 3 circuits; top-n of 0.1, 1.0, MLP 0")
    assert lines[1].startswith("circuit-faithful: False; best candidate no candidate")
    assert lines[2] == f"wrote faithfulness.csv to {folder} in 2 s"


def test_a_file_written_before_the_current_columns_is_refused_naming_the_re_run(tmp_path):
    """Protects the end of the backward-compatibility branches: a faithfulness.csv without the columns the
    current rule writes (recovery, its unclipped mean, the level, the positions: made by an earlier rule version; the
    shipped SmolLM2 files and a fresh embedded one have them all) is one error naming the re-run when the step reads
    it, not a chart that falls back to the share and a 95% level."""
    folder = results.model_folder(tmp_path, "embedded")
    results.write_step(folder, "faithfulness", {"faithfulness.csv": _old_frame()}, {"parameters": {"model": "embedded"}},
                 model_name="embedded")
    with pytest.raises(ResultsError, match=r"lacks recovery, .*positions \(written by an earlier rule version\): "
                                             "re-run python -m arithmech faithfulness --overwrite"):
        faithfulness.read(folder, Faithfulness(results=str(tmp_path)))
