"""The configs of the circuit steps beyond the paper: EAP and upstream patching (:class:`Beyond`), faithfulness
(:class:`Faithfulness`) and the appendices' identify on other pairs (:class:`Generalize`), every default written
once (:mod:`arithmech.core.config`); importing it does not import torch."""

from __future__ import annotations

from dataclasses import dataclass

from arithmech.analyze.config import Analyze
from arithmech.core.config import Config, option
from arithmech.core.estimate import Estimate, Shape
from arithmech.paper import KEY_THRESHOLD
from arithmech.pipeline import memory
from arithmech.pipeline.config_base import (
    MAX_BATCH,
    MAX_IG_STEPS,
    MAX_ORDERS,
    MAX_PAIRS,
    MAX_RECEIVERS,
    ModelStep,
    same_as,
)


@dataclass(frozen=True)
class Beyond(ModelStep):
    """EAP / EAP-IG against exact path patching, head→head upstream patching; reads identify's files."""

    receivers: int = option(
        5, "receivers of upstream patching: key heads, else the top k by effect", low=1, high=MAX_RECEIVERS
    )
    ig_steps: int = option(8, "EAP-IG: points on the straight path from X_r to X_c", low=1, high=MAX_IG_STEPS)
    n_samples: int = option(
        128, "reference samples (X_r) from identify's prompts.jsonl, a seeded subset", low=1, high=MAX_PAIRS
    )
    n_misses: int = option(5, "EAP's largest misses kept with their norms and MLP gates", low=0, high=MAX_ORDERS)
    operations: str = same_as(Analyze, "operations")
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.pipeline.memory.beyond`)."""
        return memory.beyond(shape, self, **known)


@dataclass(frozen=True)
class Faithfulness(ModelStep):
    """The share of the counterfactual's effect the top-n components recover together, against random circuits
    (noising with mean and resample ablation, its converse, denoising); reads identify's files."""

    n_max: int = option(
        20,
        "circuits of the top 1..N components by effect rank (heads and MLPs in one ranking); "
        "at most half the components (random circuits of N are drawn outside the top N)",
        low=1,
        high=MAX_ORDERS,
    )
    n_random: int = option(
        20,
        "random circuits of each size n, drawn outside the top n (at least 20 for a 5-95% band)",
        low=20,
        high=MAX_ORDERS,
    )
    n_samples: int = option(
        128, "evaluation-side X_r (problems never ranked on, X_c checked), drawn fresh", low=1, high=MAX_PAIRS
    )
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.pipeline.memory.faithfulness`)."""
        return memory.faithfulness(shape, self, **known)


@dataclass(frozen=True)
class Generalize(Config):
    """App. D and E: identify on other pairs (exponentiation templates, GSM8K or word problems) and the overlap
    of two runs' key heads (Table 3, Table 4); the appendices call it with a loaded model."""

    n_samples: int = option(256, "pairs drawn per dataset or template", low=1, high=MAX_PAIRS)
    seed: int = option(0, "seed of every draw", low=0, high=2**32 - 1)
    threshold: float = option(KEY_THRESHOLD, "key heads: relative logit change below this", high=-1e-9)
    top: int = option(10, "heads compared per run (Table 4)", low=1, high=MAX_ORDERS)
    n_random: int = option(
        20,
        "random head sets beside each knocked-out set of Table 4 (outside both runs' top heads)",
        low=1,
        high=MAX_ORDERS,
    )
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)
