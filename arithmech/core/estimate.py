"""How much memory and how many forward passes a step will need, from its config alone (issue #28, item 2).

The README's memory model, in code. Before a step loads its model, :func:`check` reads the model's geometry
from its ``config.json`` (no weights, no torch), adds up what will be resident at the step's peak, and refuses
in one line (a :class:`ValueError`: ``error: …``, exit 2 on the command line) a run that cannot fit the
memory this machine has free, naming the flag to lower. The estimate is shown with the progress line
(:func:`arithmech.core.progress.annotate`) and recorded in ``run.json`` beside the measured ``peak_memory``.

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
import math
from dataclasses import dataclass, field
from pathlib import Path

from arithmech.core.names import ALIASES, CACHE_DIR, EMBEDDED_DIR

MiB, GiB = 2 ** 20, 2 ** 30
BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}     # per element of each --dtype
BASELINE = 384 * MiB            # analysis steps: torch + transformers + pandas, a model class, one forward
TRAIN_BASELINE = 470 * MiB      # finetune, arms: the same with the Trainer (accelerate, datasets) imported
CUDA_CONTEXT = 1 * GiB          # a GPU run: the CUDA context and the allocator's cache (README: 1-2 GB)
PROMPT_TOKENS = 24              # the longest Fig. 8 / Fig. 10 prompt with its answer's leading digits, in tokens
SHOT_TOKENS = 10                # each solved example before a prompt (``--shots``)
DECODE_TOKENS = 3               # greedy tokens of identify's exact-match check per prompt kept
FAMILIES = 5                    # template families (equation, statement, qa, time-span, accumulation)
TEMPLATES = 48                  # Fig. 8 + Fig. 10 templates (accuracy-by-template, shots)
POOL_FOLDS = 4                  # knockout_means: folds of the reference pool's operand pairs
MEMORY_ENV = "ARITHMECH_MEMORY_BYTES"    # pretend this machine has this many bytes free (tests, a shared machine)

# The fast paths' chunk sizes (arithmech.methods.*.MAX_ROWS ...), repeated here so that no torch is imported
# before the check; tests/unit/test_estimate.py checks they equal the methods' own.
PATCH_ROWS = 1 << 13            # patching.MAX_ROWS: rows of the running END state per chunk
PATCH_LOGITS = 1 << 24          # patching.MAX_LOGITS: full-vocabulary logits at once (prob=True)
KNOCKOUT_ROWS = 512             # knockout.MAX_ROWS: prompts x ablations per forward
KNOCKOUT_TOKENS = 4096          # knockout.MAX_TOKENS: rows x sequence length per forward
ATTRIBUTION_ROWS = 4096         # attribution.MAX_ROWS: samples x alphas per forward and backward
UPSTREAM_ROWS = 1 << 14         # upstream.MAX_ROWS: samples x senders x paths per chunk
ROLE_TOKENS = 3                 # upstream's role positions per prompt: {A}, the operator, {B} (one token each)


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
    def from_config(cls, cfg: dict, file_bytes: int = 0) -> "Shape":
        H = cfg["num_attention_heads"]
        return cls(n_layers=cfg["num_hidden_layers"], n_heads=H, n_kv_heads=cfg.get("num_key_value_heads") or H,
                   head_dim=cfg.get("head_dim") or cfg["hidden_size"] // H, d_model=cfg["hidden_size"],
                   d_mlp=cfg["intermediate_size"], vocab=cfg["vocab_size"], tied=bool(cfg.get("tie_word_embeddings")),
                   attn_bias=bool(cfg.get("attention_bias")), mlp_bias=bool(cfg.get("mlp_bias")), file_bytes=file_bytes)

    @property
    def params(self) -> int:
        """Parameters of ``LlamaForCausalLM``: embedding (and ``lm_head`` unless tied), per layer q/k/v/o, the
        gated MLP's three matrices and two RMSNorm gains, and the final norm."""
        d, q, kv = self.d_model, self.n_heads * self.head_dim, self.n_kv_heads * self.head_dim
        attn = d * q + 2 * d * kv + q * d + (q + 2 * kv + d if self.attn_bias else 0)
        mlp = 3 * d * self.d_mlp + (2 * self.d_mlp + d if self.mlp_bias else 0)
        return self.vocab * d * (1 if self.tied else 2) + self.n_layers * (attn + mlp + 2 * d) + d


# SmolLM2-135M before its first load (the dequantized folder in the cache is read once it exists).
KNOWN = {"smollm2-135m": dict(num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3, head_dim=64,
                              hidden_size=576, intermediate_size=1536, vocab_size=49152, tie_word_embeddings=True)}


def _folder_shape(folder: Path) -> Shape:
    files = sum(f.stat().st_size for f in folder.glob("*.safetensors")) + sum(f.stat().st_size for f in folder.glob("*.bin"))
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
        return Shape.from_config(KNOWN[model_name], Shape.from_config(KNOWN[model_name]).params * 4)   # float32 folder
    p = Path(model_name)
    if p.is_dir() and (p / "config.json").is_file():
        return _folder_shape(p)
    return None


def forward_bytes(s: Shape, rows: int, seq: int, b: int) -> int:
    """Activations of one no-grad forward of ``rows`` prompts of ``seq`` tokens at ``b`` bytes a value: inside
    one decoder layer the residual, its norm, q/k/v, the attention output and the MLP's gate, up and product
    (``(7d + 3I) * tokens``) and the attention scores (``H * seq^2`` per prompt), plus the END logits (every
    method asks for ``logits_to_keep=1``) in float32 with their softmax (10 B a value, the README's)."""
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
    def from_record(cls, step: str, rec: dict) -> "Estimate":
        """The inverse of :meth:`record`: the estimate a step recorded in ``run.json`` (a record names no flag)."""
        return cls(step, dict(rec["fixed"]), {k: dict(v) for k, v in rec["phases"].items()}, rec["forwards"], "",
                   rec.get("device", "cpu"), rec.get("assumes", "every draw assumed kept"))

    def record(self) -> dict:
        """What ``run.json`` records beside the measured ``peak_memory``."""
        return {"peak_bytes": self.peak_bytes, "peak_phase": self.peak_phase, "forwards": self.forwards,
                "fixed": dict(self.fixed), "phases": {k: dict(v) for k, v in self.phases.items()},
                "device": self.device, "assumes": self.notes, "model": "arithmech.core.estimate"}


def _seq(shots: int = 0) -> int:
    return PROMPT_TOKENS + SHOT_TOKENS * shots


def _ks(s: Shape) -> int:
    """Entries of the default knockout curve 1, 2, 4, ... up to all heads."""
    return int(math.log2(s.n_layers * s.n_heads)) + 2


def _fixed(s: Shape, c, train: bool = False) -> tuple[dict, int]:
    b = BYTES[c.dtype]
    fixed = {"baseline": TRAIN_BASELINE if train else BASELINE, "weights": s.params * b,
             **({"cuda context": CUDA_CONTEXT} if c.device != "cpu" else {})}
    return fixed, b


def _load(s: Shape) -> dict:
    return {"weights file (mapped while loading)": s.file_bytes}


def identify(s: Shape, c) -> Estimate:
    """Identify: draw and check, path patching from END caches, effects with bootstrap intervals, the pool means,
    knockout, transfer (the README's table, term by term)."""
    fixed, b = _fixed(s, c)
    seq, T, n, L, H = _seq(c.shots), 4 if c.task == "all" else 1, c.n_samples, s.n_layers, s.n_heads
    per = L * (H + 2)
    chunk = max(1, min(n, PATCH_ROWS // per))
    patching = {"END caches of X_r and X_c": end_cache_bytes(s, 2 * n, b),
                "patched batch": chunk * per * (4 * s.d_mlp + 7 * s.d_model) * b,
                "draw and check batch": forward_bytes(s, c.batch_size, seq, b)}
    if c.prob:
        patching["full-vocabulary logits for P({C})"] = min(chunk, max(1, PATCH_LOGITS // (per * s.vocab))) * per * s.vocab * 10
    pooled = n * T if T > 1 else n
    effects = {"patched results": (n * T + pooled) * L * (H + 1) * 4 * 8,
               "bootstrap": bootstrap_bytes(pooled, c.n_boot, L * (H + 1))}
    knock = {"key/value caches": KNOCKOUT_TOKENS * L * 2 * s.n_kv_heads * s.head_dim * b,
             "forward": forward_bytes(s, max(1, KNOCKOUT_TOKENS // seq), seq, b),
             "logits": KNOCKOUT_ROWS * s.vocab * 10,
             "means looked up for a batch": c.batch_size * L * seq * (H * s.head_dim + s.d_model) * 4}
    means = {"mean activations, per batch": c.batch_size * seq * 2 * L * s.d_model * b * 2}
    prepare = T * n * (2 + DECODE_TOKENS) + T * 2 * n
    pool = c.pool_size * FAMILIES * T if (c.knockout or c.transfer) else 0
    # knockout at END reuses the clean prefix's cache: an ablation runs one token, 1/seq of a prompt forward
    curves = (_ks(s) * (1 + c.n_random) + 6) * (1 / seq if c.knockout_positions == "end" else
                                                1 + 1 / seq if c.knockout_positions == "both" else 1)
    knockout = int(c.knockout_samples * (1 + curves) * (T + (T > 1))) if c.knockout else 0
    transfer = 3 * n if c.transfer else 0
    phases = {"load": _load(s), "patching": patching, "effects": effects}
    phases.update({"pool means": means} if c.knockout or c.transfer else {}, **({"knockout": knock} if c.knockout else {}))
    return Estimate("identify", fixed, phases, prepare + pool + knockout + transfer, "--n-samples", c.device)


def analyze(s: Shape, c) -> Estimate:
    """Analyze: attention of every head (eager: the attention weights of every layer are returned) and the MLP
    projections, batch by batch over the reference samples."""
    fixed, b = _fixed(s, c)
    seq = PROMPT_TOKENS
    attn = {"forward": forward_bytes(s, c.batch_size, seq, b),
            "attention weights of every layer": c.batch_size * s.n_layers * s.n_heads * seq * seq * b,
            "per-head role table": c.n_samples * s.n_layers * s.n_heads * 12 * 8}
    mlp = {"forward": forward_bytes(s, c.batch_size, seq, b),
           "MLP writes on W_U": c.batch_size * s.n_layers * (s.vocab + 2 * s.d_model) * 4}
    return Estimate("analyze", fixed, {"load": _load(s), "attention": attn, "mlp": mlp},
                    3 * c.n_samples + s.n_layers, "--n-samples", c.device)


def beyond(s: Shape, c) -> Estimate:
    """Beyond, phase by phase (each frees what it made before the next): END caches of the samples; EAP and EAP-IG
    (one forward and backward of the END chain per chunk of samples x alphas: what autograd saves per row and
    layer — the heads' o_proj input, two residual-width and two MLP-width tensors, counted with
    ``torch.autograd.graph.saved_tensors_hooks`` — and the gradients of every head's and MLP's END output); exact
    patching of every sender; upstream patching into the receivers' q at END and k/v at END and the role positions.

    Upstream's chunk holds, per sample and position (END and :data:`ROLE_TOKENS` role tokens), the senders'
    residual rows entering every layer up to the deepest receiver's, then one receiver's ``1 + 9 S`` rows carried
    through the later layers. The config cannot say where the receivers sit (identify's ranking does), so the
    deepest is taken as the last layer: an upper bound."""
    fixed, b = _fixed(s, c)
    n, L, H, d, dm = c.n_samples, s.n_layers, s.n_heads, s.d_model, s.d_mlp
    ends = {"END caches of X_r and X_c": end_cache_bytes(s, 2 * n, b)}
    caches = {**ends, "cache forward": forward_bytes(s, c.batch_size, PROMPT_TOKENS, b)}
    rows = min(n * c.ig_steps, max(c.ig_steps, ATTRIBUTION_ROWS))
    eap = {**ends, "saved for the backward": rows * L * (H * s.head_dim + 2 * d + 2 * dm) * 4,
           "gradients of every head's and MLP's END output": rows * L * (H * s.head_dim + d) * 4}
    exact = {**ends, "patched batch": max(1, min(n, PATCH_ROWS // (L * (H + 2)))) * L * (H + 2) * (4 * dm + 7 * d) * b}
    l = L - 1                                                   # the deepest receiver's layer, at most
    S, P = l * (H + 1), ROLE_TOKENS
    per = max((1 + P) * (1 + S), 1 + 9 * S)                     # residual rows per sample in one chunk
    m = max(1, min(n, c.batch_size, UPSTREAM_ROWS // per))      # samples per chunk
    upstream = {**ends,
                "senders' residual rows entering each layer": m * (1 + P) * (l + (H + 1) * l * (l + 1) // 2) * d * b,
                "MLP rows of the senders, or the receiver's rows carried on": max(m * (1 + P) * (1 + S) * 3 * dm,
                                                                                 m * (1 + 9 * S) * (d + 3 * dm)) * b}
    forwards = 2 * n + 3 * n * (1 + c.ig_steps) + 2 * n + c.receivers * n * 9
    return Estimate("beyond", fixed, {"load": _load(s), "caches": caches, "eap": eap, "exact": exact,
                                      "upstream": upstream}, forwards, "--n-samples", c.device)


def faithfulness(s: Shape, c, tasks: int = 4, n_boot: int = 1000, pool_size: int = 512, shots: int = 0) -> Estimate:
    """Faithfulness: the evaluation draw and identify's reference pool (its fold sums stay resident), then every
    circuit (top and random ones per ``n <= n_max``) at END: noising (mean, resample), denoising, the top's converse;
    then the cross-position circuit, its ``n_random`` layer-matched draws, two baselines and two sanity rows, each a
    whole forward per prompt and direction, plus X_r's and X_c's per-position values.
    The step passes identify's ``tasks``, ``n_boot``, ``pool_size``, ``shots``; without them, every task, defaults."""
    fixed, b = _fixed(s, c)
    n, L, H, d, seq = c.n_samples, s.n_layers, s.n_heads, s.d_model, _seq(shots)
    circuits = c.n_max * (1 + c.n_random)
    ablations = 2 * (2 + circuits + c.n_max) + (2 + circuits)        # mean, resample (with converse); denoising
    groups = TEMPLATES * tasks // 4 + FAMILIES + 1                   # (template, length) groups; family sums, all
    pool = {"reference-pool fold sums": groups * POOL_FOLDS * L * seq * (H * s.head_dim + d) * 4}
    draw = {**pool, "draw and check batch": forward_bytes(s, c.batch_size, seq, b),
            "mean activations, per batch": c.batch_size * seq * 2 * L * d * b * 2}
    run = {**pool, "END values of X_r, X_c and the resample sources": 3 * n * L * (H * s.head_dim + d) * 4,
           "END logits of X_r and X_c": 2 * n * s.vocab * 4,
           "key/value caches": KNOCKOUT_TOKENS * L * 2 * s.n_kv_heads * s.head_dim * b,
           "ablated forward": forward_bytes(s, max(1, KNOCKOUT_TOKENS // seq), seq, b),
           "logits": KNOCKOUT_ROWS * s.vocab * 10, "LDs": 2 * ablations * n * 8,
           "bootstrap": bootstrap_bytes(n, n_boot, circuits)}
    prepare = tasks * n * (2 + DECODE_TOKENS) + pool_size * FAMILIES * tasks
    forwards = prepare + 6 * n + int(ablations * n / seq)            # an END ablation: 1/seq of a prompt forward
    forwards += 2 * n * (c.n_random + 5)       # the cross-position circuit (faithfulness_sites): whole forwards
    return Estimate("faithfulness", fixed, {"load": _load(s), "draw and pool": draw, "circuits": run}, forwards,
                    "--n-samples", c.device)


def stability(s: Shape, c) -> Estimate:
    """Stability: per kind and seed, identify's draw and patching at the largest size (no knockout)."""
    fixed, b = _fixed(s, c)
    n, L, H, seq = max(c.sizes), s.n_layers, s.n_heads, _seq(c.shots)
    per = L * (H + 2)
    patching = {"END caches of X_r and X_c": end_cache_bytes(s, 2 * n, b),
                "patched batch": max(1, min(n, PATCH_ROWS // per)) * per * (4 * s.d_mlp + 7 * s.d_model) * b,
                "draw and check batch": forward_bytes(s, c.batch_size, seq, b)}
    runs = len(c.kinds) * c.seeds
    effects = {"patched results of every run": runs * n * L * (H + 1) * 4 * 8,
               "bootstrap": bootstrap_bytes(n, c.n_boot, L * (H + 1))}
    return Estimate("stability", fixed, {"load": _load(s), "patching": patching, "effects": effects},
                    runs * n * 4, "--sizes", c.device)


def _prompts(s: Shape, c, n: int, seq: int, batch: int, step: str, flag: str, forwards: int) -> Estimate:
    fixed, b = _fixed(s, c)
    return Estimate(step, fixed, {"load": _load(s), "forward": {"forward": forward_bytes(s, batch, seq, b),
                                                                 "scores": n * 64}}, forwards, flag, c.device)


def accuracy(s: Shape, c) -> Estimate:
    """Accuracy by template: one scored forward per prompt, in the methods' default batches of 64."""
    n = c.n_per_template * TEMPLATES
    return _prompts(s, c, n, PROMPT_TOKENS, 64, "accuracy", "--n-per-template", n)


def shots(s: Shape, c) -> Estimate:
    """Shots: identify's draw and checks on a validation draw for every K of the grid."""
    n = c.n_per_template * TEMPLATES
    return _prompts(s, c, n, _seq(max(c.grid)), c.batch_size, "shots", "--n-per-template",
                    sum(n * (2 + DECODE_TOKENS) + 2 * n for _ in c.grid))


def _train(s: Shape, c, rows: int, trained: int, steps: int, step: str, flag: str, evals: int) -> Estimate:
    """Training: weights, gradients and AdamW's two moments of the trained parameters (float32), and a micro
    batch's activations kept for the backward (every layer's, plus the logits and their gradient)."""
    fixed, b = _fixed(s, c, train=True)
    seq = PROMPT_TOKENS + 8
    tokens = rows * seq
    acts = tokens * s.n_layers * (10 * s.d_model + 4 * s.d_mlp) * 4 + rows * s.n_layers * s.n_heads * seq * seq * 4 * 2
    train = {"gradients and AdamW moments": trained * 12, "activations kept for the backward": acts,
             "logits and their gradient": tokens * s.vocab * 4 * 3}
    return Estimate(step, fixed, {"load": _load(s), "train": train,
                                  "evaluate": {"forward": forward_bytes(s, 64, PROMPT_TOKENS, b)}},
                    steps * c.batch_size * 3 + evals, flag, c.device)


def finetune(s: Shape, c) -> Estimate:
    """Finetune: full SFT trains every parameter; precise SFT the tuned heads' q/k/v/o slices (and MLPs)."""
    if c.mode == "full":
        trained = s.params
    else:
        k = int(c.heads[4:]) if c.heads.startswith("top-") else len(c.heads.split(","))
        trained = k * 4 * s.d_model * s.head_dim + c.mlps * 3 * s.d_model * s.d_mlp
    steps = c.max_steps if c.max_steps > 0 else math.ceil((c.n_train or 1024) * c.epochs / c.batch_size)
    return _train(s, c, c.micro_batch_size, trained, steps,
                  "finetune", "--micro-batch-size", 2 * (c.limit or 500) * 4)


def arms(s: Shape, c) -> Estimate:
    """Arms: one run at a time (each frees its model before the next), so the peak is full SFT's."""
    rates, extra = 3, max(0, c.frontier_seeds - len(c.seeds))       # a 3-rate grid; frontier rates: 2 per arm
    runs = 2 + 3 * (rates * len(c.seeds) + 2 * extra) + 2 * rates * c.draws
    steps = (c.steps or c.curve_steps) * runs
    return _train(s, c, c.batch_size, s.params, steps, "arms", "--batch-size", runs * 2_000)


STEPS = {"Identify": identify, "Analyze": analyze, "Beyond": beyond, "Faithfulness": faithfulness,
         "Stability": stability, "Accuracy": accuracy,
         "Shots": shots, "Finetune": finetune, "Table1": arms}


def estimate(config, **known) -> Estimate | None:
    """The estimate of the step ``config`` (an :mod:`arithmech.steps.config` class) configures; ``None`` for a step
    without one or a model whose geometry cannot be read without loading it (a hub id). ``known``: what the step
    reads from earlier files before loading (faithfulness: identify's ``tasks``, ``shots``, ...)."""
    fn = STEPS.get(type(config).__name__)
    shape = shape_of(config.model_name) if fn is not None else None
    return fn(shape, config, **known) if fn is not None and shape else None
