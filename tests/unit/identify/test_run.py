"""Unit tests of ``arithmech/identify/run.py``."""
from __future__ import annotations


def test_identify_takes_the_step_config_and_checks_each_setting_before_the_model():
    """Protects identify's narrow signature: identify(model, tok, tasks, config, checkpoint, **settings) reads
    every setting from the step config (each default written once, there), and a setting given by name is
    checked as the config checks it — a wrong value or an unknown name fails before the model is touched
    (``model=None`` here), not deep inside a draw."""
    import dataclasses

    import pytest

    from arithmech.identify import pipeline as identify
    from arithmech.identify.config import Identify
    assert len(dataclasses.fields(Identify)) > 20
    with pytest.raises(ValueError, match="--n-samples 0 is below 1"):
        identify.identify(None, None, "addition", n_samples=0)
    with pytest.raises(ValueError, match="--answer-token .last.: use one of"):
        identify.identify(None, None, "addition", Identify(), answer_token="last")
    with pytest.raises(ValueError, match="--curves-for .every."):
        identify.identify(None, None, "addition", knockout_positions="both", curves_for="every")
    with pytest.raises(TypeError):
        identify.identify(None, None, "addition", answer_tokens="first")       # no such setting


def test_the_result_read_back_is_what_the_run_wrote(tmp_path, embedded_model, monkeypatch):
    """Protects identify's typed Result: :func:`read` gives back what :func:`compute` computed and wrote —
    the effects and key heads, one prompt per kept pair, the samples record — with the files a run without knockout
    or transfer does not make as ``None``, and the config it is read for; :func:`run` (the command's and
    ``ensure``'s) is ``compute`` then that Result (one return type for every step), and its summary prints what the
    command printed of the in-memory result before (kept pairs per task, key heads, the folder)."""
    import pandas as pd

    from arithmech.identify import run
    from arithmech.identify.config import Identify
    model, tok, _ = embedded_model
    config = Identify(results=str(tmp_path), task="addition", n_samples=12, knockout=False, transfer=False)
    res = run.compute(config, model, tok)
    back = run.read(run.folder_of(config), config)
    assert isinstance(back, run.Result) and back.config == config
    pd.testing.assert_frame_equal(back.effects, res.effects)
    assert back.key_heads == res.key_heads and back.run["samples"] == res.info
    assert len(back.prompts) == sum(map(len, res.tasks.values())) == res.info["addition"]["n_kept"]
    assert back.answer_tokens is not None and (back.knockout, back.transfer, back.heldout) == (None, None, None)
    calls = []
    monkeypatch.setattr(run, "compute", lambda c, m=None, t=None: calls.append((c, m, t)))  # the files are there
    ran = run.run(config, model, tok)
    assert calls == [(config, model, tok)] and isinstance(ran, run.Result) and ran.config == config
    pd.testing.assert_frame_equal(ran.effects, res.effects)
    kh, info = res.key_heads, res.info["addition"]
    names = ", ".join(f"{h['name']} ({h['effect']:+.1%})" for h in kh["heads"][:10]) or "none"
    assert run.summary(ran).splitlines() == [
        f"samples kept (X_r): addition {info['n_kept']}/{info['n_drawn']}",
        f"key heads of {kh['task']} (95% interval of the effect below {kh['threshold']:+.0%}): {names}",
        f"wrote identify's files and run.json to {tmp_path / 'embedded'}",
    ]
