"""The accounts step's Result: the files ``python -m arithmech accounts`` writes in ``<results>/<model>/accounts/``,
read back and typed (:func:`read`), the one reader of them (the page and the other wings take a :class:`Result`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from arithmech.accounts.config import Accounts as Config
from arithmech.core import results

FILES = (
    "signatures.json",
    "neurons.csv",
    "maps.csv",
    "faithfulness.csv",
    "parity.csv",
    "removal.csv",
    "probe.csv",
    "counterfactual.csv",
)


def folder_of(config: Config) -> Path:
    """``<results>/<model>/accounts/``."""
    return results.model_folder(config.results, config.model_name) / "accounts"


@dataclass(frozen=True)
class Result:
    """The step's files (:func:`read`): ``signatures`` (``signatures.json``), and one DataFrame per CSV:
    ``neurons``, ``maps``, ``faithfulness``, ``parity``, ``removal``, ``probe``, ``counterfactual``; ``config``."""

    config: Config
    signatures: dict
    neurons: pd.DataFrame
    maps: pd.DataFrame
    faithfulness: pd.DataFrame
    parity: pd.DataFrame
    removal: pd.DataFrame
    probe: pd.DataFrame
    counterfactual: pd.DataFrame


def read(folder: str | Path, config: Config) -> Result:
    """The files of ``folder`` (``<model>/accounts/``) as a :class:`Result`."""
    f = Path(folder)
    if not (f / "signatures.json").exists():
        raise results.ResultsError(f"{f}/signatures.json is missing: run python -m arithmech accounts")
    csv = {
        n: pd.read_csv(f / n, dtype={"neuron": str}) if (f / n).stat().st_size > 1 else pd.DataFrame()
        for n in FILES[1:]
    }
    return Result(config, json.loads((f / "signatures.json").read_text()), *(csv[n] for n in FILES[1:]))


def stored(config: Config) -> Result | None:
    """The files the step wrote for ``config``'s model (:func:`folder_of`), read by :func:`read`; ``None`` where it
    wrote none."""
    folder = folder_of(config)
    return read(folder, config) if (folder / "signatures.json").exists() else None


def stored_signatures(config: Config) -> dict | None:
    """``signatures.json`` of ``config``'s model alone (what a chapter checks before it reuses the files), or
    ``None`` where the step wrote none."""
    f = folder_of(config) / "signatures.json"
    return json.loads(f.read_text()) if f.exists() else None
