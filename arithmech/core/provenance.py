"""What every step records beside its files: the library versions and the process's peak memory."""

from __future__ import annotations

import importlib.metadata
import platform

import pandas as pd
import torch
import transformers

from arithmech.core.memory import peak_rss_bytes


def versions() -> dict:
    """Library versions recorded with every step's record."""

    try:
        own = importlib.metadata.version("arithmech")
    except importlib.metadata.PackageNotFoundError:
        own = "not installed"
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "pandas": pd.__version__,
        "arithmech": own,
    }


def peak_memory() -> dict:
    """This process's peak resident memory so far (:mod:`arithmech.core.memory`), for a step's record."""
    return {"peak_rss_bytes": peak_rss_bytes(), "cuda_peak_bytes": None}
