"""How the faithfulness circuits are measured: their settings as one checked value, with no torch import,
so the step builds and checks them from its config (:meth:`FaithfulnessSettings.of`) before any model loads.
:func:`arithmech.methods.faithfulness.faithfulness` and :func:`arithmech.methods.faithfulness_sites.cross_position`
take them whole.

>>> FaithfulnessSettings(n_max=20, n_random=20, seed=0, n_boot=1000, bootstrap="cluster", split="held-out",
...                      batch_size=64, converse_random=False)
"""

from __future__ import annotations

from dataclasses import dataclass

BOOTSTRAPS = ("cluster", "prompt")  # what the intervals resample (arithmech.data.splits.BOOTSTRAP_UNITS)
SPLITS = ("held-out", "in-sample")  # the rows' split: problems never ranked on, or the ranking ones


@dataclass(frozen=True)
class FaithfulnessSettings:
    """How the circuits of a faithfulness run are drawn, measured and labelled. Checked when made: a wrong value
    is one ``ValueError``.

    Attributes:
        n_max: circuits of the top ``1 … n_max`` components by effect rank
            (:func:`~arithmech.methods.faithfulness.circuits`).
        n_random: random circuits of each size (END circuits: drawn outside the top ``n``; cross-position: the
            layer-matched draws).
        seed: the random circuits', the resample sources' and the bootstrap's seed.
        n_boot: bootstrap resamples of the share's interval (the rule's intervals take at least
            :data:`~arithmech.methods.faithfulness.N_BOOT_RULE`).
        bootstrap: what the intervals resample: ``"cluster"`` (the problems) or ``"prompt"`` (the rows).
        split: the rows' ``split`` column: ``"held-out"`` (prompts of problems never ranked on) or ``"in-sample"``.
        batch_size: prompts (or rows of one prompt) per forward pass.
        converse_random: the converse (``C`` ablated) for the random circuits too, not only the top ``n``.
    """

    n_max: int
    n_random: int
    seed: int
    n_boot: int
    bootstrap: str
    split: str
    batch_size: int
    converse_random: bool

    def __post_init__(self) -> None:
        if self.bootstrap not in BOOTSTRAPS:
            raise ValueError(f"bootstrap {self.bootstrap!r}: use one of {BOOTSTRAPS}")
        if self.split not in SPLITS:
            raise ValueError(f"split {self.split!r}: use one of {SPLITS}")
        for name in ("n_max", "n_random", "n_boot", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"faithfulness {name}={getattr(self, name)}: at least 1")

    @classmethod
    def of(cls, config, n_boot: int, bootstrap: str) -> FaithfulnessSettings:
        """The settings of the step's ``config`` (:class:`arithmech.circuits.config.Faithfulness`, not imported here: a
        method sits below the steps; its circuits, draws, seed, batches) with identify's ``n_boot`` and
        ``bootstrap`` as its record has them: the rows are held-out (the prompts share no problem with identify's),
        the converse runs for the top ``n`` only."""
        return cls(
            n_max=config.n_max,
            n_random=config.n_random,
            seed=config.seed,
            n_boot=n_boot,
            bootstrap=bootstrap,
            split="held-out",
            batch_size=config.batch_size,
            converse_random=False,
        )


@dataclass(frozen=True)
class Rows:
    """The columns every row of one :func:`~arithmech.methods.faithfulness.circuit_rows` call shares.

    Attributes:
        task: the task whose ranking made the circuits.
        method: ``"noising"``, ``"converse"`` or ``"denoising"``.
        ablation: ``"mean"``, ``"resample"`` or ``"x_r"`` (denoising's patched values).
        positions: where the circuit intervenes: ``"end"`` or ``"operands"`` (the cross-position circuit).
        baseline: what the full effect is measured from (:data:`~arithmech.methods.faithfulness.BASELINE`).
    """

    task: str
    method: str
    ablation: str
    positions: str
    baseline: str
