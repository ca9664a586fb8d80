"""The beyond step's checks and its reuse of an earlier run (arithmech.steps.beyond)."""

from __future__ import annotations

import pytest

from arithmech.steps import beyond as B
from arithmech.steps.ensure import ensure


def test_check_args_refuses_non_positive():
    """Protects: run() refuses non-positive counts before reading files."""
    with pytest.raises(ValueError, match="ig_steps"):
        B.check_args(5, 0, 10)


def test_ensure_reuses_a_run_made_with_the_same_parameters_and_recomputes_otherwise(tmp_path, embedded_model,
                                                                                    monkeypatch):
    """Protects the chapter's reuse rule (the book's build budget rests on it, and it must never show a run
    made with other parameters): ``beyond.ensure`` computes once, reads back when ``run.json`` records the
    same parameters (``run`` is not called again), and recomputes when one differs."""
    from arithmech.steps import identify as I
    from arithmech.steps.identify_pipeline import identify
    model, tok, _ = embedded_model
    res = identify(model, tok, "addition", n_samples=12, seed=0, knockout=False, transfer=False, prob=False)
    I.write_results(res, tmp_path / "embedded", model_name="embedded")
    config = B.Config(model_name="embedded", results=str(tmp_path), receivers=2, ig_steps=2, n_samples=6, seed=0,
                      n_misses=1)
    first = ensure(config)
    assert first.summary["n_samples"] == 6 and first.n_layers == model.config.num_hidden_layers
    calls = []
    real = B.run
    monkeypatch.setattr(B, "run", lambda c: calls.append(c) or real(c))
    again = ensure(config)
    assert calls == [] and again.eap.equals(first.eap) and again.config == config
    other = ensure(config.replace(ig_steps=3))
    assert len(calls) == 1 and other.summary["ig_steps"] == 3


def test_the_result_read_back_is_what_the_run_wrote(tmp_path, embedded_model, monkeypatch):
    """Protects beyond's typed Result (issue #42): :func:`run` returns, read back from its files, the frames and the
    summary it computed (same values, same columns), the model and its layers, and the config; :func:`summary`
    prints it."""
    import pandas as pd

    from arithmech.steps import identify as I
    model, tok, _ = embedded_model
    res = I.identify(model, tok, "addition", n_samples=12, seed=0, knockout=False, transfer=False, prob=False)
    I.write_results(res, tmp_path / "embedded", model_name="embedded")
    config = B.Config(model_name="embedded", results=str(tmp_path), receivers=2, ig_steps=2, n_samples=6, n_misses=1)
    computed, real = [], B.beyond
    monkeypatch.setattr(B, "beyond", lambda *a: computed.append(real(*a)) or computed[-1])
    back = B.run(config)
    (out,) = computed
    assert isinstance(back, B.Result) and back.config == config and back.model == "embedded"
    pd.testing.assert_frame_equal(back.eap, out["eap"])
    pd.testing.assert_frame_equal(back.upstream, out["upstream"])
    assert back.summary == {**out["summary"], "operations": "all"}
    assert back.n_layers == model.config.num_hidden_layers
    assert B.summary(back).endswith(f"wrote eap.csv, upstream.csv to {tmp_path / 'embedded'}")
