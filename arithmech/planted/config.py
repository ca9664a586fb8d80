"""The planted-score step's config (``python -m arithmech planted-score``) and its chapter's (``book/planted.md``).

Every value is checked when the config is built, before any model loads (importing this module does not import
torch): a model without a planted circuit, or float16 (the planted model's fixed attention terms overflow it), is
refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from arithmech.core.config import Config, option
from arithmech.core.inputs import DTYPES, check_device
from arithmech.pipeline.config_base import (
    MAX_BATCH,
    MAX_BOOT,
    MAX_IG_STEPS,
    MAX_ORDERS,
    MAX_PAIRS,
    MAX_THREADS,
    ModelStep,
)

CARD = "# arithmech planted model"  # the first line of every model card train-planted writes


def is_planted(model_name: str) -> bool:
    """Whether ``model_name`` names a model ``train-planted`` made: the shipped alias ``planted``, or a folder whose
    model card is the planted model's (another seed). Only such a model has a ground truth to score against."""
    card = Path(model_name) / "README.md"
    return model_name == "planted" or (card.is_file() and card.read_text()[: len(CARD)] == CARD)


@dataclass(frozen=True)
class PlantedScore(ModelStep):
    """Score identify (both rules), EAP, EAP-IG and the knockout against the planted model's circuit."""

    model_name: str = option("planted", "planted, or a folder made by python -m arithmech train-planted")
    n_samples: int = option(
        256, "identify's pairs drawn per operation (X_r keeps those answered right)", low=1, high=MAX_PAIRS
    )
    n_per_template: int = option(20, "knockout prompts per Fig. 8 template (operands 1..9)", low=1, high=MAX_PAIRS)
    n_random: int = option(20, "random sets of non-planted heads, each the movers' size", low=1, high=MAX_ORDERS)
    ig_steps: int = option(8, "EAP-IG: points on the straight path from X_r to X_c", low=1, high=MAX_IG_STEPS)
    n_boot: int = option(1000, "bootstrap resamples of each rule's own interval (identify's)", low=1, high=MAX_BOOT)
    n_resamples: int = option(
        200, "resamples of the problem clusters behind precision's and recall's intervals", low=20, high=MAX_BOOT
    )
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)
    threads: int = option(
        1, "torch intra-op threads (the files are byte-identical for one seed)", low=1, reuse=False, high=MAX_THREADS
    )

    def check(self) -> None:
        super().check()
        if not is_planted(self.model_name):
            raise ValueError(
                f"--model {self.model_name!r} has no planted circuit to score against: give planted or a folder "
                "made by python -m arithmech train-planted"
            )
        if self.dtype == "float16":
            raise ValueError("--dtype float16: the planted model's fixed attention terms overflow float16")


@dataclass(frozen=True)
class Chapter(Config):
    """The Planted chapter's parameters: it reads the shipped scores, or computes them (about a minute on 2 cores)
    where they are missing, were made with other parameters or under other rules."""

    results: str = option("results", "results root: <results>/planted/planted_score/")
    seed: int = option(0, "seed of every draw", low=0, high=2**32 - 1)
    device: str = option("cpu", "where the model runs: cpu, cuda, cuda:N or mps (checked against this machine)")
    dtype: str = option("float32", "the model's weights (float16 overflows the planted terms)", choices=DTYPES)
    recompute: bool = option(False, "compute the scores again even where their files are there")

    @classmethod
    def label(cls, name: str) -> str:
        return f"parameter {name}="

    @classmethod
    def pick(cls, namespace: dict) -> Chapter:
        return cls(**{f: namespace[f] for f in cls.__dataclass_fields__ if f in namespace})

    def check(self) -> None:
        check_device(self.device)
        if self.dtype == "float16":
            raise ValueError("parameter dtype='float16': the planted model's fixed terms overflow float16")

    def to_score(self) -> PlantedScore:
        """The step's config at its defaults, with the chapter's root, seed, device and dtype."""
        return PlantedScore(results=self.results, seed=self.seed, device=self.device, dtype=self.dtype)
