"""The accounts step's config (``python -m arithmech accounts``) and its chapter's (``book/accounts.md``).

Every value is checked against its bounds when the config is built, before any model loads. The bounds follow the
project's (:mod:`arithmech.pipeline.config_base`); the defaults are the toy's scale, the SmolLM2 run's are in the
commit that shipped its results (and in ``signatures.json``'s ``command``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from arithmech.core.config import Config, option
from arithmech.core.inputs import DTYPES, check_device, check_model
from arithmech.data.templates import TWO_DIGIT
from arithmech.pipeline.config_base import (
    MAX_BATCH,
    MAX_BOOT,
    MAX_ORDERS,
    MAX_PAIRS,
    MAX_SEEDS,
    MAX_SHOTS,
    MAX_THREADS,
    ModelStep,
)

MAX_LAYERS = 8  # flagged MLP layers studied: each adds its width to the clean pass's gradients
MAX_PERM = 2_000  # permutations of a null (grid cells, residue labels)
TEMPLATE_SETS = ("all", "fig8")  # Fig. 8 + Fig. 10 addition forms (21), or the nine Fig. 8 forms
TWO_DIGIT_TWINS = ("none", *(t.id for t in TWO_DIGIT if t.op == "addition"))  # rule D1's grid: one of these
TWO_DIGIT_CELLS = 90 * 90  # every (a, b) with a, b in 10..99


@dataclass(frozen=True)
class Accounts(ModelStep):
    """Three accounts on one testbed: an operand-grid neuron atlas, Fourier tests, result-preserving patching."""

    templates: str = option(
        "all", "the grid's addition templates: all (Fig. 8 + Fig. 10) or fig8", choices=TEMPLATE_SETS
    )
    shots: int = option(
        -1, "solved examples before each prompt (-1: identify's, from run.json)", low=-1, high=MAX_SHOTS
    )
    max_layers: int = option(
        3, "flagged MLP layers studied (identify's key MLPs, then by effect)", low=1, high=MAX_LAYERS
    )
    top_k: int = option(
        24, "top neurons per flagged layer (attribution) classified and ablated", low=1, high=MAX_ORDERS
    )
    n_intervene: int = option(
        256, "grid prompts the ablations and removals run on (seeded subset)", low=8, high=MAX_PAIRS
    )
    n_parity: int = option(32, "grid prompts of the attribution-versus-patching check", low=4, high=MAX_PAIRS)
    parity_neurons: int = option(16, "neurons of that check: half top, half random", low=2, high=MAX_ORDERS)
    n_cf: int = option(128, "grid prompts path-patched under each counterfactual", low=8, high=MAX_PAIRS)
    n_random: int = option(10, "random digit-logit subspaces against the periodic removal", low=2, high=MAX_SEEDS * 10)
    probe_rows: int = option(
        800, "grid prompts the residue probes are fitted on (seeded subset)", low=50, high=MAX_PAIRS
    )
    probe_layers: int = option(10, "layers probed, evenly spaced, the last included", low=1, high=MAX_ORDERS)
    two_digit: str = option(
        "none",
        "rule D1's grid: the two-digit twin (operands 10..99) of one addition template, e.g. add-1-2d; none: D1 is "
        "not testable (one-digit operands)",
        choices=TWO_DIGIT_TWINS,
    )
    two_digit_cells: int = option(
        0, "cells of that grid (0: all 8,100; else a seeded subsample, as many per a)", low=0, high=TWO_DIGIT_CELLS
    )
    helix_layers: int = option(6, "layers the helix is fitted and patched at, evenly spaced", low=1, high=MAX_ORDERS)
    n_perm: int = option(100, "permutations of each null (grid cells, residues)", low=20, high=MAX_PERM)
    n_boot: int = option(1000, "bootstrap resamples per interval (clusters: operand pairs)", low=100, high=MAX_BOOT)
    batch_size: int = option(128, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)
    threads: int = option(
        1,
        "torch intra-op threads (0: torch's default; 1 is fastest on a shared CPU)",
        low=0,
        reuse=False,
        high=MAX_THREADS,
    )


@dataclass(frozen=True)
class Chapter(Config):
    """The chapter's parameters: the toy is computed in the build, SmolLM2 read from its shipped results."""

    model_name: str = option("embedded", "the model computed in the build (toy scale)")
    shipped: tuple[str, ...] = option(("smollm2-135m",), "models whose shipped results the chapter reads")
    results: str = option("results", "results root: <results>/<model-name>/accounts/")
    seed: int = option(0, "seed of every draw", low=0, high=2**32 - 1)
    device: str = option("cpu", "where the model runs: cpu, cuda, cuda:N or mps (checked against this machine)")
    dtype: str = option("float32", "the model's weights", choices=DTYPES)
    recompute: bool = option(False, "compute the accounts step again even where its files are there")

    @classmethod
    def label(cls, name: str) -> str:
        return f"parameter {name}="

    @classmethod
    def pick(cls, namespace: dict) -> Chapter:
        return cls(**{f: namespace[f] for f in cls.__dataclass_fields__ if f in namespace})

    def check(self) -> None:
        check_model(self.model_name)
        check_device(self.device)

    def to_accounts(self, model_name: str | None = None) -> Accounts:
        """The step's config for ``model_name`` (default: the chapter's model) at the step's defaults."""
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.name in Accounts.__dataclass_fields__}
        return Accounts(**{**own, "model_name": model_name or self.model_name})
