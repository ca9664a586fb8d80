"""The planted-score step (arithmech/planted/run.py): deterministic files and the Result's round trip."""
from __future__ import annotations

import pandas as pd
import pytest

from arithmech.core.names import PLANTED_DIR
from arithmech.planted import run
from arithmech.planted.config import PlantedScore


@pytest.mark.skipif(not (PLANTED_DIR / "model.safetensors").exists(), reason="no shipped planted model")
def test_the_step_writes_the_same_bytes_twice_and_reads_them_back(tmp_path):
    """Protects determinism and the Result's round trip: two runs with one seed write byte-identical files, every
    criterion gets a verdict, and Result.save then Result.load gives the same tables and scores."""
    c = PlantedScore(results=str(tmp_path / "a"), n_samples=48, n_per_template=2, n_random=3, n_boot=50,
                     n_resamples=20, ig_steps=2)
    a = run.run(c)
    b = run.run(c.replace(results=str(tmp_path / "b")))
    for name in run.FILES:
        assert (run.folder_of(a.config) / name).read_bytes() == (run.folder_of(b.config) / name).read_bytes(), name
    assert set(a.scores["verdicts"]) == {"identify-paper", "identify-share", "eap", "eap-ig", "knockout-heads",
                                         "knockout-planted", "knockout-random"}
    again = run.Result.load(a.save(tmp_path / "copy"), c)
    pd.testing.assert_frame_equal(again.methods, a.methods)
    assert again.scores == a.scores
