"""How much memory and how many forward passes a step will need, from its config alone.

The memory model of book/contracts.md, in code. Before a step loads its model, :func:`check` reads the model's geometry
from its ``config.json`` (no weights, no torch), adds up what will be resident at the step's peak, and refuses
in one line (a :class:`ValueError`: ``error: …``, exit 2 on the command line) a run that cannot fit the
memory this machine has free, naming the flag to lower. The estimate is shown on its own line before the
progress lines (:func:`arithmech.core.progress.announce`) and recorded in ``run.json`` beside the measured
``peak_memory``.

What is resident at the peak, from first principles::

    peak = baseline + weights + max over the step's phases of (what the phase holds at once)

* ``baseline``: the Python process with torch, transformers and pandas imported, a model class built and a
  forward run (:data:`BASELINE`; measured once, not derived: ``benchmarks/bench_estimate.py`` measures it
  again in every run and records both);
* ``weights``: the parameter count (:meth:`Shape.params`, counted from the config as ``sum(numel)`` would)
  × the bytes of ``--dtype``;
* phase ``load``: the weights file, mapped while it is copied into the parameters;
* the step's phases: a batch's activations (:func:`forward_bytes`), the caches the step keeps (identify's END
  caches of every head for every prompt, the bootstrap's resample counts, the knockout's key/value caches).

Every sample drawn is assumed kept (X_r can only be fewer): the estimate bounds the run from above in its
caches. Forward passes are *prompt forwards* (one prompt through the model once; a batch of 64 is 64),
counted from the same config with the same assumption; backward passes count as two forwards.

>>> e = estimate(Identify(n_samples=256))
>>> e.peak_bytes, e.forwards, e.line()
(512000000, 9000, 'est. peak 488 MiB, ~9,000 forwards')
>>> check(Identify(n_samples=50_000))      # ValueError: identify needs about … lower --n-samples
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from arithmech.core.names import ALIASES, CACHE_DIR, EMBEDDED_DIR

MiB, GiB = 2**20, 2**30
BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}  # per element of each --dtype
BASELINE = 384 * MiB  # analysis steps: torch + transformers + pandas, a model class, one forward
TRAIN_BASELINE = 470 * MiB  # finetune, arms: the same with the Trainer (accelerate, datasets) imported
CUDA_CONTEXT = 1 * GiB  # a GPU run: the CUDA context and the allocator's cache (book/contracts.md: 1-2 GB)
PROMPT_TOKENS = 24  # the longest Fig. 8 / Fig. 10 prompt with its answer's leading digits, in tokens
SHOT_TOKENS = 10  # each solved example before a prompt (``--shots``)
DECODE_TOKENS = 3  # greedy tokens of identify's exact-match check per prompt kept
FAMILIES = 5  # template families (equation, statement, qa, time-span, accumulation)
TEMPLATES = 48  # Fig. 8 + Fig. 10 templates (accuracy-by-template, shots)
POOL_FOLDS = 4  # ablation.pool.build_pool: folds of the reference pool's operand pairs
MEMORY_ENV = "ARITHMECH_MEMORY_BYTES"  # pretend this machine has this many bytes free (tests, a shared machine)

# The fast paths' chunk sizes (arithmech.methods.*.MAX_ROWS ...), repeated here so that no torch is imported
# before the check; tests/unit/test_estimate.py checks they equal the methods' own.
PATCH_ROWS = 1 << 13  # patching.MAX_ROWS: rows of the running END state per chunk
PATCH_LOGITS = 1 << 24  # patching.MAX_LOGITS: full-vocabulary logits at once (prob=True)
KNOCKOUT_ROWS = 512  # ablation.intervention.MAX_ROWS: prompts x ablations per forward
KNOCKOUT_TOKENS = 4096  # ablation.intervention.MAX_TOKENS: rows x sequence length per forward
ATTRIBUTION_ROWS = 4096  # attribution.MAX_ROWS: samples x alphas per forward and backward
UPSTREAM_ROWS = 1 << 14  # upstream.MAX_ROWS: samples x senders x paths per chunk
ROLE_TOKENS = 3  # upstream's role positions per prompt: {A}, the operator, {B} (one token each)


@dataclass(frozen=True)
class Shape:
    """A Llama-family model's sizes as its ``config.json`` states them, and the size of its weights file."""

    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_model: int
    d_mlp: int
    vocab: int
    tied: bool = False
    attn_bias: bool = False
    mlp_bias: bool = False
    file_bytes: int = 0

    @classmethod
    def from_config(cls, cfg: dict, file_bytes: int = 0) -> Shape:
        H = cfg["num_attention_heads"]
        return cls(
            n_layers=cfg["num_hidden_layers"],
            n_heads=H,
            n_kv_heads=cfg.get("num_key_value_heads") or H,
            head_dim=cfg.get("head_dim") or cfg["hidden_size"] // H,
            d_model=cfg["hidden_size"],
            d_mlp=cfg["intermediate_size"],
            vocab=cfg["vocab_size"],
            tied=bool(cfg.get("tie_word_embeddings")),
            attn_bias=bool(cfg.get("attention_bias")),
            mlp_bias=bool(cfg.get("mlp_bias")),
            file_bytes=file_bytes,
        )

    @property
    def params(self) -> int:
        """Parameters of ``LlamaForCausalLM``: embedding (and ``lm_head`` unless tied), per layer q/k/v/o, the
        gated MLP's three matrices and two RMSNorm gains, and the final norm."""
        d, q, kv = self.d_model, self.n_heads * self.head_dim, self.n_kv_heads * self.head_dim
        attn = d * q + 2 * d * kv + q * d + (q + 2 * kv + d if self.attn_bias else 0)
        mlp = 3 * d * self.d_mlp + (2 * self.d_mlp + d if self.mlp_bias else 0)
        return self.vocab * d * (1 if self.tied else 2) + self.n_layers * (attn + mlp + 2 * d) + d


# SmolLM2-135M before its first load (the dequantized folder in the cache is read once it exists).
KNOWN = {
    "smollm2-135m": dict(
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        head_dim=64,
        hidden_size=576,
        intermediate_size=1536,
        vocab_size=49152,
        tie_word_embeddings=True,
    )
}


def _folder_shape(folder: Path) -> Shape:
    files = sum(f.stat().st_size for f in folder.glob("*.safetensors")) + sum(
        f.stat().st_size for f in folder.glob("*.bin")
    )
    return Shape.from_config(json.loads((folder / "config.json").read_text()), files)


def shape_of(model_name: str) -> Shape | None:
    """The :class:`Shape` of ``--model`` without loading it: the shipped folder's or a folder's ``config.json``,
    SmolLM2's dequantized cache (or :data:`KNOWN` before it exists); ``None`` for a hub id or a bare ``.gguf``
    (no estimate: the check is skipped)."""
    if model_name == "embedded":
        return _folder_shape(EMBEDDED_DIR)
    if model_name in KNOWN:
        cached = sorted(CACHE_DIR.glob(Path(ALIASES[model_name]["gguf"]).stem + "-*/config.json"))
        if cached:
            return _folder_shape(cached[-1].parent)
        return Shape.from_config(KNOWN[model_name], Shape.from_config(KNOWN[model_name]).params * 4)  # float32 folder
    p = Path(model_name)
    if p.is_dir() and (p / "config.json").is_file():
        return _folder_shape(p)
    return None


def forward_bytes(s: Shape, rows: int, seq: int, b: int) -> int:
    """Activations of one no-grad forward of ``rows`` prompts of ``seq`` tokens at ``b`` bytes a value: inside
    one decoder layer the residual, its norm, q/k/v, the attention output and the MLP's gate, up and product
    (``(7d + 3I) * tokens``) and the attention scores (``H * seq^2`` per prompt), plus the END logits (every
    method asks for ``logits_to_keep=1``) in float32 with their softmax (10 B a value, as book/contracts.md counts)."""
    tokens = rows * seq
    layer = tokens * (7 * s.d_model + 3 * s.d_mlp) + rows * s.n_heads * seq * seq
    return layer * b + rows * s.vocab * 10


def end_cache_bytes(s: Shape, n: int, b: int) -> int:
    """END caches of ``n`` prompts: per layer the o_proj input (``H * d_head``) and four residual-width rows
    (attention output, the residual before and mid-layer, the MLP output)."""
    return n * s.n_layers * (s.n_heads * s.head_dim + 4 * s.d_model) * b


def bootstrap_bytes(n: int, n_boot: int, columns: int) -> int:
    """A bootstrap interval over ``n`` prompts: the resampled indices (int64) and counts (float64), ``n_boot x n``
    each, and the resampled means of ``columns`` components (float64, for the mean and the sorted copy)."""
    return n_boot * n * 16 + n_boot * columns * 16


@dataclass
class Estimate:
    """One step's estimate: the bytes of each phase's terms, the fixed terms, forward passes, and the flag
    that lowers it most (named by a refusal)."""

    step: str
    fixed: dict[str, int]
    phases: dict[str, dict[str, int]]
    forwards: int
    flag: str
    device: str = "cpu"
    notes: str = "every draw assumed kept"
    peak_phase: str = field(init=False)

    def __post_init__(self) -> None:
        self.peak_phase = max(self.phases, key=lambda p: sum(self.phases[p].values()))

    @property
    def peak_bytes(self) -> int:
        """The fixed terms plus the largest phase (phases run one after the other)."""
        return sum(self.fixed.values()) + sum(self.phases[self.peak_phase].values())

    def line(self) -> str:
        """What the progress line shows: ``est. peak 488 MiB, ~9,000 forwards``."""
        return f"est. peak {self.peak_bytes / MiB:,.0f} MiB, ~{self.forwards:,} forwards"

    @classmethod
    def from_record(cls, step: str, rec: dict) -> Estimate:
        """The inverse of :meth:`record`: the estimate a step recorded in ``run.json`` (a record names no flag)."""
        return cls(
            step,
            dict(rec["fixed"]),
            {k: dict(v) for k, v in rec["phases"].items()},
            rec["forwards"],
            "",
            rec.get("device", "cpu"),
            rec.get("assumes", "every draw assumed kept"),
        )

    def record(self) -> dict:
        """What ``run.json`` records beside the measured ``peak_memory``."""
        return {
            "peak_bytes": self.peak_bytes,
            "peak_phase": self.peak_phase,
            "forwards": self.forwards,
            "fixed": dict(self.fixed),
            "phases": {k: dict(v) for k, v in self.phases.items()},
            "device": self.device,
            "assumes": self.notes,
            "model": "arithmech.core.estimate",
        }


def seq_tokens(shots: int = 0) -> int:
    """Tokens of the longest prompt with ``shots`` solved examples before it."""
    return PROMPT_TOKENS + SHOT_TOKENS * shots


def fixed_terms(s: Shape, c, train: bool = False) -> tuple[dict, int]:
    """``(terms resident for the whole run, bytes per element)``: the baseline, the weights in ``c.dtype``, and
    the CUDA context off the CPU."""
    b = BYTES[c.dtype]
    fixed = {
        "baseline": TRAIN_BASELINE if train else BASELINE,
        "weights": s.params * b,
        **({"cuda context": CUDA_CONTEXT} if c.device != "cpu" else {}),
    }
    return fixed, b


def load_terms(s: Shape) -> dict:
    """The load phase: the weights file, mapped while it is copied into the parameters."""
    return {"weights file (mapped while loading)": s.file_bytes}


def estimate(config, **known) -> Estimate | None:
    """The estimate of the run ``config`` configures: its ``memory(shape, **known)`` (each step's config says what
    its run holds, :mod:`arithmech.pipeline.memory`) on the model's :func:`shape_of`; ``None`` for a config without
    one or a model whose geometry cannot be read without loading it (a hub id). ``known``: what the step reads
    from earlier files before loading (faithfulness: identify's ``tasks``, ``shots``, ...)."""
    fn = getattr(config, "memory", None)
    shape = shape_of(config.model_name) if fn is not None else None
    return fn(shape, **known) if fn is not None and shape else None
