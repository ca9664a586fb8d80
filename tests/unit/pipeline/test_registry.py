"""The step registry (``arithmech/pipeline/registry.py``): one :class:`Step` per step, the command line
generated from it, every module answering the registry's protocol."""
from __future__ import annotations

import dataclasses

import pytest

from arithmech import cli
from arithmech.circuits import config as circuits_config
from arithmech.identify import config as identify_config
from arithmech.pipeline.registry import STEPS, step_of
from arithmech.report.build import config as book_config


def test_every_step_is_a_command_with_its_configs_fields():
    """Protects the CLI's generation: each step's command exists, takes its config class, and its flags are exactly
    the config's fields (plus --model for --model-name) — nothing hand-written beside the config."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    for name, step in STEPS.items():
        assert cli.COMMANDS[name].config is step.config
        dests = {a.dest for a in sub[name]._actions} - {"help", "func"}
        assert dests == {f.name for f in dataclasses.fields(step.config)}, name


def test_every_module_answers_the_protocol():
    """Protects the registry's promise: each step's module has ``run`` (the one name its command and ``ensure`` call) and a ``summary``;
    every step the book reuses (:func:`arithmech.pipeline.ensure.ensure`) has ``read`` and a frozen ``Result`` that
    carries its ``config``; a step's config finds its step, and a config of no step is refused by name."""
    for step in STEPS.values():
        mod = step.load()
        assert callable(mod.run) and callable(mod.summary), step.name
        assert step_of(step.config.__new__(step.config)) is step
    ensured = ("identify", "analyze", "beyond", "stability", "faithfulness", "accuracy-by-template", "shots",
               "counterfactuals")
    for name in ensured:
        mod = STEPS[name].load()
        assert callable(mod.read), name
        fields = {f.name: f for f in dataclasses.fields(mod.Result)}
        assert mod.Result.__dataclass_params__.frozen and fields["config"].type in ("Config", STEPS[name].config, STEPS[name].config.__name__), name
    with pytest.raises(TypeError, match="Book configures no step"):
        step_of(book_config.Book())


def test_ensure_makes_what_a_step_reads_first(tmp_path, monkeypatch):
    """Protects ``needs``: ensuring beyond in a folder without identify's files runs identify first (with the config
    given as ``upstream``), before beyond's own run."""
    from arithmech.circuits import beyond
    from arithmech.identify import run as identify
    from arithmech.pipeline.ensure import ensure

    calls = []

    class Stop(Exception):
        pass

    def fake_identify(config, **loaded):
        calls.append(("identify", config.n_samples))
        raise Stop

    monkeypatch.setattr(identify, "run", fake_identify)
    monkeypatch.setattr(beyond, "run", lambda c, **k: calls.append(("beyond", None)))
    with pytest.raises(Stop):
        ensure(circuits_config.Beyond(results=str(tmp_path)), upstream=identify_config.Identify(results=str(tmp_path), n_samples=7))
    assert calls == [("identify", 7)]
