"""Every step's config, with every default written once (:mod:`arithmech.core.config`).

``python -m arithmech <step> --help`` lists exactly these fields, as flags of the same names; a chapter
builds its step's config from its papermill parameters; :func:`ensure`-style readers reuse a result set
made with the same :meth:`~arithmech.core.config.Config.reuse_key`. Importing this module does not
import torch, so a wrong value is refused before any model loads.
"""
from __future__ import annotations

from dataclasses import dataclass

from arithmech.core.config import Config, option
from arithmech.core.inputs import ANSWER_TOKENS, DEVICES, DTYPES, KNOCKOUT_POSITIONS, check_model
from arithmech.data.pairfile import check_task

KEY_THRESHOLD = -0.05          # the paper's key-head threshold: relative change of the answer logit
N_BOOT = 1000                  # bootstrap resamples of the prompts per 95% interval


@dataclass(frozen=True)
class ModelStep(Config):
    """The fields every step that loads a model shares."""
    model_name: str = option("embedded", "embedded, smollm2-135m, a model folder, a .gguf file or a hub id")
    results: str = option("results", "results root (files go to RESULTS/<model-name>/) or the model's folder "
                          "itself", reuse=False)
    seed: int = option(0, "seed of every draw", low=0, high=2**32 - 1)
    device: str = option("cpu", "where the model runs", choices=DEVICES)
    dtype: str = option("float32", "the model's weights", choices=DTYPES)
    overwrite: bool = option(False, "replace this step's files if the folder has them", reuse=False)

    def check(self) -> None:
        check_model(self.model_name)


@dataclass(frozen=True)
class Identify(ModelStep):
    """Path patching of every head and MLP, key heads, knockout, transfer (paper §4.1, §5.1)."""
    task: str = option("all", "addition, subtraction, multiplication, division, all (the four), fig8, fig10, "
                       "exponentiation, or a template-pair file (.json / .jsonl)")
    n_samples: int = option(256, "pairs drawn per task; X_r keeps those the model answers right", low=1)
    threshold: float = option(KEY_THRESHOLD, "key heads: the effect's whole 95% bootstrap interval below this "
                              "(paper: mean below -0.05)", high=-1e-9)
    n_boot: int = option(N_BOOT, "bootstrap resamples of the prompts per interval", low=1)
    method: str = option("fast", "path patching: fast (exact, from the END caches) or reference (literal)",
                         choices=("fast", "reference"))
    prob: bool = option(True, "also record P({C}) (a full-vocabulary softmax per patched run)")
    knockout: bool = option(True, "run the knockout curves")
    knockout_samples: int = option(256, "prompts per task in the knockout curves (X_r topped up with fresh X_r)",
                                   low=1)
    n_random: int = option(20, "random orders of components outside the key heads and the top k", low=1)
    ks: tuple[int, ...] | None = option(None, "numbers of heads to knock out (default: 1, 2, 4, ... up to all)",
                                        low=1)
    curves_for: str = option("primary", "full knockout curves for the primary task only, or for each task",
                             choices=("primary", "each"))
    knockout_positions: str = option("end", "mean-ablate at END (where heads were patched), at every position, "
                                     "or both", choices=KNOCKOUT_POSITIONS)
    pool_size: int = option(512, "X_c per template family in the reference pool of the means", low=1)
    transfer: bool = option(True, "knock the heads out on a held-out template family (Fig. 4, Fig. 10)")
    heldout: str = option("fig10", "the template family of the transfer test", choices=("fig8", "fig10"))
    answer_token: str = option("last-digit", "last-digit: the prompt carries the answer's leading digits; "
                               "single-token: one-token answers only; first: the paper's first answer token",
                               choices=ANSWER_TOKENS)
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False)
    out: str | None = option(None, "the model's results folder itself (default: RESULTS/<model-name>/)", reuse=False)

    def check(self) -> None:
        super().check()
        check_task(self.task)


BOOK_SCALE = dict(knockout_samples=128, pool_size=128, knockout_positions="both", prob=False)
"""The book's identify scale for a 135M model on 2 cores (the SmolLM2 appendix, the Explorer and Beyond when
they make identify's files): 128 knockout prompts, a pool of 128 X_c per family, knockout at END and at every
position, no P({C}) columns (its full-vocabulary softmax per patched row is ~40% of the patching time). The
command's defaults are :class:`Identify`'s."""


@dataclass(frozen=True)
class Analyze(ModelStep):
    """Attention of the key heads by token role, MLP projections on W_U (§4.2, §5.2); reads identify's files."""
    n_samples: int = option(256, "reference samples (X_r) the averages run over (paper: 1000)", low=1)
    prompt: str = option("4 + 3 =", "prompt of the layer-by-layer top-token table (Fig. 6c)")
    final_norm: bool = option(True, "project through the final norm's gain")
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False)

    def check(self) -> None:
        super().check()
        if not self.prompt.strip():
            raise ValueError("--prompt '': give a prompt such as '4 + 3 ='")


@dataclass(frozen=True)
class Beyond(ModelStep):
    """EAP / EAP-IG against exact path patching, head→head upstream patching; reads identify's files."""
    receivers: int = option(5, "receivers of upstream patching: key heads, else the top k by effect", low=1)
    ig_steps: int = option(8, "EAP-IG: points on the straight path from X_r to X_c", low=1)
    n_samples: int = option(128, "reference samples (X_r) from identify's prompts.jsonl, a seeded subset", low=1)
    n_misses: int = option(5, "EAP's largest misses kept with their norms and MLP gates", low=0)
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False)
