"""How identify's knockout runs: its settings as one checked value, with no torch import, so the step
config (:meth:`arithmech.identify.config.Identify.knockout_settings`) builds and checks them before any model loads;
what one knockout curve knocks out (:class:`Curve`), as :func:`arithmech.methods.ablation.curves.knockout_curve`
takes it; and which prompts a knockout draws (:class:`Prompts`), as
:func:`arithmech.methods.ablation.run.eval_samples` takes them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from arithmech.core.inputs import KNOCKOUT_POSITIONS
from arithmech.data.draw import Draw

if TYPE_CHECKING:
    import torch

SPLITS = ("held-out", "in-sample")  # identify's knockout_split: test on problems never ranked on, or on the X_r
CURVES_FOR = ("primary", "each")  # full curves for the primary task only, or for every task


def split_positions(knockout_positions: str) -> list[str]:
    """``end`` / ``all`` / ``both`` → the position settings to run, the curve's first."""
    if knockout_positions not in KNOCKOUT_POSITIONS:
        raise ValueError(f"knockout_positions {knockout_positions!r}: use one of {KNOCKOUT_POSITIONS}")
    return ["end", "all"] if knockout_positions == "both" else [knockout_positions]


@dataclass(frozen=True)
class KnockoutSettings:
    """How identify's knockout runs, as its config sets it
    (:meth:`arithmech.identify.config.Identify.knockout_settings`; every default is written there, once).
    Checked when made: a wrong value is one ``ValueError``.

    Attributes:
        samples: prompts per task in the curves (:func:`eval_samples`; the config's ``knockout_samples``).
        n_random: seeded random orders per curve, drawn from the components outside the key ones.
        seed: the run's seed (random orders, the prompts' draw streams, the reference pool's).
        ks: numbers of heads to knock out, ``None`` for :func:`~arithmech.methods.ablation.curves.default_ks`.
        curves_for: ``"primary"`` (full curves for the primary task, key vs random for the others) or ``"each"``.
        positions: ``"end"``, ``"all"`` or ``"both"`` (the config's ``knockout_positions``; :attr:`position_settings`).
        split: ``"held-out"`` (fresh X_r of problems never ranked on) or ``"in-sample"`` (the X_r, topped up).
        pool_size: X_c per template family in the reference pool of the means.
        batch_size: prompts per forward pass.
    """

    samples: int
    n_random: int
    seed: int
    ks: tuple[int, ...] | None
    curves_for: str
    positions: str
    split: str
    pool_size: int
    batch_size: int

    def __post_init__(self) -> None:
        if self.curves_for not in CURVES_FOR:
            raise ValueError(f"curves_for {self.curves_for!r}: use 'primary' or 'each'")
        split_positions(self.positions)
        if self.split not in SPLITS:
            raise ValueError(f"knockout split {self.split!r}: use one of {SPLITS}")
        for name in ("samples", "n_random", "pool_size", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"knockout {name}={getattr(self, name)}: at least 1")

    @property
    def position_settings(self) -> list[str]:
        """The position settings to run, the curve's first (:func:`split_positions`)."""
        return split_positions(self.positions)


@dataclass(frozen=True)
class Curve:
    """What one knockout curve knocks out (:func:`arithmech.methods.ablation.curves.knockout_curve`; the layer-matched
    control, :func:`arithmech.methods.ablation.run.layer_matched_rows`, reads the same fields but ``random_ks`` and
    ``exclude_top``). Components are ``(layer, head)`` pairs for ``kind="head"``, layer indices for ``"mlp"``.

    Attributes:
        kind: ``"head"`` or ``"mlp"``.
        ranking: the components by effect rank, most negative first; the effect-rank row at ``k`` knocks out
            ``ranking[:k]``.
        universe: every component a random draw may take.
        exclude: components no random draw takes (the key ones).
        ks: the ``k`` of the effect-rank rows (a ``k`` past ``len(ranking)`` is left out).
        random_ks: the ``k`` of the random rows; ``None``: ``ks``.
        exclude_top: the random draw at ``k`` also leaves out ``ranking[:k]`` (the components the effect-rank point
            it is compared with knocks out).
        counter: the prompts' counterfactual answers at the curve's forwards
            (:func:`~arithmech.methods.ablation.knockout.counter_answers`), which every row's logit difference reads:
            computed once per task and position setting by :func:`arithmech.methods.ablation.run.task_knockout`;
            ``None``: each scoring computes them.
    """

    kind: str
    ranking: Sequence
    universe: Sequence
    exclude: Sequence
    ks: Sequence[int]
    random_ks: Sequence[int] | None
    exclude_top: bool
    counter: torch.Tensor | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in ("head", "mlp"):
            raise ValueError(f"kind {self.kind!r}: use 'head' or 'mlp'")


@dataclass(frozen=True)
class Prompts:
    """Which prompts a knockout measures on (:func:`arithmech.methods.ablation.run.eval_samples`). Checked when
    made: a wrong value is one ``ValueError``.

    Attributes:
        n: prompts wanted (fewer come back when the templates run out of distinct ones).
        seed: the draw streams' seed (round ``r`` draws with ``crc32("knockout-prompts:{seed}:{r}")``).
        draw: how pairs are drawn (:class:`~arithmech.data.draw.Draw`: answer token, shots, example sets).
        heldout: fresh prompts of problems never ranked on, X_c checked (identify's default split), or the
            ranking X_r topped up with fresh ones (``False``).
        batch_size: prompts per forward pass of the checks.

    >>> Prompts(n=256, seed=0, draw=Draw("last-digit", 0, 1), heldout=True, batch_size=64)
    """

    n: int
    seed: int
    draw: Draw
    heldout: bool
    batch_size: int

    def __post_init__(self) -> None:
        for name in ("n", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"knockout prompts {name}={getattr(self, name)}: at least 1")
