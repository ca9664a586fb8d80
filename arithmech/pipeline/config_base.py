"""What every step's config shares: the bounds each value is checked against, and :class:`ModelStep`'s fields.

The step configs themselves sit in their wings (:mod:`arithmech.identify.config`, :mod:`arithmech.analyze.config`,
:mod:`arithmech.circuits.config`, :mod:`arithmech.prompts.config`) and in :mod:`arithmech.steps.config_training`
(fine-tuning, Table 1's arms, the embedded model's commands); all build on :class:`ModelStep` (the fields of every step
that loads a model) and :func:`same_as` (a field written once, reused where it means the same). Importing this module
does not import torch.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from arithmech.core.config import Config, option
from arithmech.core.inputs import DTYPES, check_device, check_model

# Bounds: the largest value a run can take and still finish on this project's machine (2 CPU cores,
# 24 GiB) within about a working day; each is checked when a config is built, before any model loads. The
# anchors are measured: identify draws, patches and knocks out 4 x 256 pairs of the embedded model in 45 s
# (0.04 s a pair), SmolLM2 about 10x that; one bootstrap resample costs 8 bytes per prompt and component.
MAX_PAIRS = 50_000  # pairs (or prompts) per task: ~35 min of the embedded model, ~6 h of SmolLM2
MAX_PER_TEMPLATE = 5_000  # prompts per template: 48 templates x 5,000 = 240,000 prompts
MAX_ORDERS = 1_000  # random orders, heads, MLP layers, misses, top-k: beyond the heads of a 7B model (1,024)
MAX_BOOT = 20_000  # bootstrap resamples: 20,000 x 1,000 prompts x 8 B = 160 MB per component batch
MAX_BATCH = 4_096  # prompts or rows per forward pass
MAX_RECEIVERS = 64  # upstream receivers: each costs one patched scan of every earlier sender
MAX_IG_STEPS = 256  # EAP-IG points: 8 take 3 s on SmolLM2 (128 prompts), 256 about 2 min
MAX_SEEDS = 20  # seeds, random-head draws
MAX_STEPS = 100_000  # optimizer steps: the embedded model trains 1,200 steps in ~12 min
MAX_EXTEND = 10  # learning-rate grid extensions (each adds one run per arm)
MAX_TRAIN_ROWS = 1_000_000  # training rows sampled
MAX_EPOCHS = 100  # training epochs
MAX_THREADS = 1_024  # torch intra-op threads
MAX_SCALE = 1_000  # Table 1's evaluation-size multiplier
MAX_PROMPT_CHARS = 2_000  # a prompt typed on the command line (Fig. 6c's is 7 characters)
MAX_SHOTS = 16  # solved examples before a prompt: 16 x ~8 tokens, a prompt ~8x the zero-shot one
MAX_SHOT_SETS = 1_000  # sets of examples per template: one per prompt of a 16,000-pair draw over 16 templates


def same_as(config: type, name: str):
    """Field ``name`` of step ``config`` again, for another step where it means the same: its default, help,
    choices and bounds stay written once, there (``Accuracy.answer_token`` is ``Identify``'s)."""
    f = {x.name: x for x in fields(config)}[name]
    return option(f.default, **f.metadata)


@dataclass(frozen=True)
class ModelStep(Config):
    """The fields every step that loads a model shares."""

    model_name: str = option("embedded", "embedded, smollm2-135m, a model folder, a .gguf file or a hub id")
    results: str = option(
        "results", "results root (files go to RESULTS/<model-name>/) or the model's folder itself", reuse=False
    )
    seed: int = option(0, "seed of every draw", low=0, high=2**32 - 1)
    device: str = option("cpu", "where the model runs: cpu, cuda, cuda:N or mps (checked against this machine)")
    dtype: str = option("float32", "the model's weights", choices=DTYPES)
    overwrite: bool = option(False, "replace this step's files if the folder has them", reuse=False)

    def check(self) -> None:
        check_model(self.model_name)
        check_device(self.device)

    def recorded(self) -> dict:
        """What ``run.json`` records of a run made with this config unless the step's module says otherwise (its
        ``recorded``): :meth:`~arithmech.core.config.Config.reuse_key`, ``model_name`` recorded as ``model``."""
        return {("model" if k == "model_name" else k): v for k, v in self.reuse_key().items()}
