"""Upstream path patching (head → head): which earlier senders feed a receiver head's query, key or value.

Identify measures each sender's direct path to the logits. Here a **receiver** (a key head ``l.h``)
and an earlier **sender** (head ``i.j`` or MLP ``i``, ``i < l``) are fixed, and the path is
``sender → (MLPs) → receiver's q, k or v input → receiver → (MLPs) → logits``; nothing else moves.
As in identify, only END changes (the sender is patched at END, every head at END is frozen):

1. run ``X_r`` with the sender's END output taken from ``X_c``, every head at END from layer ``i`` on
   frozen at its ``X_r`` value, MLPs live; read the receiver layer's q/k/v projections at END;
2. run ``X_r`` clean, except that the receiver's query (path ``q``), or its key/value head's END key
   (``k``) or value (``v``) is the one read in step 1; the receiver recomputes its attention at END
   (the other positions' keys and values are clean), every other head at END is frozen, MLPs live;
   the answer logit ``logit_p`` is compared with the clean ``logit_o`` (Algorithm 1's metric).

Under the END-only rule the key and value paths move only END's own key and value (the receiver
still reads the clean keys and values of the earlier positions), so a sender reaches a receiver
mostly through its query. Paths through earlier positions are outside this (and identify's) scope.

:func:`upstream_reference` does both steps literally with hooks on the model (one forward per
sender for step 1, one per sender × receiver × path for step 2; the model's own attention, RoPE and
GQA). :func:`upstream_fast` computes the same numbers from END caches: the senders' residual rows
through the MLPs (as :func:`~arithmech.methods.patching.path_patch_fast`), the receiver's attention
at END for all rows at once against the clean prefix's key/value cache, and the receiver's change
carried to the logits through the MLPs (the END chain, :func:`arithmech.methods.chain.carry`). They
agree to float rounding (``tests/parity``).

Shapes: ``n`` samples; per receiver ``S`` senders (heads ``(i, j)`` and MLPs ``(i, H)`` with ``i < l``);
results ``(n, S, 3)`` logit changes, paths in the order ``q, k, v``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import torch

from arithmech.core.models import BATCH_SIZE, Geometry, arch_for, input_device, module
from arithmech.core.trace import TraceDict, head_contributions
from arithmech.data.pairs import group_by_length
from arithmech.methods import chain
from arithmech.methods.patching import EndCache

PATHS = ("q", "k", "v")
MAX_ROWS = 1 << 14          # upstream_fast: rows (samples x senders x paths) per chunk
Head = tuple[int, int]


def senders_of(model, receiver: Head) -> list[Head]:
    """Every sender before the receiver's layer: heads ``(i, j)`` and MLPs ``(i, H)``, layer-major."""
    H = model.config.num_attention_heads
    return [(i, j) for i in range(receiver[0]) for j in range(H + 1)]


def _check(model, receivers: Sequence[Head]) -> None:
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    for l, h in receivers:
        if not (0 < l < L and 0 <= h < H):
            raise ValueError(f"receiver {l}.{h}: need a head of layers 1..{L - 1} (layer 0 has no earlier sender)")
    attn = module(model, arch_for(model), "attn", receivers[0][0]) if receivers else None
    if attn is not None and (hasattr(attn, "q_norm") or not hasattr(attn, "scaling")):
        raise ValueError("upstream patching supports Llama-style attention (RoPE, no q/k norm)")


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding at END (rotate-half convention); x ``(b, R, dh)``, cos/sin ``(b, dh)``."""
    x1, x2 = x.chunk(2, -1)
    return x * cos[:, None] + torch.cat([-x2, x1], -1) * sin[:, None]


@torch.no_grad()
def upstream_fast(model, tok, prompts: Sequence[str], clean: EndCache, corrupt: EndCache, answer: torch.Tensor,
                  receivers: Sequence[Head], batch_size: int = BATCH_SIZE,
                  max_rows: int = MAX_ROWS) -> dict[Head, torch.Tensor]:
    """Exact upstream path patching of every sender into each receiver's q, k and v at END.

    Returns ``{receiver: (n, S, 3) logit_p - logit_o}`` (senders as :func:`senders_of`, paths q, k, v).
    Per length group of prompts: one clean forward for the prefix key/value cache and the rotary
    embedding at END; then for chunks of samples the senders' rows (``1 + l_max (H + 1)`` per sample)
    run through the MLPs up to the last receiver's layer, and each receiver's ``1 + 3 S`` rows run
    its attention at END and the MLPs after it.
    """
    receivers = [tuple(r) for r in receivers]
    _check(model, receivers)
    arch, cfg = arch_for(model), model.config
    H = cfg.num_attention_heads
    dh = clean.z.shape[-1] // H
    n = len(prompts)
    out = {r: torch.empty(n, len(senders_of(model, r)), 3) for r in receivers}
    layers = sorted({l for l, _ in receivers})
    l_max = layers[-1]
    dev = input_device(model)
    answer = answer.to(dev)
    pos: dict[int, tuple] = {}
    handles = [module(model, arch, "attn", l).register_forward_pre_hook(
        (lambda l: lambda m, a, kw: pos.__setitem__(l, kw["position_embeddings"]))(l), with_kwargs=True) for l in layers]
    try:
        groups = list(group_by_length(tok, prompts, batch_size))
        for idx, ids in groups:
            T = ids.shape[1]
            window = getattr(cfg, "sliding_window", None)
            if window is not None and T > window:
                raise ValueError(f"prompts of {T} tokens exceed the sliding window {window}")
            kv = model(ids.to(dev), logits_to_keep=1, use_cache=True).cache
            pre = {l: (kv.layers[l].keys[:, :, :-1], kv.layers[l].values[:, :, :-1]) for l in layers}
            rope = {l: tuple(t[:, -1].expand(len(idx), -1) for t in pos[l]) for l in layers}   # (b, dh)
            idx_t = torch.tensor(idx)
            chunk = max(1, max_rows // (1 + 3 * l_max * (H + 1)))
            for c0 in range(0, len(idx), chunk):
                loc = torch.arange(c0, min(len(idx), c0 + chunk))
                rows = idx_t[loc].to(dev)
                _chunk(model, clean, corrupt, answer, receivers, rows, loc.to(dev), pre, rope, out, H, dh, l_max)
    finally:
        for h in handles:
            h.remove()
    return out


def _chunk(model, clean, corrupt, answer, receivers, rows, loc, pre, rope, out, H, dh, l_max) -> None:
    """One chunk of samples of one length group (see :func:`upstream_fast`)."""
    arch, L, geo = arch_for(model), model.config.num_hidden_layers, Geometry.from_config(model.config)
    state = clean.resid_pre[rows, 0][:, None]                                   # (b, 1, d): the baseline row
    same = [torch.zeros(len(rows), 1, dtype=torch.bool, device=rows.device)]   # rows equal to the baseline
    snaps = {}
    for k in range(l_max):
        state = state + clean.attn_out[rows, k][:, None]
        w_o = module(model, arch, "o_proj", k).weight
        delta = head_contributions(corrupt.z[rows, k] - clean.z[rows, k], w_o, H)       # (b, H, d)
        state = torch.cat([state, state[:, :1] + delta], 1)
        state = chain.mlp_block(model, k, state)
        d_mlp = corrupt.mlp_out[rows, k] - clean.mlp_out[rows, k]
        state = torch.cat([state, (state[:, 0] + d_mlp)[:, None]], 1)
        same += [(delta == 0).all(-1), (d_mlp == 0).all(-1)[:, None]]
        snaps[k + 1] = state
    same = torch.cat(same, 1)                                                    # (b, 1 + l_max (H + 1))
    for rec in receivers:
        l, h = rec
        g = geo.kv_head(h)
        S = l * (H + 1)
        x = module(model, arch, "attn_norm", l)(snaps[l])                        # (b, 1 + S, d)
        attn = module(model, arch, "attn", l)
        proj = lambda name, j: module(model, arch, name, l)(x)[..., j * dh:(j + 1) * dh]
        cos, sin = rope[l][0][loc], rope[l][1][loc]
        q, k, v = _rope(proj("q_proj", h), cos, sin), _rope(proj("k_proj", g), cos, sin), proj("v_proj", g)
        K, V = pre[l][0][loc, g], pre[l][1][loc, g]                              # (b, T-1, dh)
        base = lambda t: t[:, :1].expand(-1, S, -1)
        qq = torch.cat([q[:, :1], q[:, 1:], base(q), base(q)], 1)               # rows: baseline, then q, k, v paths
        kk = torch.cat([k[:, :1], base(k), k[:, 1:], base(k)], 1)
        vv = torch.cat([v[:, :1], base(v), base(v), v[:, 1:]], 1)
        s_pre = torch.einsum("brd,btd->brt", qq, K) * attn.scaling
        s_end = (qq * kk).sum(-1, keepdim=True) * attn.scaling
        p = torch.cat([s_pre, s_end], -1).float().softmax(-1).to(qq.dtype)
        zr = torch.einsum("brt,btd->brd", p[..., :-1], V) + p[..., -1:] * vv     # (b, 1 + 3S, dh)
        w_o = module(model, arch, "o_proj", l).weight[:, h * dh:(h + 1) * dh]
        r = clean.resid_mid[rows, l][:, None] + (zr - zr[:, :1]) @ w_o.T
        frozen = {m: clean.attn_out[rows, m][:, None] for m in range(l + 1, L)}   # heads after l at END
        lg = chain.carry(model, r, answer[rows], first=l, attn=frozen)             # (b, 1 + 3S)
        diff = (lg[:, 1:] - lg[:, :1]).view(len(rows), 3, S).transpose(1, 2)     # (b, S, 3)
        diff = torch.where(same[:, 1:S + 1, None], torch.zeros_like(diff), diff)  # unchanged sender: exactly 0
        out[rec][rows.cpu()] = diff.float().cpu()


@torch.no_grad()
def upstream_reference(model, tok, prompts: Sequence[str], clean: EndCache, corrupt: EndCache, answer: torch.Tensor,
                       receivers: Sequence[Head], batch_size: int = BATCH_SIZE,
                       senders: Sequence[Head] | None = None) -> dict[Head, torch.Tensor]:
    """The two steps of the module docstring, literally, with hooks: one forward per sender (step 1)
    and one per sender × receiver × path (step 2). ``senders`` limits the scan (the others stay NaN).
    Returns ``{receiver: (n, S, 3) logit_p - logit_o}`` with ``logit_o`` the model's clean logit."""
    receivers = [tuple(r) for r in receivers]
    _check(model, receivers)
    arch, cfg = arch_for(model), model.config
    L, H, geo = cfg.num_hidden_layers, cfg.num_attention_heads, Geometry.from_config(cfg)
    dh = clean.z.shape[-1] // H
    n = len(prompts)
    layers = sorted({l for l, _ in receivers})
    todo = sorted(set(senders) if senders is not None else {s for r in receivers for s in senders_of(model, r)})
    out = {r: torch.full((n, len(senders_of(model, r)), 3), float("nan")) for r in receivers}
    batches = list(group_by_length(tok, prompts, batch_size))
    dev = input_device(model)
    o_name = {arch.path("o_proj", i): i for i in range(L)}
    mlp_name = {arch.path("mlp", i): i for i in range(L)}
    proj_name = {arch.path(f"{p}_proj", l): (l, p) for l in layers for p in PATHS}
    st: dict = {}

    def edit_z(x, name):                       # step 1: sender patched, heads from its layer on frozen
        k = o_name[name]                       # step 2: heads from the receiver's layer on frozen, but it
        if k < st["from"]:
            return x
        x = x.clone()
        x[:, -1] = clean.z[st["idx"], k].to(x.device)
        if st.get("sender") and k == st["sender"][0] and st["sender"][1] < H:
            j = st["sender"][1]
            x[:, -1, j * dh:(j + 1) * dh] = corrupt.z[st["idx"], k, j * dh:(j + 1) * dh].to(x.device)
        if st.get("live") and k == st["live"][0]:
            j = st["live"][1]
            x[:, -1, j * dh:(j + 1) * dh] = st["z_live"][:, j * dh:(j + 1) * dh]
        return x

    def edit_mlp(y, name):
        s = st.get("sender")
        if not s or s[1] != H or mlp_name[name] != s[0]:
            return y
        y = y.clone()
        y[:, -1] = corrupt.mlp_out[st["idx"], s[0]].to(y.device)
        return y

    def edit_proj(y, name):
        l, p = proj_name[name]
        if st["mode"] == "record":
            st["rec"][(l, p)] = y[:, -1].clone()
        elif st["mode"] == "replay" and (l, p) == (st["live"][0], st["path"]):
            y = y.clone()
            j = st["live"][1] if p == "q" else geo.kv_head(st["live"][1])
            y[:, -1, j * dh:(j + 1) * dh] = st["got"][(l, p)][:, j * dh:(j + 1) * dh]
        return y

    def grab_o(x, name):                       # the live receiver's o_proj input, before freezing
        if st["mode"] == "replay" and o_name[name] == st["live"][0]:
            st["z_live"] = x[:, -1].clone()
        return edit_z(x, name)

    with TraceDict(model, list(o_name), retain_output=False, edit_input=grab_o), \
            TraceDict(model, list(mlp_name), retain_output=False, edit_output=edit_mlp), \
            TraceDict(model, list(proj_name), retain_output=False, edit_output=edit_proj):
        for s in todo:
            for idx, ids in batches:
                st.update(idx=torch.tensor(idx), sender=s, live=None, mode="record", rec={}, **{"from": s[0]})
                model(ids.to(dev), logits_to_keep=1, use_cache=False)
                got = st["rec"]
                for rec in receivers:
                    if s[0] >= rec[0]:
                        continue
                    col = senders_of(model, rec).index(s)
                    for c, p in enumerate(PATHS):
                        st.update(sender=None, live=rec, path=p, mode="replay", got=got, **{"from": rec[0]})
                        lg = model(ids.to(dev), logits_to_keep=1, use_cache=False).logits[:, -1].float()
                        a = answer[idx].to(lg.device)
                        out[rec][idx, col, c] = (lg.gather(1, a[:, None])[:, 0] - clean.answer_logit[idx].to(lg.device)).cpu()
    return out


def frame(res: dict[Head, torch.Tensor], logit_o: torch.Tensor, H: int) -> pd.DataFrame:
    """Rows ``receiver, receiver_layer, receiver_head, path, sender, sender_layer, sender_head, effect,
    effect_se, logit_diff, n``: mean relative effect ``(logit_p - logit_o) / logit_o`` over samples, its
    standard error, and the mean logit change (``sender_head = "mlp"`` for MLP senders)."""
    rows = []
    for (l, h), d in res.items():
        n = d.shape[0]
        rel = d / logit_o[:, None, None]
        mean, se, ld = rel.mean(0), rel.std(0) / np.sqrt(n) if n > 1 else torch.full_like(rel[0], float("nan")), d.mean(0)
        for c in range(d.shape[1]):
            i, j = divmod(c, H + 1)
            sh = "mlp" if j == H else str(j)
            for pi, p in enumerate(PATHS):
                rows.append({"receiver": f"{l}.{h}", "receiver_layer": l, "receiver_head": h, "path": p,
                             "sender": f"MLP {i}" if j == H else f"{i}.{j}", "sender_layer": i, "sender_head": sh,
                             "effect": float(mean[c, pi]), "effect_se": float(se[c, pi]),
                             "logit_diff": float(ld[c, pi]), "n": n})
    return pd.DataFrame(rows)


def receivers_from(effects: pd.DataFrame, key_heads: dict, k: int) -> tuple[list[Head], str]:
    """The top-``k`` receivers and where they come from: the key heads (ranked) after layer 0 where any
    pass the threshold, else the ``k`` heads of most negative effect after layer 0 (a head of layer 0 has
    no earlier sender)."""
    heads = [(int(r["layer"]), int(r["head"])) for r in key_heads.get("heads", []) if int(r["layer"]) > 0]
    if heads:
        return heads[:k], "key heads"
    d = effects[(effects["task"] == key_heads["task"]) & (effects["head"] != "mlp")]
    d = d.sort_values(["effect", "layer", "head"], kind="stable")
    heads = [(int(l), int(h)) for l, h in zip(d["layer"], d["head"]) if int(l) > 0]
    return heads[:k], "top heads by effect (no key head after layer 0)"
