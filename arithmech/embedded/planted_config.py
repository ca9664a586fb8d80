"""The config of ``python -m arithmech train-planted`` (:mod:`arithmech.embedded.planted`). Importing this module
does not import torch."""

from __future__ import annotations

from dataclasses import dataclass

from arithmech.core.config import Config, option

MAX_STEPS = 100_000
MAX_BATCH = 4_096


@dataclass(frozen=True)
class TrainPlanted(Config):
    """Train the planted model, whose arithmetic circuit is fixed in its weights (deterministic, ~15 min on 1 core)."""

    out: str | None = option(None, "output folder (default: the package's embedded/planted_model/)")
    steps: int = option(1800, "optimizer steps", low=1, high=MAX_STEPS)
    batch_size: int = option(128, "sequences per step", low=1, high=MAX_BATCH)
    seed: int = option(0, "seed of the data and the initialisation", low=0, high=2**32 - 1)
    threads: int = option(
        1, "torch threads (the weights are byte-identical for one seed and thread count)", low=1, high=1024
    )
    overwrite: bool = option(False, "replace the model files in a non-empty --out (other files there are kept)")
