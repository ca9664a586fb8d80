"""Identify's configs, with every default written once (:mod:`arithmech.core.config`): :class:`Identify` (with its
control, :data:`CONTROL_FLOOR`, and the book's scale, :data:`BOOK_SCALE`), and the two steps
that rerun it, :class:`Stability` and :class:`Counterfactuals`.

``python -m arithmech <step> --help`` lists exactly these fields, as flags of the same names; a chapter
builds its step's config from its papermill parameters; :func:`ensure`-style readers reuse a result set
made with the same :meth:`~arithmech.core.config.Config.reuse_key`. Importing this module does not
import torch, so a wrong value is refused before any model loads.

The other steps' configs sit in their wings (:mod:`arithmech.analyze.config`, :mod:`arithmech.circuits.config`,
:mod:`arithmech.prompts.config`); fine-tuning's, Table 1's and the embedded model's in
:mod:`arithmech.steps.config_training`; the bounds every value is checked against,
:class:`~arithmech.pipeline.config_base.ModelStep` and :func:`~arithmech.pipeline.config_base.same_as` in
:mod:`arithmech.pipeline.config_base`.
"""

from __future__ import annotations

from dataclasses import dataclass

from arithmech.core.config import option
from arithmech.core.estimate import Estimate, Shape
from arithmech.core.inputs import ANSWER_TOKENS, KNOCKOUT_POSITIONS
from arithmech.data.draw import Draw
from arithmech.data.pairfile import check_task
from arithmech.data.shots import EXAMPLE_SETS
from arithmech.methods.ablation.settings import KnockoutSettings
from arithmech.paper import KEY_THRESHOLD, N_BOOT
from arithmech.pipeline import memory
from arithmech.pipeline.config_base import (
    MAX_BATCH,
    MAX_BOOT,
    MAX_ORDERS,
    MAX_PAIRS,
    MAX_SEEDS,
    MAX_SHOT_SETS,
    MAX_SHOTS,
    ModelStep,
    same_as,
)


@dataclass(frozen=True)
class Identify(ModelStep):
    """Path patching of every head and MLP, key heads, knockout, transfer (paper §4.1, §5.1).

    Each task has a control, fixed before any run (:data:`CONTROL_FLOOR`): a task whose answer token can be
    guessed from what its prompts carry is inconclusive and left out of the pooled task "all"."""

    task: str = option(
        "all",
        "addition, subtraction, multiplication, division, all (those of the four that pass the control, pooled), "
        "fig8, fig10, exponentiation, or a template-pair file (.json / .jsonl)",
    )
    n_samples: int = option(256, "pairs drawn per task; X_r keeps those the model answers right", low=1, high=MAX_PAIRS)
    threshold: float = option(
        KEY_THRESHOLD,
        "key heads: the effect's whole 95% bootstrap interval below this (paper: mean below -0.05)",
        high=-1e-9,
    )
    share_threshold: float = option(
        -0.05,
        "key heads by share (beside the paper's rule): the whole 95% interval of the "
        "head's share of the counterfactual's logit-difference effect lies below -5%: it "
        "carries at least 5% of the counterfactual's effect",
        high=-1e-9,
    )
    n_boot: int = option(N_BOOT, "bootstrap resamples per interval", low=1, high=MAX_BOOT)
    bootstrap: str = option(
        "cluster",
        "what the effect intervals resample: cluster (the problems: operation and "
        "operand pair; prompts of one problem are not independent) or prompt (the rows)",
        choices=("cluster", "prompt"),
    )
    knockout_split: str = option(
        "held-out",
        "held-out: rank components on one side of the problems and knock "
        "them out on fresh X_r of the other (arithmech.data.splits); in-sample: the "
        "knockout reuses the ranking X_r",
        choices=("held-out", "in-sample"),
    )
    method: str = option(
        "fast", "path patching: fast (exact, from the END caches) or reference (literal)", choices=("fast", "reference")
    )  # arithmech.methods.patching.METHODS
    prob: bool = option(True, "also record P({C}) (a full-vocabulary softmax per patched run)")
    knockout: bool = option(True, "run the knockout curves")
    knockout_samples: int = option(
        256, "prompts per task in the knockout curves (X_r topped up with fresh X_r)", low=1, high=MAX_PAIRS
    )
    n_random: int = option(
        20, "random orders of components outside the key heads and the top k", low=1, high=MAX_ORDERS
    )
    ks: tuple[int, ...] | None = option(
        None, "numbers of heads to knock out (default: 1, 2, 4, ... up to all)", low=1, high=MAX_ORDERS
    )
    curves_for: str = option(
        "primary", "full knockout curves for the primary task only, or for each task", choices=("primary", "each")
    )
    knockout_positions: str = option(
        "end", "mean-ablate at END (where heads were patched), at every position, or both", choices=KNOCKOUT_POSITIONS
    )
    pool_size: int = option(512, "X_c per template family in the reference pool of the means", low=1, high=MAX_PAIRS)
    transfer: bool = option(True, "knock the heads out on a held-out template family (Fig. 4, Fig. 10)")
    heldout: str = option("fig10", "the template family of the transfer test", choices=("fig8", "fig10"))
    answer_token: str = option(
        "last-digit",
        "last-digit: the prompt carries the answer's leading digits; "
        "single-token: one-token answers only; first: the paper's first answer token",
        choices=ANSWER_TOKENS,
    )
    shots: int = option(
        0,
        "solved examples of mixed operations before every X_r and X_c (0: the paper's "
        "zero-shot prompts; arithmech.data.shots)",
        low=0,
        high=MAX_SHOTS,
    )
    example_sets: int = option(
        EXAMPLE_SETS,
        "sets of solved examples per template, which its prompts take in turn "
        "(1: one set for all of a template's prompts, the first scheme)",
        low=1,
        high=MAX_SHOT_SETS,
    )
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)
    out: str | None = option(None, "the model's results folder itself (default: RESULTS/<model-name>/)", reuse=False)

    def check(self) -> None:
        super().check()
        check_task(self.task)

    def to_draw(self) -> Draw:
        """How every pair of the run is drawn (:class:`arithmech.data.draw.Draw`): X_r, X_c, the knockout's
        prompts, the reference pool, the held-out family."""
        return Draw(self.answer_token, self.shots, self.example_sets)

    def knockout_settings(self) -> KnockoutSettings:
        """The knockout's settings (:class:`arithmech.methods.ablation.settings.KnockoutSettings`)."""
        return KnockoutSettings(
            samples=self.knockout_samples,
            n_random=self.n_random,
            seed=self.seed,
            ks=self.ks,
            curves_for=self.curves_for,
            positions=self.knockout_positions,
            split=self.knockout_split,
            pool_size=self.pool_size,
            batch_size=self.batch_size,
        )

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.pipeline.memory.identify`)."""
        return memory.identify(shape, self, **known)


CONTROL_FLOOR = 0.5
"""The per-task control of identify, written before any run: a task **fails** it when its conditioned floor
(:func:`arithmech.data.answer_tokens.conditioned_floor` on its X_r, point estimate) is >= 0.5 — half its
answers can be guessed from the operation, the carried digits and one operand, so a knockout down to that
level is no evidence about the calculation. A failing task's own verdicts are inconclusive and, with several
tasks, it is left out of the pooled "all" rows (effects, key heads, the knockout's "all" prompts); which and
why is recorded in ``key_heads.json`` and ``run.json`` (``control``). Where every task fails, "all" pools
them all and is inconclusive too."""

BOOK_SCALE = dict(knockout_samples=128, pool_size=128, knockout_positions="both", prob=False)
"""The book's identify scale for a 135M model on 2 cores (the SmolLM2 appendix, the Explorer and Beyond when
they make identify's files): 128 knockout prompts, a pool of 128 X_c per family, knockout at END and at every
position, no P({C}) columns (its full-vocabulary softmax per patched row is ~40% of the patching time). The
command's defaults are :class:`Identify`'s."""


@dataclass(frozen=True)
class Stability(ModelStep):
    """Key-head sets over seeds, sample sizes, template families and counterfactuals, with Jaccard overlaps."""

    task: str = option("addition", "addition, ..., all, fig8, fig10, or a template-pair file")
    seeds: int = option(3, "independent draws: seeds SEED .. SEED+N-1", low=2, high=MAX_SEEDS)
    sizes: tuple[int, ...] = option(
        (64, 128, 256, 512), "pairs drawn per run (nested prefixes of one draw per seed)", low=1, high=MAX_PAIRS
    )
    kinds: tuple[str, ...] = option(
        ("operator", "operand"), "counterfactuals compared", choices=("operator", "operand")
    )
    threshold: float = option(KEY_THRESHOLD, "key heads: the effect's whole 95% interval below this", high=-1e-9)
    top: int = option(10, "size of the top-k set compared beside the key set", low=1, high=MAX_ORDERS)
    n_boot: int = option(N_BOOT, "bootstrap resamples of the prompts per interval", low=1, high=MAX_BOOT)
    shots: int = same_as(Identify, "shots")
    example_sets: int = same_as(Identify, "example_sets")
    bootstrap: str = same_as(Identify, "bootstrap")
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)

    def check(self) -> None:
        super().check()
        check_task(self.task)

    def to_draw(self) -> Draw:
        """How every pair is drawn: identify's default answer token (stability compares key-head sets of the
        token identify measures by default; no flag), this config's solved examples and their sets."""
        return Draw(str(Identify.__dataclass_fields__["answer_token"].default), self.shots, self.example_sets)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.pipeline.memory.stability`)."""
        return memory.stability(shape, self, **known)


@dataclass(frozen=True)
class Counterfactuals(ModelStep):
    """Identify with the paper's operator counterfactual and with the operand counterfactual, and their overlap."""

    task: str = option("addition", "the task both counterfactuals run on")
    n_samples: int = option(128, "pairs drawn per counterfactual", low=1, high=MAX_PAIRS)

    def check(self) -> None:
        super().check()
        check_task(self.task)


@dataclass(frozen=True)
class CrossFit(ModelStep):
    """The knockout cross-fitted over identify's ranking-side problem clusters (each fold's top 8 ranked on the others,
    knocked out on its own prompts, against its own random and layer-matched draws); reads identify's files."""

    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)
