"""Unit tests of ``arithmech/identify/counterfactuals.py``: its typed Result, read back from the files a run writes."""
from __future__ import annotations

from arithmech.core import results
from arithmech.identify import counterfactuals
from arithmech.identify.config import Counterfactuals


def test_the_result_read_back_is_the_overlap_the_run_wrote(tmp_path):
    """Protects the step's typed Result: the overlap written where a run writes it (``counterfactuals/``
    of the model's folder, :func:`folder_of`) is read back whole, with the config, and summarised from it."""
    config = Counterfactuals(results=str(tmp_path), task="subtraction")
    overlap = {"a": ["0.1", "1.0"], "b": ["1.0"], "shared": ["1.0"], "top": 10, "by_head": []}
    folder = counterfactuals.folder_of(config)
    assert folder == results.model_folder(tmp_path, "embedded") / "counterfactuals"
    results.write_step(folder, "counterfactuals", {"counterfactual_overlap.json": overlap}, {"operand_task": "subtraction"})
    back = counterfactuals.read(folder, config)
    assert isinstance(back, counterfactuals.Result) and back.overlap == overlap and back.config == config
    assert counterfactuals.summary(back) == '{"a": ["0.1", "1.0"], "b": ["1.0"], "shared": ["1.0"]}'


def test_ensure_reuses_a_run_made_with_the_same_config(tmp_path, monkeypatch):
    """Protects the step's reuse: ``run.json`` records the run's parameters
    (:meth:`~arithmech.pipeline.config_base.ModelStep.recorded`, the config's reuse key), so
    :func:`arithmech.pipeline.ensure.ensure` of the same config twice computes once and reads the files back the
    second time (before, the record had no parameters and every call recomputed); a config that changes a parameter
    computes again. The model and both identify runs are stand-ins: this is the record, not the method."""
    from types import SimpleNamespace

    from arithmech.pipeline.ensure import ensure, is_made

    runs = []
    monkeypatch.setattr(counterfactuals, "load_model", lambda *a, **k: (None, None, None))
    monkeypatch.setattr(counterfactuals, "identify", lambda *a, **k: runs.append(k["n_samples"]) or SimpleNamespace(effects=None))
    monkeypatch.setattr(counterfactuals, "operand_identify", lambda *a, **k: SimpleNamespace(effects=None))
    monkeypatch.setattr(counterfactuals, "write_results", lambda *a, **k: None)
    overlap = {"a": ["0.1"], "b": ["0.1"], "shared": ["0.1"], "top": 10, "by_head": []}
    monkeypatch.setattr(counterfactuals, "counterfactual_overlap", lambda *a: overlap)
    config = Counterfactuals(results=str(tmp_path), n_samples=8)
    assert not is_made(config)
    first = ensure(config)
    assert runs == [8] and is_made(config) and first.overlap == overlap and first.config == config
    written = results.read_run(counterfactuals.folder_of(config))["steps"]["counterfactuals"]["parameters"]
    assert written == config.recorded() == {"model": "embedded", "seed": 0, "device": "cpu", "dtype": "float32",
                                             "task": "addition", "n_samples": 8}
    second = ensure(config)
    assert runs == [8] and second.overlap == overlap and second.config == config      # read back, not recomputed
    ensure(config.replace(n_samples=9))
    assert runs == [8, 9]
