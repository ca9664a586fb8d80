"""The circuit steps' results read back: beyond's (:class:`BeyondResult`, :func:`read_beyond`) and faithfulness's
(:class:`FaithfulnessResult`, :func:`read_faithfulness`), the one reader of their files; each carries the config it
was read for. The pages and the command line take these, never a folder. :class:`FaithfulnessFiles`: faithfulness's file
without the config that made it, read on first use and not refused for an earlier rule version (what the claims
read, :class:`arithmech.claims.evidence.Context`, whose rule says why such a file decides nothing)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from arithmech.circuits.config import Beyond, Faithfulness
from arithmech.core import results
from arithmech.core.inputs import quoted
from arithmech.core.safe_read import ResultsError
from arithmech.methods.faithfulness import COLUMNS

BEYOND_FILES = ("eap.csv", "upstream.csv")
"""Beyond's files (its summary is the ``beyond`` record of ``run.json``)."""

FAITHFULNESS_FILES = ("faithfulness.csv",)
"""Faithfulness's file (its rule's outcome is the ``faithfulness`` record of ``run.json``)."""


@dataclass(frozen=True)
class BeyondResult:
    """Beyond's files as a run made with ``config`` wrote them (:func:`read_beyond`; what
    :func:`arithmech.pipeline.ensure.ensure` returns for a :class:`~arithmech.circuits.config.Beyond` config), each
    read and checked:

    * ``model`` — the model the run recorded (the ``beyond`` record of ``run.json``, ``parameters.model``);
    * ``summary`` — that record's ``summary``: agreement of EAP and EAP-IG with exact patching, the receivers, the
      methods' seconds, the samples;
    * ``eap`` — ``eap.csv``: exact, EAP and EAP-IG of every head and MLP;
    * ``upstream`` — ``upstream.csv``: every earlier sender's effect through the receivers;
    * ``n_layers`` — the model's layers (``eap.csv``'s largest layer + 1);
    * ``config`` — the config the files were made with (or reused for)."""

    config: Beyond
    model: str
    summary: dict
    eap: pd.DataFrame
    upstream: pd.DataFrame
    n_layers: int


def read_beyond(folder: str | Path, config: Beyond) -> BeyondResult:
    """Beyond's files in ``folder`` (checked) and its ``run.json`` record's summary, as the :class:`BeyondResult` of a
    run made with ``config``."""
    eap = results.read(folder, "eap.csv")
    rec = results.read_run(folder)["steps"].get("beyond")
    if rec is None:
        raise FileNotFoundError(
            f"{quoted(folder)} has no beyond step in run.json: run `python -m arithmech beyond` first"
        )
    if old := [m for m in ("eap", "eap_ig") if "spearman_all_lo" not in rec["summary"].get(m, {})]:
        raise ResultsError(
            f"{quoted(Path(folder) / results.RUN)}'s beyond record has no Spearman interval of {', '.join(old)} "
            "(made before it was measured): re-run python -m arithmech beyond --overwrite"
        )
    return BeyondResult(
        config=config,
        model=rec["parameters"]["model"],
        summary=rec["summary"],
        eap=eap,
        upstream=results.read(folder, "upstream.csv"),
        n_layers=int(eap["layer"].max()) + 1,
    )


@dataclass(frozen=True)
class FaithfulnessResult:
    """The faithfulness step's file as a run made with ``config`` wrote it (:func:`read_faithfulness`; what
    :func:`arithmech.pipeline.ensure.ensure` returns for a :class:`~arithmech.circuits.config.Faithfulness` config).
    A file without every column of :data:`arithmech.methods.faithfulness.COLUMNS` (written by an earlier rule version)
    is refused, naming the re-run (never an unasked SmolLM2 recompute inside a book build).

    * ``model`` — the model the run recorded (the ``faithfulness`` record of ``run.json``, ``parameters.model``);
    * ``frame`` — ``faithfulness.csv`` (checked): each circuit's recovery, top-n and random;
    * ``record`` — the step's ``run.json`` record (parameters, the rule's outcome, the resample tiers, seconds);
    * ``config`` — the config the file was made with (or reused for)."""

    config: Faithfulness
    model: str
    frame: pd.DataFrame
    record: dict


def read_faithfulness(folder: str | Path, config: Faithfulness) -> FaithfulnessResult:
    """``faithfulness.csv`` of ``folder`` (checked) and its ``run.json`` record, as the :class:`FaithfulnessResult` of
    a run made with ``config``."""
    rec = results.read_run(folder)["steps"]["faithfulness"]
    frame = results.read(folder, "faithfulness.csv")
    if old := [c for c in COLUMNS if c not in frame]:
        raise ResultsError(
            f"{quoted(Path(folder) / 'faithfulness.csv')} lacks {', '.join(old)} (written by an earlier rule "
            "version): re-run python -m arithmech faithfulness --overwrite"
        )
    return FaithfulnessResult(config=config, model=rec["parameters"]["model"], frame=frame, record=rec)


class FaithfulnessFiles(results.Files):
    """Faithfulness's file of a folder without the config that made it (:class:`arithmech.core.results.Files`: read and
    checked on first use, once; ``None`` where absent), named as :class:`FaithfulnessResult`'s field: what the claims'
    decider reads (a file of an earlier rule version is not refused here: the rule says it decides nothing)."""

    @property
    def frame(self) -> pd.DataFrame | None:
        """``faithfulness.csv``: each circuit's recovery, top-n and random."""
        return self.file("faithfulness.csv")
