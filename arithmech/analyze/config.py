"""Analyze's config (§4.2, §5.2): the attention of identify's key heads by token role and the MLPs' projections on
W_U, every default written once (:mod:`arithmech.core.config`); importing it does not import torch."""

from __future__ import annotations

from dataclasses import dataclass

from arithmech.core.config import option
from arithmech.core.estimate import Estimate, Shape
from arithmech.pipeline import memory
from arithmech.pipeline.config_base import (
    MAX_BATCH,
    MAX_PAIRS,
    MAX_PROMPT_CHARS,
    ModelStep,
)


@dataclass(frozen=True)
class Analyze(ModelStep):
    """Attention of the key heads by token role, MLP projections on W_U (§4.2, §5.2); reads identify's files."""

    n_samples: int = option(256, "reference samples (X_r) the averages run over (paper: 1000)", low=1, high=MAX_PAIRS)
    prompt: str = option("4 + 3 =", "prompt of the layer-by-layer top-token table (Fig. 6c)")
    operations: str = option(
        "pooled",
        "whose prompts: the operations that pass identify's control (pooled: the tasks "
        "its pooled task holds, where the key heads were ranked) or every operation (all)",
        choices=("pooled", "all"),
    )
    final_norm: bool = option(True, "project through the final norm's gain")
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)

    def check(self) -> None:
        super().check()
        if not self.prompt.strip():
            raise ValueError("--prompt '': give a prompt such as '4 + 3 ='")
        if len(self.prompt) > MAX_PROMPT_CHARS:
            raise ValueError(
                f"--prompt has {len(self.prompt):,} characters; at most {MAX_PROMPT_CHARS:,} (a prompt such "
                "as '4 + 3 =')"
            )

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.pipeline.memory.analyze`)."""
        return memory.analyze(shape, self, **known)
