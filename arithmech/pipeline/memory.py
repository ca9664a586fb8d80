"""What each step's run holds at its peak, phase by phase, and how many prompt forwards it makes: the README's
memory model step by step, on the terms of :mod:`arithmech.core.estimate` (:class:`~arithmech.core.estimate.Shape`,
:func:`~arithmech.core.estimate.forward_bytes`, ...). Each step's config (:mod:`arithmech.identify.config` and the other
wings' `config`) hands itself to its function here through its ``memory`` method, so
:func:`arithmech.core.estimate.estimate` reads any step's estimate without knowing the steps.

Every function takes the model's :class:`~arithmech.core.estimate.Shape` ``s`` and the step's config ``c``.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from arithmech.core.estimate import (
    ATTRIBUTION_ROWS,
    DECODE_TOKENS,
    FAMILIES,
    KNOCKOUT_ROWS,
    KNOCKOUT_TOKENS,
    PATCH_LOGITS,
    PATCH_ROWS,
    POOL_FOLDS,
    PROMPT_TOKENS,
    ROLE_TOKENS,
    TEMPLATES,
    UPSTREAM_ROWS,
    Estimate,
    Shape,
    bootstrap_bytes,
    end_cache_bytes,
    fixed_terms,
    forward_bytes,
    load_terms,
    seq_tokens,
)


def _ks(s: Shape) -> int:
    """Entries of the default knockout curve 1, 2, 4, ... up to all heads."""
    return int(math.log2(s.n_layers * s.n_heads)) + 2


def identify(s: Shape, c) -> Estimate:
    """Identify: draw and check, path patching from END caches, effects with bootstrap intervals, the pool means,
    knockout, transfer (the README's table, term by term)."""
    fixed, b = fixed_terms(s, c)
    seq, T, n, L, H = seq_tokens(c.shots), 4 if c.task == "all" else 1, c.n_samples, s.n_layers, s.n_heads
    per = L * (H + 2)
    chunk = max(1, min(n, PATCH_ROWS // per))
    patching = {
        "END caches of X_r and X_c": end_cache_bytes(s, 2 * n, b),
        "patched batch": chunk * per * (4 * s.d_mlp + 7 * s.d_model) * b,
        "draw and check batch": forward_bytes(s, c.batch_size, seq, b),
    }
    if c.prob:
        patching["full-vocabulary logits for P({C})"] = (
            min(chunk, max(1, PATCH_LOGITS // (per * s.vocab))) * per * s.vocab * 10
        )
    pooled = n * T if T > 1 else n
    effects = {
        "patched results": (n * T + pooled) * L * (H + 1) * 4 * 8,
        "bootstrap": bootstrap_bytes(pooled, c.n_boot, L * (H + 1)),
    }
    knock = {
        "key/value caches": KNOCKOUT_TOKENS * L * 2 * s.n_kv_heads * s.head_dim * b,
        "forward": forward_bytes(s, max(1, KNOCKOUT_TOKENS // seq), seq, b),
        "logits": KNOCKOUT_ROWS * s.vocab * 10,
        "means looked up for a batch": c.batch_size * L * seq * (H * s.head_dim + s.d_model) * 4,
    }
    means = {"mean activations, per batch": c.batch_size * seq * 2 * L * s.d_model * b * 2}
    prepare = T * n * (2 + DECODE_TOKENS) + T * 2 * n
    pool = c.pool_size * FAMILIES * T if (c.knockout or c.transfer) else 0
    # knockout at END reuses the clean prefix's cache: an ablation runs one token, 1/seq of a prompt forward
    curves = (_ks(s) * (1 + c.n_random) + 6) * (
        1 / seq if c.knockout_positions == "end" else 1 + 1 / seq if c.knockout_positions == "both" else 1
    )
    knockout = int(c.knockout_samples * (1 + curves) * (T + (T > 1))) if c.knockout else 0
    transfer = 3 * n if c.transfer else 0
    phases = {"load": load_terms(s), "patching": patching, "effects": effects}
    phases.update(
        {"pool means": means} if c.knockout or c.transfer else {}, **({"knockout": knock} if c.knockout else {})
    )
    return Estimate("identify", fixed, phases, prepare + pool + knockout + transfer, "--n-samples", c.device)


def analyze(s: Shape, c) -> Estimate:
    """Analyze: attention of every head (eager: the attention weights of every layer are returned) and the MLP
    projections, batch by batch over the reference samples."""
    fixed, b = fixed_terms(s, c)
    seq = PROMPT_TOKENS
    attn = {
        "forward": forward_bytes(s, c.batch_size, seq, b),
        "attention weights of every layer": c.batch_size * s.n_layers * s.n_heads * seq * seq * b,
        "per-head role table": c.n_samples * s.n_layers * s.n_heads * 12 * 8,
    }
    mlp = {
        "forward": forward_bytes(s, c.batch_size, seq, b),
        "MLP writes on W_U": c.batch_size * s.n_layers * (s.vocab + 2 * s.d_model) * 4,
    }
    return Estimate(
        "analyze",
        fixed,
        {"load": load_terms(s), "attention": attn, "mlp": mlp},
        3 * c.n_samples + s.n_layers,
        "--n-samples",
        c.device,
    )


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
    fixed, b = fixed_terms(s, c)
    n, L, H, d, dm = c.n_samples, s.n_layers, s.n_heads, s.d_model, s.d_mlp
    ends = {"END caches of X_r and X_c": end_cache_bytes(s, 2 * n, b)}
    caches = {**ends, "cache forward": forward_bytes(s, c.batch_size, PROMPT_TOKENS, b)}
    rows = min(n * c.ig_steps, max(c.ig_steps, ATTRIBUTION_ROWS))
    eap = {
        **ends,
        "saved for the backward": rows * L * (H * s.head_dim + 2 * d + 2 * dm) * 4,
        "gradients of every head's and MLP's END output": rows * L * (H * s.head_dim + d) * 4,
    }
    exact = {**ends, "patched batch": max(1, min(n, PATCH_ROWS // (L * (H + 2)))) * L * (H + 2) * (4 * dm + 7 * d) * b}
    l = L - 1  # the deepest receiver's layer, at most
    S, P = l * (H + 1), ROLE_TOKENS
    per = max((1 + P) * (1 + S), 1 + 9 * S)  # residual rows per sample in one chunk
    m = max(1, min(n, c.batch_size, UPSTREAM_ROWS // per))  # samples per chunk
    upstream = {
        **ends,
        "senders' residual rows entering each layer": m * (1 + P) * (l + (H + 1) * l * (l + 1) // 2) * d * b,
        "MLP rows of the senders, or the receiver's rows carried on": max(
            m * (1 + P) * (1 + S) * 3 * dm, m * (1 + 9 * S) * (d + 3 * dm)
        )
        * b,
    }
    forwards = 2 * n + 3 * n * (1 + c.ig_steps) + 2 * n + c.receivers * n * 9
    return Estimate(
        "beyond",
        fixed,
        {"load": load_terms(s), "caches": caches, "eap": eap, "exact": exact, "upstream": upstream},
        forwards,
        "--n-samples",
        c.device,
    )


def faithfulness(s: Shape, c, tasks: int = 4, n_boot: int = 1000, pool_size: int = 512, shots: int = 0) -> Estimate:
    """Faithfulness: the evaluation draw and identify's reference pool (its fold sums stay resident), then every
    circuit (top and random ones per ``n <= n_max``) at END: noising (mean, resample), denoising, the top's converse;
    then the cross-position circuit, its ``n_random`` layer-matched draws, two baselines and two sanity rows, each a
    whole forward per prompt and direction, plus X_r's and X_c's per-position values.
    The step passes identify's ``tasks``, ``n_boot``, ``pool_size``, ``shots``; without them, every task, defaults."""
    fixed, b = fixed_terms(s, c)
    n, L, H, d, seq = c.n_samples, s.n_layers, s.n_heads, s.d_model, seq_tokens(shots)
    circuits = c.n_max * (1 + c.n_random)
    ablations = 2 * (2 + circuits + c.n_max) + (2 + circuits)  # mean, resample (with converse); denoising
    groups = TEMPLATES * tasks // 4 + FAMILIES + 1  # (template, length) groups; family sums, all
    pool = {"reference-pool fold sums": groups * POOL_FOLDS * L * seq * (H * s.head_dim + d) * 4}
    draw = {
        **pool,
        "draw and check batch": forward_bytes(s, c.batch_size, seq, b),
        "mean activations, per batch": c.batch_size * seq * 2 * L * d * b * 2,
    }
    run = {
        **pool,
        "END values of X_r, X_c and the resample sources": 3 * n * L * (H * s.head_dim + d) * 4,
        "END logits of X_r and X_c": 2 * n * s.vocab * 4,
        "key/value caches": KNOCKOUT_TOKENS * L * 2 * s.n_kv_heads * s.head_dim * b,
        "ablated forward": forward_bytes(s, max(1, KNOCKOUT_TOKENS // seq), seq, b),
        "logits": KNOCKOUT_ROWS * s.vocab * 10,
        "LDs": 2 * ablations * n * 8,
        "bootstrap": bootstrap_bytes(n, n_boot, circuits),
    }
    prepare = tasks * n * (2 + DECODE_TOKENS) + pool_size * FAMILIES * tasks
    forwards = prepare + 6 * n + int(ablations * n / seq)  # an END ablation: 1/seq of a prompt forward
    forwards += 2 * n * (c.n_random + 5)  # the cross-position circuit (faithfulness_sites): whole forwards
    return Estimate(
        "faithfulness",
        fixed,
        {"load": load_terms(s), "draw and pool": draw, "circuits": run},
        forwards,
        "--n-samples",
        c.device,
    )


def stability(s: Shape, c) -> Estimate:
    """Stability: per kind and seed, identify's draw and patching at the largest size (no knockout)."""
    fixed, b = fixed_terms(s, c)
    n, L, H, seq = max(c.sizes), s.n_layers, s.n_heads, seq_tokens(c.shots)
    per = L * (H + 2)
    patching = {
        "END caches of X_r and X_c": end_cache_bytes(s, 2 * n, b),
        "patched batch": max(1, min(n, PATCH_ROWS // per)) * per * (4 * s.d_mlp + 7 * s.d_model) * b,
        "draw and check batch": forward_bytes(s, c.batch_size, seq, b),
    }
    runs = len(c.kinds) * c.seeds
    effects = {
        "patched results of every run": runs * n * L * (H + 1) * 4 * 8,
        "bootstrap": bootstrap_bytes(n, c.n_boot, L * (H + 1)),
    }
    return Estimate(
        "stability",
        fixed,
        {"load": load_terms(s), "patching": patching, "effects": effects},
        runs * n * 4,
        "--sizes",
        c.device,
    )


def _prompts(s: Shape, c, n: int, seq: int, batch: int, step: str, flag: str, forwards: int) -> Estimate:
    fixed, b = fixed_terms(s, c)
    return Estimate(
        step,
        fixed,
        {"load": load_terms(s), "forward": {"forward": forward_bytes(s, batch, seq, b), "scores": n * 64}},
        forwards,
        flag,
        c.device,
    )


def accuracy(s: Shape, c) -> Estimate:
    """Accuracy by template: one scored forward per prompt, in the methods' default batches of 64."""
    n = c.n_per_template * TEMPLATES
    return _prompts(s, c, n, PROMPT_TOKENS, 64, "accuracy", "--n-per-template", n)


def shots(s: Shape, c) -> Estimate:
    """Shots: identify's draw and checks on a validation draw for every K of the grid."""
    n = c.n_per_template * TEMPLATES
    return _prompts(
        s,
        c,
        n,
        seq_tokens(max(c.grid)),
        c.batch_size,
        "shots",
        "--n-per-template",
        sum(n * (2 + DECODE_TOKENS) + 2 * n for _ in c.grid),
    )


def _train(s: Shape, c, rows: int, trained: int, steps: int, step: str, flag: str, evals: int) -> Estimate:
    """Training: weights, gradients and AdamW's two moments of the trained parameters (float32), and a micro
    batch's activations kept for the backward (every layer's, plus the logits and their gradient)."""
    fixed, b = fixed_terms(s, c, train=True)
    seq = PROMPT_TOKENS + 8
    tokens = rows * seq
    acts = tokens * s.n_layers * (10 * s.d_model + 4 * s.d_mlp) * 4 + rows * s.n_layers * s.n_heads * seq * seq * 4 * 2
    train = {
        "gradients and AdamW moments": trained * 12,
        "activations kept for the backward": acts,
        "logits and their gradient": tokens * s.vocab * 4 * 3,
    }
    return Estimate(
        step,
        fixed,
        {"load": load_terms(s), "train": train, "evaluate": {"forward": forward_bytes(s, 64, PROMPT_TOKENS, b)}},
        steps * c.batch_size * 3 + evals,
        flag,
        c.device,
    )


def finetune(s: Shape, c) -> Estimate:
    """Finetune: full SFT trains every parameter; precise SFT the tuned heads' q/k/v/o slices (and MLPs)."""
    if c.mode == "full":
        trained = s.params
    else:
        k = int(c.heads[4:]) if c.heads.startswith("top-") else len(c.heads.split(","))
        trained = k * 4 * s.d_model * s.head_dim + c.mlps * 3 * s.d_model * s.d_mlp
    steps = c.max_steps if c.max_steps > 0 else math.ceil((c.n_train or 1024) * c.epochs / c.batch_size)
    return _train(s, c, c.micro_batch_size, trained, steps, "finetune", "--micro-batch-size", 2 * (c.limit or 500) * 4)


def confirm(s: Shape, c) -> Estimate:
    """The confirmation: one run at a time (each frees its model before the next), so the peak is full SFT's at the
    exploration's batch of 16 rows."""
    return _train(
        s,
        SimpleNamespace(device=c.device, dtype=c.dtype, batch_size=16),
        16,
        s.params,
        220,
        "confirm",
        "--model",
        2_000,
    )


def table1(s: Shape, c) -> Estimate:
    """Arms: one run at a time (each frees its model before the next), so the peak is full SFT's."""
    rates, extra = 3, max(0, c.frontier_seeds - len(c.seeds))  # a 3-rate grid; frontier rates: 2 per arm
    runs = 2 + 3 * (rates * len(c.seeds) + 2 * extra) + 2 * rates * c.draws
    steps = (c.steps or c.curve_steps) * runs
    return _train(s, c, c.batch_size, s.params, steps, "table1", "--batch-size", runs * 2_000)
