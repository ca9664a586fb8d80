"""Unit tests of ``arithmech/steps/counterfactuals.py``: its typed Result, read back from the files a run writes."""
from __future__ import annotations

from arithmech.core import results as R
from arithmech.steps import counterfactuals as CF
from arithmech.steps.config import Counterfactuals


def test_the_result_read_back_is_the_overlap_the_run_wrote(tmp_path):
    """Protects the step's typed Result (issue #42): the overlap written where a run writes it (``counterfactuals/``
    of the model's folder, :func:`folder_of`) is read back whole, with the config, and summarised from it."""
    config = Counterfactuals(results=str(tmp_path), task="subtraction")
    overlap = {"a": ["0.1", "1.0"], "b": ["1.0"], "shared": ["1.0"], "top": 10, "by_head": []}
    folder = CF.folder_of(config)
    assert folder == R.model_folder(tmp_path, "embedded") / "counterfactuals"
    R.write_step(folder, "counterfactuals", {"counterfactual_overlap.json": overlap}, {"operand_task": "subtraction"})
    back = CF.read(folder, config)
    assert isinstance(back, CF.Result) and back.overlap == overlap and back.config == config
    assert CF.summary(back) == '{"a": ["0.1", "1.0"], "b": ["1.0"], "shared": ["1.0"]}'
