"""One prompt at a time (§5.2, Fig. 7, 16) and the prompt explorer's logic: type a prompt, optionally
its counterfactual, and see the top-5 next tokens, one head's END-row attention over the tokens
(an attention strip) and the per-layer number tokens closest to each MLP's write, with or without
the key heads knocked out.

Pure functions returning DataFrames; :mod:`arithmech.report.widgets` puts ipywidgets around them and
the book shows precomputed altair views of the same tables. A knockout is a context-manager
factory (``knockout() -> context``) active during a forward pass: :func:`mean_ablation`, with the
identify step's means of the counterfactual prompts (:mod:`arithmech.methods.knockout`).
"""
from __future__ import annotations

import itertools
from contextlib import nullcontext
from typing import Callable, Sequence

import pandas as pd
import torch

from arithmech.data import pairs as D
from arithmech.data import templates as T
from arithmech.methods.attention import Head, end_rows, role_labels
from arithmech.methods.mlp import layer_top_numbers
from arithmech.methods.knockout import POSITIONS, Means, group_key, mean_activations
from arithmech.core.models import arch_for, input_device
from arithmech.core.trace import TraceDict


# ------------------------------------------------------------------------------ one prompt's views
OPERATOR_WORDS = frozenset(w for ws in T.OPS.values() for w in ws)


def guess_positions(tokens: Sequence[str]) -> dict:
    """Roles for a free prompt (explorer, Fig. 7): first run of digit tokens → A, second → B,
    a token that is an operator symbol or word of the templates (``+``, ``plus``, ``sum`` ...) → operator."""
    pos: dict = {"A": [], "B": [], "operator": []}
    runs, prev = 0, False
    for i, t in enumerate(tokens):
        s = t.replace("▁", "").replace("Ġ", "").strip()
        digit = s.isdigit()
        if digit and not prev:
            runs += 1
        if digit and runs <= 2:
            pos["A" if runs == 1 else "B"].append(i)
        elif s.lower() in OPERATOR_WORDS:
            pos["operator"].append(i)
        prev = digit
    pos["end"] = len(tokens) - 1
    return pos


def attention_strip(model, tok, prompt: str, heads: Sequence[Head], positions: dict | None = None) -> pd.DataFrame:
    """Fig. 7 / 16: one prompt's END-row attention of ``heads`` over its tokens.

    Returns ``head, layer, position, token, role, score``; roles from ``positions`` (a Sample's)
    or guessed from the tokens (:func:`guess_positions`).
    """
    ids = torch.tensor([tok(prompt)["input_ids"]])
    toks = tok.convert_ids_to_tokens(ids[0].tolist())
    positions = positions or guess_positions(toks)
    roles = role_labels(positions, len(toks), int(ids[0, 0]) == tok.bos_token_id)
    rows = end_rows(model, ids, [l for l, _ in heads])
    return pd.DataFrame([(f"{l}.{h}", l, p, toks[p], roles[p], float(rows[l][0, h, p]))
                         for l, h in heads for p in range(len(toks))],
                        columns=["head", "layer", "position", "token", "role", "score"])



def strips(model, tok, heads: Sequence[Head], samples: Sequence[D.Sample] = (), templates: Sequence[str] | None = None,
           prompts: Sequence[str] = ()) -> pd.DataFrame:
    """Attention strips of ``heads`` on the first sample of each template (or of each of ``templates``;
    roles from the dataset) and on free ``prompts`` (roles guessed), with a ``sample`` label column."""
    first: dict[str, D.Sample] = {}
    for s in samples:
        if templates is None or s.template in templates:
            first.setdefault(s.template, s)
    items = [(f"{s.template}: {s.clean}", s.clean, s.positions) for s in first.values()]
    items += [(f"unseen: {p}", p, None) for p in prompts]
    if not items:
        raise ValueError("no strips to draw: pass samples (of the given templates) or prompts")
    return pd.concat([attention_strip(model, tok, p, heads, pos).assign(sample=label)
                      for label, p, pos in items], ignore_index=True)

# ---------------------------------------------------------------------------------------- knockout
def knockout_means(model, tok, samples: Sequence[D.Sample], batch_size: int = 64) -> Means:
    """Position-pooled mean head outputs over the samples' counterfactuals ``X_c`` (the identify step's
    :func:`~arithmech.methods.knockout.mean_activations`, then :meth:`~arithmech.methods.knockout.Means.pooled`): a free
    prompt has no ``X_c`` of its own, so position 0 gets the BOS mean and every later position the mean
    over all later positions."""
    return mean_activations(model, tok, [s.corrupt for s in samples], [group_key(s) for s in samples],
                            batch_size).pooled()


def mean_ablation(model, heads: Sequence[Head], means: Means, positions: str = "end") -> Callable[[], TraceDict]:
    """A context-manager factory that knocks ``heads`` out (§4.1): inside it, each head's slice of the
    o_proj input ``(batch, seq, H*dh)`` is replaced by its pooled ``X_c`` mean at the last position
    (``positions="end"``) or at every position (``"all"``), as :func:`~arithmech.methods.knockout.knockout_topk`
    does, but for any forward pass (strips, projections)."""
    if positions not in POSITIONS:
        raise ValueError(f"positions={positions!r}: use one of {POSITIONS}")
    arch = arch_for(model)
    n_heads = model.config.num_attention_heads
    by_layer: dict[str, tuple[int, list[int]]] = {}
    for l, h in heads:
        by_layer.setdefault(arch.path("o_proj", l), (l, []))[1].append(h)

    def edit(z, name):
        l, hs = by_layer[name]
        mean = means.lookup(None, z.shape[1])[0][l].unflatten(-1, (n_heads, -1))     # (seq, H, dh)
        zh = z.unflatten(-1, (n_heads, -1)).clone()
        at = slice(-1, None) if positions == "end" else slice(None)
        zh[:, at, hs] = mean[None, at, hs].to(z)
        return zh.flatten(-2)

    return lambda: TraceDict(model, list(by_layer), retain_output=False, edit_input=edit)


@torch.no_grad()
def top_next(model, tok, prompt: str, k: int = 5, edit: Callable | None = None) -> pd.DataFrame:
    """The ``k`` most likely next tokens: ``rank, token, prob``."""
    ids = torch.tensor([tok(prompt)["input_ids"]]).to(input_device(model))
    with (edit() if edit else nullcontext()):
        p = model(ids).logits[0, -1].float().softmax(-1).cpu()
    top = p.topk(k)
    return pd.DataFrame({"rank": range(1, k + 1), "token": tok.convert_ids_to_tokens(top.indices.tolist()),
                         "prob": top.values.tolist()})


def explore(model, tok, prompt: str, counterfactual: str | None = None, head: Head | None = None,
            knockout: Callable | None = None, k: int = 5) -> dict[str, pd.DataFrame]:
    """Everything the prompt explorer shows, as DataFrames (no widgets, no plotting).

    ``knockout``: a context-manager factory (e.g. :func:`mean_ablation`); when given, every
    table has an ``intact`` and a ``knockout`` condition. ``head``: ``(layer, head)`` whose
    END-row attention to show. Returns ``{"top", "numbers", "attention"}``, each with columns
    ``input`` (prompt / counterfactual) and ``condition`` in front.
    """
    inputs = {"prompt": prompt, **({"counterfactual": counterfactual} if counterfactual else {})}
    conds = {"intact": None, **({"knockout": knockout} if knockout else {})}
    out: dict[str, list] = {"top": [], "numbers": [], "attention": []}
    for (name, text), (cond, edit) in itertools.product(inputs.items(), conds.items()):
        tag = dict(input=name, condition=cond)
        out["top"].append(top_next(model, tok, text, k, edit).assign(**tag))
        out["numbers"].append(layer_top_numbers(model, tok, text, k=3, edit=edit).assign(**tag))
        if head is not None:
            with (edit() if edit else nullcontext()):
                out["attention"].append(attention_strip(model, tok, text, [head]).assign(**tag))
    return {key: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for key, v in out.items()}


def top_table(top: pd.DataFrame) -> pd.DataFrame:
    """:func:`explore`'s ``top`` as one column per (input, condition), cells like ``7 93.1%``."""
    cell = top.token + " " + (100 * top.prob).round(1).astype(str) + "%"
    return top.assign(cell=cell).pivot_table(index="rank", columns=["input", "condition"], values="cell",
                                             aggfunc="first")
