"""What the MLPs write (§5.2, App. C, H; Fig. 6, 13, 14, 17): projections on W_U, stage layers.

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

The analyze step end to end is :func:`arithmech.analyze.run.run`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from contextlib import nullcontext

import numpy as np
import pandas as pd
import torch

from arithmech.core.models import arch_for, module, weight
from arithmech.data import pairs
from arithmech.data.batches import answer_ids
from arithmech.methods.patching import end_cache

MLP_QUANTITIES = ("in_A", "in_B", "in_C", "diff_A", "diff_B", "diff_C", "diff_other")


# --------------------------------------------------------------------------------- MLP projections
@functools.lru_cache(maxsize=4)
def number_tokens(tok, max_digits: int = 3) -> tuple[torch.Tensor, tuple[str, ...]]:
    """Ids and texts of every vocabulary token that is a number (``"7"``, ``"▁7"``, ``" 12"``); cached."""
    texts = tok.batch_decode([[i] for i in range(len(tok))])
    keep = [
        (i, t)
        for i, t in enumerate(texts)
        if t.strip().isdigit() and t.strip().isascii() and len(t.strip()) <= max_digits and i not in tok.all_special_ids
    ]
    return torch.tensor([i for i, _ in keep]), tuple(t for _, t in keep)


def _cos(v: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``v: (..., d)``, ``w: (V, d)`` → ``(..., V)`` cosine similarities."""
    return torch.nn.functional.normalize(v, dim=-1) @ torch.nn.functional.normalize(w, dim=-1).T


@torch.no_grad()
def mlp_vectors(
    model, tok, prompts: Sequence[str], final_norm: bool = True, batch_size: int = 64
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(MLP_in, MLP_out − MLP_in)`` at END, each ``(n, n_layers, d_model)``, float32, on CPU.

    ``MLP_in`` is the input of ``post_attention_layernorm`` (raw residual, ``resid_mid`` of the
    identify step's END cache); the difference is the MLP's output. With ``final_norm`` both go
    through the model's final norm (see the module docstring).
    """
    cache = end_cache(model, tok, prompts, batch_size=batch_size)
    vin, vdiff = cache.resid_mid, cache.mlp_out
    if final_norm:
        norm = module(model, arch_for(model), "final_norm")
        vin, vdiff = norm(vin), norm(vdiff)
    return vin.float().cpu(), vdiff.float().cpu()


def unembedding(model, ids: torch.Tensor | None = None) -> torch.Tensor:
    """``W_U`` rows ``ids`` (all rows when ``None``): ``(len(ids), d_model)`` float32 on CPU."""
    w = weight(module(model, arch_for(model), "unembed")).detach()
    return (w if ids is None else w[ids.to(w.device)]).float().cpu()


def _space(label: str) -> bool:
    return label[:1].isspace() or label[:1] in "▁Ġ"


def projection_samples(
    model, tok, samples: Sequence[pairs.Sample], final_norm: bool = True, batch_size: int = 64
) -> np.ndarray:
    """Per-sample cosines at END, ``(n, n_layers, 8)``: :data:`MLP_QUANTITIES` then ``in_other``, the MLP input's
    mean cosine with the other number tokens (those whose text differs from C's, written like C's token) — the
    operand curve's matched baseline, as ``diff_other`` is the answer curve's (:mod:`arithmech.methods.stages`)."""
    num_ids, num_labels = number_tokens(tok)
    vin, vdiff = mlp_vectors(model, tok, [s.clean for s in samples], final_norm, batch_size)  # (n, L, d)
    vin, vdiff = torch.nn.functional.normalize(vin, dim=-1), torch.nn.functional.normalize(vdiff, dim=-1)
    c_ids = answer_ids(tok, samples).tolist()
    abc = []
    for s, c in zip(samples, c_ids):
        ids = tok(s.clean)["input_ids"]
        abc.append([ids[s.positions["A"][0]], ids[s.positions["B"][0]], c])
    rows = torch.tensor(sorted(set(num_ids.tolist()) | {t for r in abc for t in r}))  # the W_U rows needed
    Wn = torch.nn.functional.normalize(unembedding(model, rows), dim=-1)  # (R, d) unit rows
    at = {int(t): j for j, t in enumerate(rows)}
    per = []
    for i, c in enumerate(c_ids):
        c_text = tok.decode([c])
        others = [
            at[int(t)]
            for t, lb in zip(num_ids, num_labels)
            if lb.strip() != c_text.strip() and _space(lb) == _space(c_text)
        ]
        mine = [at[t] for t in abc[i]]
        per.append(
            torch.cat(
                [
                    vin[i] @ Wn[mine].T,
                    vdiff[i] @ Wn[mine].T,
                    (vdiff[i] @ Wn[others].T).mean(-1, keepdim=True),
                    (vin[i] @ Wn[others].T).mean(-1, keepdim=True),
                ],
                -1,
            )
        )  # (L, 8)
    return torch.stack(per).numpy()


def mlp_projection(
    model, tok, samples: Sequence[pairs.Sample], final_norm: bool = True, batch_size: int = 64
) -> pd.DataFrame:
    """Per-layer cosines at END: mean, std and standard error over samples (Fig. 6a/b, 13, 14).

    Quantities: ``in_X = cos(MLP_in, W_U[X])`` and ``diff_X = cos(MLP_out − MLP_in, W_U[X])`` for
    X in A, B, C, and ``diff_other``: the mean cosine over the other number tokens (number tokens
    whose text differs from C's, written like C's token, i.e. with or without a leading space).
    W_U[A], W_U[B]: the prompt's token at A's / B's first position; W_U[C]: the answer token.
    Returns ``layer, quantity, value, std, sem``.
    """
    return projection_table(projection_samples(model, tok, samples, final_norm, batch_size))


def projection_table(per: np.ndarray) -> pd.DataFrame:
    """:func:`mlp_projection`'s table from :func:`projection_samples`' array (its :data:`MLP_QUANTITIES`)."""
    x = torch.from_numpy(per[..., : len(MLP_QUANTITIES)])
    mean, std = x.mean(0), x.std(0) if len(x) > 1 else torch.zeros_like(x[0])
    sem = std / len(x) ** 0.5
    return pd.DataFrame(
        [
            (l, q, float(mean[l, k]), float(std[l, k]), float(sem[l, k]))
            for l in range(x.shape[1])
            for k, q in enumerate(MLP_QUANTITIES)
        ],
        columns=["layer", "quantity", "value", "std", "sem"],
    )


def layer_top_numbers(
    model, tok, prompt: str, k: int = 5, final_norm: bool = True, which: str = "diff", edit: Callable | None = None
) -> pd.DataFrame:
    """Fig. 6c / App. H: the ``k`` number tokens closest (cosine) to ``MLP_out − MLP_in`` (``which="diff"``)
    or to ``MLP_in`` (``"in"``) at END, per layer. Same-text tokens ("7", "▁7") count once.

    ``edit``: an optional context-manager factory (e.g. a knockout) active during the forward.
    Returns ``layer, rank, token, cosine``.
    """
    with edit() if edit else nullcontext():
        vin, vdiff = mlp_vectors(model, tok, [prompt], final_norm)
    num_ids, labels = number_tokens(tok)
    cos = _cos((vdiff if which == "diff" else vin)[0], unembedding(model, num_ids))  # (L, V#)
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
    v = np.asarray(y, dtype=float)  # (L,)
    L = len(v)
    if L < 5:
        raise ValueError(f"breakpoints needs a curve over at least 5 layers, got {L}")
    x = np.arange(L) / (L - 1)
    knots = np.array(list(itertools.combinations(range(1, L - 1), 3))) / (L - 1)  # (T, 3)
    X = np.concatenate(
        [
            np.broadcast_to(np.stack([np.ones(L), x], -1), (len(knots), L, 2)),
            np.maximum(x[None, :, None] - knots[:, None, :], 0),
        ],
        -1,
    )  # (T, L, 5)
    Xt = X.transpose(0, 2, 1)
    beta = np.linalg.solve(Xt @ X, (Xt @ v)[..., None])  # (T, 5, 1)
    sse = (((X @ beta)[..., 0] - v) ** 2).sum(-1)  # (T,)
    best = int(np.flatnonzero(sse <= sse.min() + 1e-9 * max(1.0, float((v**2).sum())))[0])
    start, inflection, end = (int(round(k * (L - 1))) for k in knots[best])
    return start, inflection, end


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
