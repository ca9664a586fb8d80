"""The one way to make or reuse a step's files: :func:`ensure` a config (any step of
:data:`arithmech.pipeline.registry.STEPS`), read back from the files a run made with it, or run first.

A step's files are reused when ``run.json`` records a run made with the same parameters (the module's
``recorded(config)``, else the config's reuse key), from unchanged inputs, in the current formats
(:func:`arithmech.core.results.made_with`); otherwise the step runs (``run(config, **loaded)``) and its files are
read back (``read(folder, config)``): :func:`ensure` returns the step's typed ``Result``, which carries the config.
The module protocol is :mod:`arithmech.pipeline.registry`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from arithmech.analyze import config as analyze_config
from arithmech.circuits import config as circuits_config
from arithmech.core import results
from arithmech.identify import config as identify_config
from arithmech.identify.result import read_ranking
from arithmech.pipeline.registry import step_of
from arithmech.prompts import config as prompts_config

if TYPE_CHECKING:  # the Result types only: a step's module (and torch) is imported when the step runs
    from arithmech.analyze.result import AnalyzeResult
    from arithmech.circuits.result import BeyondResult, FaithfulnessResult
    from arithmech.identify import counterfactuals
    from arithmech.identify import result as identify
    from arithmech.steps import accuracy, shots


def folder_of(config: Any) -> Path:
    """Where a run of ``config`` writes and a reuse reads: the module's ``folder_of`` where it has one (identify's
    ``--out``), else the model's folder under ``config.results`` (:func:`arithmech.core.results.model_folder`)."""
    mod = step_of(config).load()
    if hasattr(mod, "folder_of"):
        return mod.folder_of(config)
    return results.model_folder(config.results, config.model_name)


def recorded(config: Any) -> dict:
    """What ``run.json`` records of a run made with ``config``: the module's ``recorded`` where it has one, else the
    config's reuse key with ``model_name`` recorded as ``model``."""
    mod = step_of(config).load()
    if hasattr(mod, "recorded"):
        return mod.recorded(config)
    return config.recorded()


def is_made(config: Any) -> bool:
    """Whether the step's files in :func:`folder_of` ``config`` were made with ``config`` (its recorded parameters,
    unchanged inputs, current formats: :func:`arithmech.core.results.made_with`)."""
    s = step_of(config)
    return results.made_with(folder_of(config), s.record, recorded(config))


@overload
def ensure(
    config: identify_config.Identify, recompute: bool = ..., upstream: Any = ..., **loaded: Any
) -> identify.Result: ...
@overload
def ensure(
    config: analyze_config.Analyze, recompute: bool = ..., upstream: Any = ..., **loaded: Any
) -> AnalyzeResult: ...
@overload
def ensure(
    config: circuits_config.Beyond, recompute: bool = ..., upstream: Any = ..., **loaded: Any
) -> BeyondResult: ...
@overload
def ensure(
    config: identify_config.Stability, recompute: bool = ..., upstream: Any = ..., **loaded: Any
) -> identify.StabilityResult: ...
@overload
def ensure(
    config: circuits_config.Faithfulness, recompute: bool = ..., upstream: Any = ..., **loaded: Any
) -> FaithfulnessResult: ...
@overload
def ensure(
    config: prompts_config.Accuracy, recompute: bool = ..., upstream: Any = ..., **loaded: Any
) -> accuracy.Result: ...
@overload
def ensure(config: prompts_config.Shots, recompute: bool = ..., upstream: Any = ..., **loaded: Any) -> shots.Result: ...
@overload
def ensure(
    config: identify_config.Counterfactuals, recompute: bool = ..., upstream: Any = ..., **loaded: Any
) -> counterfactuals.Result: ...


def ensure(config: Any, recompute: bool = False, upstream: Any = None, **loaded) -> Any:
    """The step's ``Result`` for ``config`` (its module's, carrying ``config``), read from its files when they were
    made with ``config`` (:func:`is_made`), else made first by its ``run`` (``loaded``: ``model``/``tok`` already in
    memory). A file the step reads from another step (its module's ``needs``) is made first where it is absent, by
    ``upstream`` (a config of that step) or the module's default one. ``recompute``: run even when the files could be
    reused."""
    s = step_of(config)
    mod, folder = s.load(), folder_of(config)
    if hasattr(mod, "needs"):
        needed, default = mod.needs(config)
        if not results.exists(folder, needed):
            ensure(upstream or default)
    if recompute or not is_made(config):
        mod.run(config.replace(overwrite=True), **loaded)
    return mod.read(folder, config)


def ensure_ranking(
    model_name: str,
    root: str | Path = "results",
    n_samples: int = 64,
    seed: int = 0,
    device: str = "cpu",
    dtype: str = "float32",
) -> tuple[list[tuple[int, int]], list[int]]:
    """identify's ranking of the model's folder under ``root`` (:func:`arithmech.identify.result.read_ranking`: heads
    and MLP layers, best first), running identify first (path patching only, ``n_samples`` pairs per task) where the
    folder has no ``key_heads.json``: a chapter recomputes what is missing."""
    folder = results.model_folder(root, model_name)
    if not results.exists(folder, "key_heads.json"):
        config = identify_config.Identify(
            model_name=model_name,
            n_samples=n_samples,
            seed=seed,
            results=str(folder),
            device=device,
            dtype=dtype,
            knockout=False,
            transfer=False,
        )
        step_of(config).load().run(config)
    return read_ranking(folder)
