"""Attention by role (§4.2, §5.2, Fig. 5, 7, 16): what the key heads read at END.

A head's attention pattern is ``A ∈ R^{N×N}``; the paper
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

One prompt at a time (the attention strips of Fig. 7 / 16) lives in :mod:`arithmech.methods.explorer`;
the analyze step end to end in :mod:`arithmech.methods.analyze`.
"""
from __future__ import annotations

import itertools
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from arithmech.core.models import Arch, arch_for, input_device
from arithmech.core.trace import TraceDict
from arithmech.data import pairs as D

ROLES = ("A", "B", "operator", "bos", "other")
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
