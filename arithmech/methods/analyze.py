"""Analyze (§4.2, §5.2, App. C, F, H): what the key heads attend to, what the MLPs write.

**Attention by role** (Fig. 5, 7, 16). A head's attention pattern is ``A ∈ R^{N×N}``; the paper
reads its last row, the Query END token against every Key token. With eager attention the
``self_attn`` module returns ``(out, weights)``, ``weights: (batch, n_heads, q, k)``, one row per
*query* head (under GQA the K/V head is shared by ``group`` query heads, ``Geometry.kv_head(h)``,
but each query head has its own softmax). A :class:`~arithmech.core.trace.TraceDict` callback keeps
only the END row, ``(batch, n_heads, seq)``. Each key position gets one role:

* ``A``, ``B``, ``operator``: the token positions the dataset stored with each sample;
* ``bos``: position 0 when it is the tokenizer's BOS. It is a role of its own, not "other":
  many heads *park* attention on BOS when they have nothing to do, and folding that mass into
  "other" would make an idle head look like one that reads the sentence;
* ``other``: everything else (words, "=", the END token itself).

The role score of one sample is the attention *mass* on the role (sum over its positions), so
the five roles of one row sum to 1. A head is labelled by the largest of operand = A + B,
operator, and rest = bos + other (mass, not per-token density: two operand tokens may win
over one operator token; the scores are reported beside the label so a reader can judge).

**MLP projections** (Fig. 6, 13, 14). In a pre-norm Llama layer ``h = x + attn(norm1(x))`` and
``out = h + mlp(norm2(h))``. Here ``MLP_in = h``, the raw residual stream *before*
``post_attention_layernorm``, and ``MLP_out = out``, the residual after the MLP added its write,
so ``MLP_out − MLP_in = mlp(norm2(h))`` is exactly what the MLP adds (the paper's "subtraction of
outputs and inputs of MLP"; it is only a clean difference when both live in residual
coordinates, the space ``W_U`` reads). Everything is read at END.

*Final norm before W_U: yes* (``final_norm=True``, the default). ``W_U`` never sees the residual
itself, only ``norm_f(v) = g ⊙ v / rms(v)``; the rms is a positive scalar that a cosine ignores,
so ``cos(norm_f(v), W_U[t]) = cos(g ⊙ v, W_U[t])``: the cosine between ``W_U[t]`` and the
direction in which ``v`` actually moves the logits (the logit lens). ``final_norm=False`` gives
the paper's literal formula ``cos(v, W_U[t])``; the two differ only by the learned gain ``g``.

**Start–inflection–end** (App. C: 13-18-28 for LLaMA2-7B): :func:`breakpoints` fits a
continuous piecewise-linear curve with three knots to a per-layer curve and returns the knots.

One prompt at a time (attention strips of Fig. 7 / 16, the prompt explorer, knockout) lives in
:mod:`arithmech.methods.explorer`; :func:`run` is the step end to end (``python -m arithmech analyze``).
"""
from __future__ import annotations

import functools
import itertools
import json
import platform
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from arithmech.core import results as R
from arithmech.data import pairs as D
from arithmech.core.models import Arch, arch_for, input_device, module
from arithmech.core.trace import TraceDict

ROLES = ("A", "B", "operator", "bos", "other")
MLP_QUANTITIES = ("in_A", "in_B", "in_C", "diff_A", "diff_B", "diff_C", "diff_other")
Head = tuple[int, int]


# ------------------------------------------------------------------------------ attention by role
def role_labels(positions: dict, seq_len: int, bos: bool = True) -> list[str]:
    """Role of every key position ``0..seq_len-1`` (see module docstring); A/B/operator win over bos."""
    out = ["bos" if (bos and i == 0) else "other" for i in range(seq_len)]
    for role in ("operator", "B", "A"):
        for p in positions.get(role, []):
            out[p] = role
    return out


def role_mass(rows: torch.Tensor, roles: Sequence[Sequence[str]]) -> torch.Tensor:
    """Attention mass per role. ``rows: (n, H, seq)`` END rows, ``roles[i]``: seq labels of sample i.

    Returns ``(n, H, len(ROLES))``; it sums to the row sums (1 for a softmax row).
    """
    onehot = torch.tensor([[[r == role for role in ROLES] for r in rs] for rs in roles],
                          dtype=rows.dtype, device=rows.device)          # (n, seq, R)
    return torch.einsum("nhs,nsr->nhr", rows, onehot)


@torch.no_grad()
def end_rows(model, ids: torch.Tensor, layers: Iterable[int], arch: Arch | None = None) -> dict[int, torch.Tensor]:
    """END-row attention weights ``{layer: (batch, n_heads, seq)}`` of one forward on ``ids (batch, seq)``.

    Needs eager attention (``load_model(..., attn_implementation="eager")``): sdpa returns no weights.
    """
    arch = arch or arch_for(model)
    layers = sorted(set(layers))
    names = {arch.path("attn", l): l for l in layers}
    rows: dict[int, torch.Tensor] = {}

    def keep(out, name):
        if out[1] is None:
            raise ValueError("the attention module returned no weights: load the model with "
                             "attn_implementation='eager' (sdpa and flash attention do not return them)")
        rows[names[name]] = out[1][:, :, -1].float().cpu()
        return out

    with TraceDict(model, list(names), retain_output=False, edit_output=keep, stop=True):
        model(ids.to(input_device(model)))
    return rows


def attention_by_role(model, tok, samples: Sequence[D.Sample], layers: Iterable[int] | None = None,
                      batch_size: int = 64) -> pd.DataFrame:
    """Mean END-row attention mass per role of every head of ``layers`` (default: all), per task.

    Returns a long DataFrame ``layer, head, role, mean_score, kv_head, task, n``; ``task`` is each
    sample's operation plus ``"all"`` (Fig. 5 has one panel per operation).
    """
    from arithmech.core.models import Geometry
    geo = Geometry.from_config(model.config)
    layers = list(range(geo.n_layers)) if layers is None else sorted(set(layers))
    has_bos = tok.bos_token_id is not None
    n = len(samples)
    mass = torch.zeros(n, len(layers), geo.n_heads, len(ROLES))
    for idx, ids in D.group_by_length(tok, [s.clean for s in samples], batch_size):
        rows = end_rows(model, ids, layers)
        bos = has_bos and int(ids[0, 0]) == tok.bos_token_id
        roles = [role_labels(samples[i].positions, ids.shape[1], bos) for i in idx]
        for j, l in enumerate(layers):
            mass[idx, j] = role_mass(rows[l], roles)
    out = []
    ops = np.array([s.op for s in samples])
    for task in ["all"] + sorted(set(ops)):
        sel = torch.from_numpy(np.ones(n, bool) if task == "all" else ops == task)
        m = mass[sel].mean(0)                                                   # (L, H, R)
        for (j, l), h, (r, role) in itertools.product(enumerate(layers), range(geo.n_heads), enumerate(ROLES)):
            out.append((l, h, role, float(m[j, h, r]), geo.kv_head(h), task, int(sel.sum())))
    return pd.DataFrame(out, columns=["layer", "head", "role", "mean_score", "kv_head", "task", "n"])


def label_heads(roles: pd.DataFrame, heads: Sequence[Head] | None = None, task: str = "all") -> pd.DataFrame:
    """One row per head: ``operand`` (A+B), ``operator``, ``rest`` (bos+other) masses and the ``label``."""
    df = roles[roles.task == task].pivot_table(index=["layer", "head", "kv_head"], columns="role",
                                               values="mean_score").reset_index()
    if heads is not None:
        order = {h: i for i, h in enumerate(heads)}
        df = df[[(l, h) in order for l, h in zip(df["layer"], df["head"])]]
        df = df.assign(rank=[order[(l, h)] for l, h in zip(df["layer"], df["head"])]).sort_values("rank")
    df = df.assign(operand=df.A + df.B, rest=df.bos + df.other)
    groups = df[["operand", "operator", "rest"]].to_numpy()
    df["label"] = np.array(["operand", "operator", "other"])[groups.argmax(1)]
    df.insert(0, "name", [f"{l}.{h}" for l, h in zip(df["layer"], df["head"])])
    return df.reset_index(drop=True)


def heads_of_kind(roles: pd.DataFrame, key_heads: Sequence[Head], kind: str, k: int = 3) -> list[Head]:
    """The key heads labelled ``kind`` (operand / operator), or, when none is, the ``k`` heads of the
    whole model with the most attention mass of that kind (for the strips of Fig. 7 / Fig. 16)."""
    every = label_heads(roles)
    mine = label_heads(roles, key_heads)
    pick = mine[mine.label == kind] if (mine.label == kind).any() else every.nlargest(k, kind)
    return [(int(l), int(h)) for l, h in zip(pick["layer"], pick["head"])]


# --------------------------------------------------------------------------------- MLP projections
@functools.lru_cache(maxsize=4)
def number_tokens(tok, max_digits: int = 3) -> tuple[torch.Tensor, tuple[str, ...]]:
    """Ids and texts of every vocabulary token that is a number (``"7"``, ``"▁7"``, ``" 12"``); cached."""
    texts = tok.batch_decode([[i] for i in range(len(tok))])
    keep = [(i, t) for i, t in enumerate(texts) if t.strip().isdigit() and t.strip().isascii()
            and len(t.strip()) <= max_digits and i not in tok.all_special_ids]
    return torch.tensor([i for i, _ in keep]), tuple(t for _, t in keep)


def _cos(v: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``v: (..., d)``, ``w: (V, d)`` → ``(..., V)`` cosine similarities."""
    return torch.nn.functional.normalize(v, dim=-1) @ torch.nn.functional.normalize(w, dim=-1).T


@torch.no_grad()
def mlp_vectors(model, tok, prompts: Sequence[str], final_norm: bool = True,
                batch_size: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """``(MLP_in, MLP_out − MLP_in)`` at END, each ``(n, n_layers, d_model)``, float32, on CPU.

    ``MLP_in`` is the input of ``post_attention_layernorm`` (raw residual, ``resid_mid`` of the
    identify step's END cache); the difference is the MLP's output. With ``final_norm`` both go
    through the model's final norm (see the module docstring).
    """
    from arithmech.methods.patching import end_cache
    cache = end_cache(model, tok, prompts, batch_size=batch_size)
    vin, vdiff = cache.resid_mid, cache.mlp_out
    if final_norm:
        norm = module(model, arch_for(model), "final_norm")
        vin, vdiff = norm(vin), norm(vdiff)
    return vin.float().cpu(), vdiff.float().cpu()


def unembedding(model, ids: torch.Tensor | None = None) -> torch.Tensor:
    """``W_U`` rows ``ids`` (all rows when ``None``): ``(len(ids), d_model)`` float32 on CPU."""
    w = module(model, arch_for(model), "unembed").weight.detach()
    return (w if ids is None else w[ids.to(w.device)]).float().cpu()


def _space(label: str) -> bool:
    return label[:1].isspace() or label[:1] in "▁Ġ"


def mlp_projection(model, tok, samples: Sequence[D.Sample], final_norm: bool = True,
                   batch_size: int = 64) -> pd.DataFrame:
    """Per-layer cosines at END: mean, std and standard error over samples (Fig. 6a/b, 13, 14).

    Quantities: ``in_X = cos(MLP_in, W_U[X])`` and ``diff_X = cos(MLP_out − MLP_in, W_U[X])`` for
    X in A, B, C, and ``diff_other``: the mean cosine over the other number tokens (number tokens
    whose text differs from C's, written like C's token, i.e. with or without a leading space).
    W_U[A], W_U[B]: the prompt's token at A's / B's first position; W_U[C]: the answer token.
    Returns ``layer, quantity, value, std, sem``.
    """
    num_ids, num_labels = number_tokens(tok)
    vin, vdiff = mlp_vectors(model, tok, [s.clean for s in samples], final_norm, batch_size)  # (n, L, d)
    vin, vdiff = torch.nn.functional.normalize(vin, dim=-1), torch.nn.functional.normalize(vdiff, dim=-1)
    c_ids = D.answer_ids(tok, samples).tolist()
    abc = []
    for s, c in zip(samples, c_ids):
        ids = tok(s.clean)["input_ids"]
        abc.append([ids[s.positions["A"][0]], ids[s.positions["B"][0]], c])
    rows = torch.tensor(sorted(set(num_ids.tolist()) | {t for r in abc for t in r}))     # the W_U rows needed
    Wn = torch.nn.functional.normalize(unembedding(model, rows), dim=-1)                  # (R, d) unit rows
    at = {int(t): j for j, t in enumerate(rows)}
    per = []
    for i, c in enumerate(c_ids):
        c_text = tok.decode([c])
        others = [at[int(t)] for t, lb in zip(num_ids, num_labels)
                  if lb.strip() != c_text.strip() and _space(lb) == _space(c_text)]
        mine = [at[t] for t in abc[i]]
        per.append(torch.cat([vin[i] @ Wn[mine].T, vdiff[i] @ Wn[mine].T,
                              (vdiff[i] @ Wn[others].T).mean(-1, keepdim=True)], -1))     # (L, 7)
    x = torch.stack(per)                                                                 # (n, L, 7)
    mean, std = x.mean(0), x.std(0) if len(samples) > 1 else torch.zeros_like(x[0])
    sem = std / len(samples) ** 0.5
    return pd.DataFrame([(l, q, float(mean[l, k]), float(std[l, k]), float(sem[l, k])) for l in range(x.shape[1])
                         for k, q in enumerate(MLP_QUANTITIES)], columns=["layer", "quantity", "value", "std", "sem"])


def layer_top_numbers(model, tok, prompt: str, k: int = 5, final_norm: bool = True, which: str = "diff",
                      edit: Callable | None = None) -> pd.DataFrame:
    """Fig. 6c / App. H: the ``k`` number tokens closest (cosine) to ``MLP_out − MLP_in`` (``which="diff"``)
    or to ``MLP_in`` (``"in"``) at END, per layer. Same-text tokens ("7", "▁7") count once.

    ``edit``: an optional context-manager factory (e.g. a knockout) active during the forward.
    Returns ``layer, rank, token, cosine``.
    """
    with (edit() if edit else nullcontext()):
        vin, vdiff = mlp_vectors(model, tok, [prompt], final_norm)
    num_ids, labels = number_tokens(tok)
    cos = _cos((vdiff if which == "diff" else vin)[0], unembedding(model, num_ids))   # (L, V#)
    rows = []
    for l in range(cos.shape[0]):
        best: dict[str, float] = {}
        for lab, c in zip(labels, cos[l].tolist()):
            best[lab.strip()] = max(c, best.get(lab.strip(), -2.0))
        for r, (lab, c) in enumerate(sorted(best.items(), key=lambda t: -t[1])[:k]):
            rows.append((l, r + 1, lab, c))
    return pd.DataFrame(rows, columns=["layer", "rank", "token", "cosine"])


def breakpoints(y: Sequence[float]) -> tuple[int, int, int]:
    """Start, inflection and end layer of a per-layer curve (App. C).

    Rule: least-squares fit of a *continuous piecewise-linear* curve with knots ``s < i < e``
    (basis ``1, x, (x−s)+, (x−i)+, (x−e)+``) over every integer triple in ``1..L−2``; the best
    triple is returned, the first one in lexicographic order on ties. For a rise-then-fall curve
    (Fig. 13) the knots are where the rise starts, the peak, and where the fall ends; for a
    flat-then-rising curve (Fig. 14) where it leaves the plateau, where the slope changes, and
    where it stops changing. Needs at least 5 layers.
    """
    y = np.asarray(y, dtype=float)
    L = len(y)
    if L < 5:
        raise ValueError(f"breakpoints needs a curve over at least 5 layers, got {L}")
    x = np.arange(L) / (L - 1)
    knots = np.array(list(itertools.combinations(range(1, L - 1), 3))) / (L - 1)          # (T, 3)
    X = np.concatenate([np.broadcast_to(np.stack([np.ones(L), x], -1), (len(knots), L, 2)),
                        np.maximum(x[None, :, None] - knots[:, None, :], 0)], -1)       # (T, L, 5)
    Xt = X.transpose(0, 2, 1)
    beta = np.linalg.solve(Xt @ X, (Xt @ y)[..., None])                                  # (T, 5, 1)
    sse = (((X @ beta)[..., 0] - y) ** 2).sum(-1)                                        # (T,)
    best = int(np.flatnonzero(sse <= sse.min() + 1e-9 * max(1.0, float((y ** 2).sum())))[0])
    return tuple(int(round(k * (L - 1))) for k in knots[best])


def stage_layers(mlp: pd.DataFrame) -> dict[str, tuple[int, int, int]]:
    """Start-inflection-end of the operand curve (mean of in_A, in_B; Fig. 13) and of diff_C (Fig. 14)."""
    w = mlp.pivot(index="layer", columns="quantity", values="value").sort_index()
    return {"operands": breakpoints((w.in_A + w.in_B) / 2), "answer": breakpoints(w.diff_C)}


# ------------------------------------------------------------------------------------- App. H
def ripple_carry(a: int, b: int, bits: int = 3) -> pd.DataFrame:
    """App. H / Fig. 17: a binary ripple-carry adder on ``a + b``, one row per full-adder step
    (least significant bit first): ``step, a_bit, b_bit, carry_in, sum_bit, carry_out, partial``;
    ``partial`` is the value of the result bits known so far (3 + 4: 1, 3, 7)."""
    rows, carry, partial = [], 0, 0
    for i in range(bits):
        x, y = (a >> i) & 1, (b >> i) & 1
        s, c = x ^ y ^ carry, (x & y) | (carry & (x ^ y))
        partial |= s << i
        rows.append((i + 1, x, y, carry, s, c, partial))
        carry = c
    return pd.DataFrame(rows, columns=["step", "a_bit", "b_bit", "carry_in", "sum_bit", "carry_out", "partial"])


# ------------------------------------------------------------------------------ results and CLI
def load_key_heads(folder: str | Path) -> list[Head]:
    """Key heads from ``key_heads.json`` (written by identify, checked by the results contract), ranked."""
    rows = R.read(folder, "key_heads.json")["heads"]
    try:
        return [(int(r["layer"]), int(r["head"])) for r in rows]
    except (TypeError, KeyError, ValueError):
        raise R.ResultsError(f"{Path(folder) / 'key_heads.json'}: each head needs integer 'layer' and 'head'; "
                             "re-run python -m arithmech identify") from None


def reference_samples(folder: Path, n: int, seed: int) -> list[D.Sample]:
    """``n`` reference samples (X_r) from identify's ``prompts.jsonl``: a seeded subset when there are more."""
    samples = R.samples(folder)
    if not samples:
        raise ValueError(f"{folder / 'prompts.jsonl'} holds no prompts the model answers right; nothing to analyze")
    rng = np.random.default_rng(seed)
    return [samples[i] for i in sorted(rng.permutation(len(samples))[:n])]


def run(model: str = "embedded", results: str | Path = "results", n_samples: int = 256, seed: int = 0,
        device: str = "cpu", dtype: str = "float32", prompt: str = "4 + 3 =", final_norm: bool = True,
        batch_size: int = 64, overwrite: bool = False) -> dict:
    """The analyze step end to end on identify's files in ``results`` (the root or the model's folder):
    writes ``attention_roles.csv``, ``mlp_projection.csv``, ``top_numbers.csv``, ``analyze.json`` and the
    ``analyze`` record of ``run.json``. Identify must have run (its files are checked before the model loads).

    Returns a dict with the loaded ``model``, ``tok``, ``geometry``, ``samples``, ``key_heads``,
    the DataFrames ``roles``, ``labels``, ``mlp``, ``top`` and the ``stages`` found.
    """
    import transformers

    from arithmech.core.models import load_model
    if n_samples < 1:
        raise ValueError(f"n_samples={n_samples}: need at least one sample")
    folder = R.model_folder(results, model)
    R.check_writable(folder, "analyze", overwrite)
    heads = load_key_heads(folder)
    if not heads:
        raise ValueError(f"{folder / 'key_heads.json'} lists no key heads: rerun identify with a higher --threshold")
    samples = reference_samples(folder, n_samples, seed)
    t0 = time.time()
    net, tok, geo = load_model(model, device=device, dtype=dtype, attn_implementation="eager")
    roles = attention_by_role(net, tok, samples, batch_size=batch_size)
    labels = label_heads(roles, heads)
    mlp = mlp_projection(net, tok, samples, final_norm=final_norm, batch_size=batch_size)
    stages = stage_layers(mlp) if geo.n_layers >= 5 else {}
    top = layer_top_numbers(net, tok, prompt, k=5, final_norm=final_norm)
    summary = {"key_heads": labels[["name", "label", "operand", "operator", "rest", "kv_head"]].to_dict("records"),
               "stages": {k: list(v) for k, v in stages.items()}, "final_norm": final_norm, "prompt": prompt,
               "n_samples": len(samples)}
    R.write_step(folder, "analyze", {"attention_roles.csv": roles, "mlp_projection.csv": mlp,
                                     "top_numbers.csv": top.assign(prompt=prompt), "analyze.json": summary}, {
        "parameters": dict(model=model, n_samples=n_samples, seed=seed, device=device, dtype=dtype,
                           prompt=prompt, final_norm=final_norm, batch_size=batch_size),
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                     "pandas": pd.__version__, "transformers": transformers.__version__},
        "wall_s": round(time.time() - t0, 2), "peak_memory": R.peak_memory()})
    return dict(model=net, tok=tok, geometry=geo, samples=samples, key_heads=heads, roles=roles,
                labels=labels, mlp=mlp, top=top, stages=stages, folder=folder, summary=summary)


def _cli(a) -> None:
    r = run(model=a.model, results=a.results, n_samples=a.n_samples, seed=a.seed, device=a.device,
            dtype=a.dtype, prompt=a.prompt, final_norm=not a.no_final_norm, overwrite=a.overwrite)
    print(r["labels"][["name", "label", "operand", "operator", "rest"]].to_string(index=False))
    print("start-inflection-end:", r["stages"])
    print(f"wrote {r['folder']}/attention_roles.csv, mlp_projection.csv, top_numbers.csv, analyze.json")


def add_cli(subparsers, name: str = "analyze") -> None:
    from arithmech.cli import common_arguments
    s = subparsers.add_parser("analyze", help="attention of key heads by role, MLP projections on W_U (§5.2); "
                              "reads identify's files")
    common_arguments(s, n_samples=256)
    s.add_argument("--prompt", default="4 + 3 =", help="prompt of the layer-by-layer top-token table (Fig. 6c)")
    s.add_argument("--no-final-norm", action="store_true", help="project without the final norm's gain")
    s.set_defaults(func=_cli)
