"""The beyond step's checks and its reuse of an earlier run (arithmech.circuits.beyond)."""

from __future__ import annotations

import pytest

from arithmech.circuits import beyond
from arithmech.pipeline.ensure import ensure


def test_check_args_refuses_non_positive():
    """Protects: run() refuses non-positive counts before reading files."""
    with pytest.raises(ValueError, match="ig_steps"):
        beyond.check_args(5, 0, 10)


def test_ensure_reuses_a_run_made_with_the_same_parameters_and_recomputes_otherwise(tmp_path, embedded_model,
                                                                                    monkeypatch):
    """Protects the chapter's reuse rule (the book's build budget rests on it, and it must never show a run
    made with other parameters): ``beyond.ensure`` computes once, reads back when ``run.json`` records the
    same parameters (``run`` is not called again), and recomputes when one differs."""
    from arithmech.identify import run
    from arithmech.identify.pipeline import identify
    model, tok, _ = embedded_model
    res = identify(model, tok, "addition", n_samples=12, seed=0, knockout=False, transfer=False, prob=False)
    run.write_results(res, tmp_path / "embedded", model_name="embedded")
    config = beyond.Config(model_name="embedded", results=str(tmp_path), receivers=2, ig_steps=2, n_samples=6, seed=0,
                      n_misses=1)
    first = ensure(config)
    assert first.summary["n_samples"] == 6 and first.n_layers == model.config.num_hidden_layers
    calls = []
    real = beyond.run
    monkeypatch.setattr(beyond, "run", lambda c: calls.append(c) or real(c))
    again = ensure(config)
    assert calls == [] and again.eap.equals(first.eap) and again.config == config
    other = ensure(config.replace(ig_steps=3))
    assert len(calls) == 1 and other.summary["ig_steps"] == 3


def test_the_result_read_back_is_what_the_run_wrote(tmp_path, embedded_model, monkeypatch):
    """Protects beyond's typed Result: :func:`run` returns, read back from its files, the frames and the
    summary it computed (same values, same columns), the model and its layers, and the config; :func:`summary`
    prints it."""
    import pandas as pd

    from arithmech.identify import run
    model, tok, _ = embedded_model
    res = run.identify(model, tok, "addition", n_samples=12, seed=0, knockout=False, transfer=False, prob=False)
    run.write_results(res, tmp_path / "embedded", model_name="embedded")
    config = beyond.Config(model_name="embedded", results=str(tmp_path), receivers=2, ig_steps=2, n_samples=6, n_misses=1)
    computed, real = [], beyond.beyond
    monkeypatch.setattr(beyond, "beyond", lambda *a: computed.append(real(*a)) or computed[-1])
    back = beyond.run(config)
    (out,) = computed
    assert isinstance(back, beyond.Result) and back.config == config and back.model == "embedded"
    pd.testing.assert_frame_equal(back.eap, out["eap"])
    pd.testing.assert_frame_equal(back.upstream, out["upstream"])
    assert back.summary == {**out["summary"], "operations": "all"}
    assert back.n_layers == model.config.num_hidden_layers
    assert beyond.summary(back).endswith(f"wrote eap.csv, upstream.csv to {tmp_path / 'embedded'}")


def test_a_record_made_before_the_spearman_intervals_is_refused_naming_the_re_run(tmp_path):
    """Protects the end of the backward-compatibility branch: a beyond record without the Spearman
    intervals (made before they were measured; the shipped SmolLM2 record and a fresh embedded one have them) is one
    error naming the re-run when read, not a table that says "not measured"."""
    import pandas as pd

    from arithmech.core import results
    from arithmech.core.safe_read import ResultsError
    eap = pd.DataFrame({"layer": [0], "head": ["0"], "exact": [-0.1], "eap": [-0.1], "eap_ig": [-0.1], "n": [4]})
    up = pd.DataFrame({"receiver": ["1.0"], "position": ["END"], "path": ["q"], "sender": ["0.0"], "effect": [-0.1]})
    old = {m: {"spearman_all": 0.9, "spearman_heads": 0.9} for m in ("eap", "eap_ig")}
    results.write_step(tmp_path, "beyond", {"eap.csv": eap, "upstream.csv": up},
                 {"parameters": {"model": "embedded"}, "summary": old})
    with pytest.raises(ResultsError, match="no Spearman interval of eap, eap_ig .*re-run python -m arithmech beyond"):
        beyond.read(tmp_path, beyond.Config())
    new = {m: {**v, "spearman_all_lo": 0.8, "spearman_all_hi": 0.95} for m, v in old.items()}
    results.write_step(tmp_path, "beyond", {"eap.csv": eap, "upstream.csv": up},
                 {"parameters": {"model": "embedded"}, "summary": new})
    assert beyond.read(tmp_path, beyond.Config()).summary == new
