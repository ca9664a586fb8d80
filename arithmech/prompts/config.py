"""The configs of the Data chapter's steps: accuracy per template (:class:`Accuracy`) and how many solved examples
before a prompt (:class:`Shots`), every default written once (:mod:`arithmech.core.config`); importing it does not
import torch."""

from __future__ import annotations

from dataclasses import dataclass

from arithmech.core.config import option
from arithmech.core.estimate import Estimate, Shape
from arithmech.data.draw import Draw
from arithmech.identify.config import Identify
from arithmech.pipeline import memory
from arithmech.pipeline.config_base import (
    MAX_BATCH,
    MAX_PER_TEMPLATE,
    MAX_SHOTS,
    ModelStep,
    same_as,
)


@dataclass(frozen=True)
class Accuracy(ModelStep):
    """Answer-token accuracy and p({C}) per template, with Wilson intervals (accuracy_by_template.csv)."""

    n_per_template: int = option(16, "prompts drawn per template", low=1, high=MAX_PER_TEMPLATE)
    answer_token: str = same_as(Identify, "answer_token")  # the token identify measures is the one scored here

    def to_draw(self) -> Draw:
        """Zero-shot pairs of this config's answer token (:class:`arithmech.data.draw.Draw`)."""
        return Draw(self.answer_token, 0, 1)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.pipeline.memory.accuracy`)."""
        return memory.accuracy(shape, self, **known)


@dataclass(frozen=True)
class Shots(ModelStep):
    """The yield of identify's prompts for each number of solved examples before them, and the K a rule picks
    from the yield alone (arithmech.steps.shots; shots.csv)."""

    grid: tuple[int, ...] = option((0, 2, 4, 8), "numbers of solved examples compared", low=0, high=MAX_SHOTS)
    n_per_template: int = option(
        12, "validation prompts drawn per template and K (a seed of their own)", low=1, high=MAX_PER_TEMPLATE
    )
    answer_token: str = same_as(Identify, "answer_token")
    example_sets: int = same_as(Identify, "example_sets")
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)

    def check(self) -> None:
        super().check()
        if list(self.grid) != sorted(set(self.grid)):
            raise ValueError(f"--grid {','.join(map(str, self.grid))}: expected distinct values in increasing order")

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.pipeline.memory.shots`)."""
        return memory.shots(shape, self, **known)
