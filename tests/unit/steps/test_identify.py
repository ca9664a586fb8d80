"""Unit tests of ``arithmech/steps/identify.py``."""
from __future__ import annotations


def test_identify_takes_the_step_config_and_checks_each_setting_before_the_model():
    """Protects issue #42's narrow signature: identify(model, tok, tasks, config, checkpoint, **settings) reads
    every setting from the step config (each default written once, there), and a setting given by name is
    checked as the config checks it — a wrong value or an unknown name fails before the model is touched
    (``model=None`` here), not deep inside a draw."""
    import dataclasses

    import pytest

    from arithmech.steps import identify_pipeline as identify
    from arithmech.steps.config import Identify
    assert len(dataclasses.fields(Identify)) > 20
    with pytest.raises(ValueError, match="--n-samples 0 is below 1"):
        identify.identify(None, None, "addition", n_samples=0)
    with pytest.raises(ValueError, match="--answer-token .last.: use one of"):
        identify.identify(None, None, "addition", Identify(), answer_token="last")
    with pytest.raises(ValueError, match="--curves-for .every."):
        identify.identify(None, None, "addition", knockout_positions="both", curves_for="every")
    with pytest.raises(TypeError):
        identify.identify(None, None, "addition", answer_tokens="first")       # no such setting
