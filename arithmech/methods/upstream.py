"""Upstream path patching (head → head): which earlier senders feed a receiver head's query, key or value,
at END and at the operand and operator positions.

Identify measures each sender's direct path to the logits. Here a **receiver** (a key head ``l.h``)
and an earlier **sender** (head ``i.j`` or MLP ``i``, ``i < l``) are fixed, and the path is
``sender at P → (MLPs at P) → receiver's q, k or v input at P → receiver at END → (MLPs) → logits``;
nothing else moves. ``P`` is the **source position** of the path:

* ``END`` (the last prompt token): paths ``q``, ``k`` and ``v`` — the receiver's query, and its key and
  value of END itself;
* ``A``, ``operator``, ``B`` (the token positions of the first operand, the operator and the second
  operand, :attr:`arithmech.data.pairs.Sample.positions`, the roles of :mod:`arithmech.methods.attention`):
  paths ``k`` and ``v`` — the keys and values the receiver reads there (its query is END's only).

``X_r`` and ``X_c`` have the same token length, so a position means the same token slot in both and ``X_c``'s
activations are read at the clean prompt's indices. The counterfactual replaces the operator's words, and in
some templates a word beside them as well (the time-span sentences' "years" → "none"): paths through such
other changed tokens, through "=" and through the solved examples are not patched here — the positions are
END and the three roles, not every position. A role of several tokens (an operand "12" → "1", "2") is patched at all
its tokens at once; a role token at END belongs to the END paths; a sample whose role has no token has no such path
(NaN). Positions before the operator in ``X_c`` see the same tokens as in ``X_r``, so there the sender's
``X_c`` output equals its ``X_r`` output and the path is exactly 0 (``A`` in "3 + 5 =", not in "the sum
of 3 and 5 is"); at the operator the sender's change includes the token's own embedding difference,
which is the point of the path.

The two steps, for sender ``s`` and source position ``P``:

1. run ``X_r`` with the sender's output at ``P`` taken from ``X_c`` and every head at ``P`` from the
   sender's layer on frozen at its ``X_r`` value (MLPs live), so the residual at ``P`` changes by the
   sender through the MLPs at ``P`` only; read the receiver layer's q/k/v projections at ``P``;
2. run ``X_r`` clean, except that the receiver's query at END (path ``q``) or its key/value head's key
   (``k``) or value (``v``) at ``P`` is the one read in step 1; the receiver recomputes its attention at
   END (its other keys and values are clean), every other head at END from the receiver's layer on is
   frozen, MLPs live; the answer logit ``logit_p`` is compared with the clean ``logit_o`` (Algorithm 1's
   metric). Positions other than END reach the logits only through heads at END, which are frozen, so
   only the receiver's END output carries the path.

:func:`upstream_fast` computes all paths from activations at END and at the role positions: the senders'
residual rows through the MLPs per position (as :func:`~arithmech.methods.patching.path_patch_fast` at
END), the receiver's attention at END for all rows at once against the clean key/value cache with the
role positions' keys replaced (``k``) or the value change weighted by the clean attention (``v``: the
output is linear in the values), and the receiver's change carried to the logits through the MLPs
(:func:`arithmech.methods.chain.carry`). :func:`arithmech.methods.upstream_reference.upstream_reference`
does both steps literally with hooks on the model (the model's own attention, RoPE and GQA). They agree
to float rounding (``tests/parity/methods/test_upstream.py``).

Shapes: ``n`` samples; per receiver ``S`` senders (heads ``(i, j)`` and MLPs ``(i, H)`` with ``i < l``);
results ``(n, S, C)`` logit changes ``logit_p - logit_o``, the ``C`` columns of :data:`COLUMNS` (or
the first 3, the END paths, when no role positions are given).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

import pandas as pd
import torch

from arithmech.core.models import BATCH_SIZE, arch_for, geometry, input_device, module, weight
from arithmech.core.trace import TraceDict, head_contributions
from arithmech.data.batches import group_by_length
from arithmech.methods import chain
from arithmech.methods.patch_inputs import Inputs

SOURCE_ROLES = ("A", "operator", "B")  # role positions of the key/value paths, in this column order
COLUMNS = (("END", "q"), ("END", "k"), ("END", "v")) + tuple((r, p) for r in SOURCE_ROLES for p in ("k", "v"))
MAX_ROWS = 1 << 14  # upstream_fast: residual rows (samples x positions x senders, or x paths) per chunk
Head = tuple[int, int]
_SITES = {
    "z": ("o_proj", "in"),
    "attn_out": ("o_proj", "out"),
    "resid_pre": ("attn_norm", "in"),
    "mlp_out": ("mlp", "out"),
}


def senders_of(model, receiver: Head) -> list[Head]:
    """Every sender before the receiver's layer: heads ``(i, j)`` and MLPs ``(i, H)``, layer-major."""
    H = geometry(model).n_heads
    return [(i, j) for i in range(receiver[0]) for j in range(H + 1)]


def check(model, receivers: Sequence[Head]) -> None:
    """Receivers must be heads after layer 0 of a Llama-style attention (RoPE, no q/k norm)."""
    geo = geometry(model)
    L, H = geo.n_layers, geo.n_heads
    for l, h in receivers:
        if not (0 < l < L and 0 <= h < H):
            raise ValueError(f"receiver {l}.{h}: need a head of layers 1..{L - 1} (layer 0 has no earlier sender)")
    attn = module(model, arch_for(model), "attn", receivers[0][0]) if receivers else None
    if attn is not None and (hasattr(attn, "q_norm") or not hasattr(attn, "scaling")):
        raise ValueError("upstream patching supports Llama-style attention (RoPE, no q/k norm)")


def role_slots(roles: Sequence[dict], T: int) -> tuple[torch.Tensor, torch.Tensor, dict[str, slice]]:
    """The role positions of a batch of ``T``-token prompts as padded slots.

    ``roles[i]``: ``{"A": [positions], "operator": [...], "B": [...]}`` (BOS included, as
    :attr:`Sample.positions`). Returns ``where`` ``(b, P)`` token positions (padding: 0), ``valid``
    ``(b, P)`` and ``{role: slice of P}``; a role takes as many slots as its longest sample. END is left out."""
    where, valid, cols, start = [], [], {}, 0
    for r in SOURCE_ROLES:
        ps = [list(d.get(r, [])) for d in roles]
        if any(p < 0 or p >= T for q in ps for p in q):
            raise ValueError(f"role {r!r} has a position outside a {T}-token prompt: {ps}")
        ps = [[p for p in q if p < T - 1] for q in ps]
        m = max(map(len, ps), default=0)
        cols[r] = slice(start, start + m)
        start += m
        where.append(torch.tensor([q + [0] * (m - len(q)) for q in ps], dtype=torch.long).view(len(ps), m))
        mask = [[True] * len(q) + [False] * (m - len(q)) for q in ps]
        valid.append(torch.tensor(mask, dtype=torch.bool).view(len(ps), m))
    return torch.cat(where, 1), torch.cat(valid, 1), cols


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding at one position per row (rotate-half convention); x ``(b, R, dh)``, cos/sin ``(b, dh)``."""
    x1, x2 = x.chunk(2, -1)
    return x * cos[:, None] + torch.cat([-x2, x1], -1) * sin[:, None]


def _forward_at(model, ids: torch.Tensor, where: torch.Tensor | None, keys: Sequence[str], **kw):
    """One forward of ``ids`` ``(b, T)``; with ``where`` ``(b, P)``, the sites ``keys`` of :data:`_SITES`
    at those positions, every layer: ``{key: (b, P, L, width)}``. Returns ``(model output, that dict)``."""
    if where is None or not keys:
        return model(ids, **kw), {}
    arch, L = arch_for(model), geometry(model).n_layers
    site = {
        d: {arch.path(_SITES[k][0], i): (k, i) for k in keys if _SITES[k][1] == d for i in range(L)}
        for d in ("in", "out")
    }  # o_proj is read on both sides
    got: dict[str, list] = {k: [None] * L for k in keys}
    rows = torch.arange(ids.shape[0], device=ids.device)[:, None]

    def grab(d: str):
        def fn(x, name):
            k, i = site[d][name]
            t = x[0] if isinstance(x, tuple) else x
            got[k][i] = t[rows.to(t.device), where.to(t.device)].detach().clone()
            return x

        return fn

    with (
        TraceDict(model, site["in"], retain_output=False, edit_input=grab("in")),
        TraceDict(model, site["out"], retain_output=False, edit_output=grab("out")),
    ):
        out = model(ids, **kw)
    return out, {k: torch.stack(v, 2) for k, v in got.items()}


class _Group(NamedTuple):
    """The clean forward of one length group at the receivers' layers ``l``: ``pre[l]`` the keys and values before
    END ``(b, kv_heads, T-1, dh)`` each, ``rope[l]`` the rotary ``(cos, sin)`` at END ``(b, dh)`` each."""

    pre: dict
    rope: dict


class _End(NamedTuple):
    """A receiver's clean attention at END: ``scores`` ``(b, T)`` (last: END itself), their softmax ``probs``,
    the values before END ``V`` ``(b, T-1, dh)``, END's query ``q`` and value ``v`` ``(b, dh)``."""

    scores: torch.Tensor
    probs: torch.Tensor
    V: torch.Tensor
    q: torch.Tensor
    v: torch.Tensor


@torch.no_grad()
def upstream_fast(
    model, tok, inputs: Inputs, receivers: Sequence[Head], batch_size: int = BATCH_SIZE, max_rows: int = MAX_ROWS
) -> dict[Head, torch.Tensor]:
    """Exact upstream path patching of every sender into each receiver (module docstring).

    ``inputs`` (:class:`Inputs`): the X_r prompts, the END caches of them and their X_c, the answers; with the
    roles and the X_c prompts every column of :data:`COLUMNS`, without them the END paths only. Returns
    ``{receiver: (n, S, C) logit_p - logit_o}`` (senders as :func:`senders_of`).
    Per length group of prompts: one clean forward (the key/value cache, the rotary embedding, the clean
    activations at the role positions) and one X_c forward (its activations there); then for chunks of
    samples the senders' rows (``1 + l_max (H + 1)`` per sample and position) run through the MLPs up to
    the last receiver's layer, and each receiver's ``1 + 9 S`` rows (``1 + 3 S`` at END only) run its
    attention at END and the MLPs after it.
    """
    prompts, roles, corrupt_prompts = inputs.prompts, inputs.roles, inputs.corrupt_prompts
    receivers = [(r[0], r[1]) for r in receivers]
    check(model, receivers)
    arch, cfg = arch_for(model), model.config
    H = geometry(model).n_heads
    C = len(COLUMNS) if roles is not None else 3
    n = len(prompts)
    out = {r: torch.empty(n, len(senders_of(model, r)), C) for r in receivers}
    layers = sorted({l for l, _ in receivers})
    l_max = layers[-1]
    dev = input_device(model)
    inputs = replace(inputs, answer=inputs.answer.to(dev))
    pos: dict[int, tuple] = {}
    handles = [
        module(model, arch, "attn", l).register_forward_pre_hook(
            (lambda l: lambda m, a, kw: pos.__setitem__(l, kw["position_embeddings"]))(l),  # noqa: B023 (bound)
            with_kwargs=True,
        )
        for l in layers
    ]
    try:
        for idx, ids in group_by_length(tok, prompts, batch_size):
            T, b = ids.shape[1], len(idx)
            window = getattr(cfg, "sliding_window", None)
            if window is not None and T > window:
                raise ValueError(f"prompts of {T} tokens exceed the sliding window {window}")
            slots = role_slots([roles[i] for i in idx], T) if roles is not None else None
            where = slots[0].to(dev) if slots else None
            res, c_at = _forward_at(
                model, ids.to(dev), where, ("z", "attn_out", "resid_pre", "mlp_out"), logits_to_keep=1, use_cache=True
            )
            kv = res.cache
            pre = {l: (kv.layers[l].keys[:, :, :-1], kv.layers[l].values[:, :, :-1]) for l in layers}
            full = {l: tuple(t.expand(b, -1, -1) for t in pos[l]) for l in layers}  # (b, T, dh)
            rope = {l: tuple(t[:, -1] for t in full[l]) for l in layers}  # (b, dh) at END
            x_at = {}
            if slots and where is not None and corrupt_prompts is not None:  # (slots go with roles and X_c)
                x_ids = torch.tensor([tok(corrupt_prompts[i], add_special_tokens=True)["input_ids"] for i in idx])
                if x_ids.shape != ids.shape:
                    raise ValueError("X_c prompts must have the same token length as their X_r prompts")
                _, x_at = _forward_at(model, x_ids.to(dev), where, ("z", "mlp_out"), logits_to_keep=1, use_cache=False)
                ar = torch.arange(b, device=dev)[:, None]
                rope_at = {l: tuple(t[ar, where] for t in full[l]) for l in layers}  # (b, P, dh)
            idx_t = torch.tensor(idx)
            P = where.shape[1] if slots and where is not None else 0
            per = max((1 + P) * (1 + l_max * (H + 1)), 1 + len(COLUMNS) * l_max * (H + 1))
            chunk = max(1, max_rows // per)
            for c0 in range(0, b, chunk):
                loc = torch.arange(c0, min(b, c0 + chunk), device=dev)
                at = None
                if slots and where is not None:
                    at = dict(
                        clean={k: v[loc].flatten(0, 1) for k, v in c_at.items()},
                        corrupt={k: v[loc].flatten(0, 1) for k, v in x_at.items()},
                        where=where[loc],
                        valid=slots[1].to(dev)[loc],
                        cols=slots[2],
                        rope={l: tuple(t[loc].flatten(0, 1) for t in rope_at[l]) for l in layers},
                    )
                _chunk(model, inputs, receivers, idx_t[loc.cpu()].to(dev), loc, _Group(pre, rope), at, out)
    finally:
        for h in handles:
            h.remove()
    return out


def _senders(model, c: dict, x: dict, l_max: int) -> tuple[dict[int, torch.Tensor], torch.Tensor]:
    """The senders' residual rows at one position per row, through the MLPs (heads frozen, MLPs live).

    ``c``: clean ``resid_pre``, ``attn_out``, ``z``, ``mlp_out`` ``(m, L, width)``; ``x``: X_c ``z``,
    ``mlp_out``. Returns ``{k: (m, 1 + k (H + 1), d)}`` the residual entering layer ``k`` (row 0 clean, then
    one row per sender before ``k``) and ``same`` ``(m, 1 + l_max (H + 1))``: rows equal to the clean one."""
    arch, H = arch_for(model), geometry(model).n_heads
    state = c["resid_pre"][:, 0][:, None]  # (m, 1, d)
    same = [torch.zeros(len(state), 1, dtype=torch.bool, device=state.device)]
    snaps = {}
    for k in range(l_max):
        state = state + c["attn_out"][:, k][:, None]
        w_o = weight(module(model, arch, "o_proj", k))  # (d, H*dh)
        delta = head_contributions(x["z"][:, k] - c["z"][:, k], w_o, H)  # (m, H, d)
        state = torch.cat([state, state[:, :1] + delta], 1)
        state = chain.mlp_block(model, k, state)
        d_mlp = x["mlp_out"][:, k] - c["mlp_out"][:, k]
        state = torch.cat([state, (state[:, 0] + d_mlp)[:, None]], 1)
        same += [(delta == 0).all(-1), (d_mlp == 0).all(-1)[:, None]]
        snaps[k + 1] = state
    return snaps, torch.cat(same, 1)


def _chunk(model, inputs: Inputs, receivers, rows, loc, group: _Group, at, out) -> None:
    """One chunk of samples of one length group (see :func:`upstream_fast`; ``inputs.answer`` on the model's
    device): ``rows`` their indices among the samples, ``loc`` within the group; ``at``: the role positions'
    activations, slots and rotary embeddings of the chunk (None: END paths only). Writes ``out[rec][rows]``."""
    clean, corrupt, answer, pre, rope = inputs.clean, inputs.corrupt, inputs.answer, group.pre, group.rope
    arch, geo = arch_for(model), geometry(model)
    L, H = geo.n_layers, geo.n_heads
    dh = clean.z.shape[-1] // H
    l_max, b = max(l for l, _ in receivers), len(rows)
    end = lambda cache: {k: getattr(cache, k)[rows] for k in _SITES}
    snaps, same = _senders(model, end(clean), {k: getattr(corrupt, k)[rows] for k in ("z", "mlp_out")}, l_max)
    if at:
        snaps_at, same_at = _senders(model, at["clean"], at["corrupt"], l_max)
        same_at = same_at.view(b, -1, same_at.shape[-1])  # (b, P, 1 + l_max (H + 1))
    for rec in receivers:
        l, h = rec
        g, S = geo.kv_head(h), l * (H + 1)
        scaling: float = getattr(module(model, arch, "attn", l), "scaling")  # noqa: B009 (typed) 1/sqrt(dh)
        proj = lambda name, j, x: module(model, arch, name, l)(x)[..., j * dh : (j + 1) * dh]  # noqa: B023 (used at once)
        x = module(model, arch, "attn_norm", l)(snaps[l])  # (b, 1 + S, d)
        cos, sin = rope[l][0][loc], rope[l][1][loc]
        q, k, v = _rope(proj("q_proj", h, x), cos, sin), _rope(proj("k_proj", g, x), cos, sin), proj("v_proj", g, x)
        K, V = pre[l][0][loc, g], pre[l][1][loc, g]  # (b, T-1, dh)
        base = lambda t: t[:, :1].expand(-1, S, -1)  # noqa: B023 (used at once)
        qq = torch.cat([q[:, :1], q[:, 1:], base(q), base(q)], 1)  # rows: baseline, then q, k, v paths
        kk = torch.cat([k[:, :1], base(k), k[:, 1:], base(k)], 1)
        vv = torch.cat([v[:, :1], base(v), base(v), v[:, 1:]], 1)
        scores = torch.cat([torch.einsum("brd,btd->brt", qq, K), (qq * kk).sum(-1, keepdim=True)], -1) * scaling
        p = scores.float().softmax(-1).to(qq.dtype)
        zr = torch.einsum("brt,btd->brd", p[..., :-1], V) + p[..., -1:] * vv  # (b, 1 + 3S, dh)
        parts, masks = [zr[:, 1:] - zr[:, :1]], [same[:, None, 1 : S + 1].expand(-1, 3, -1)]
        if at:
            d, m = _at_roles(
                model, rec, snaps_at[l], same_at[..., 1 : S + 1], at, _End(scores[:, 0], p[:, 0], V, q[:, 0], v[:, 0])
            )
            parts, masks = parts + [d], masks + [m]
        dz = torch.cat(parts, 1)  # (b, C S, dh)
        w_o = weight(module(model, arch, "o_proj", l))[:, h * dh : (h + 1) * dh]
        r = clean.resid_mid[rows, l][:, None] + torch.cat([torch.zeros_like(dz[:, :1]), dz], 1) @ w_o.T
        frozen = {m: clean.attn_out[rows, m][:, None] for m in range(l + 1, L)}  # heads after l at END
        lg = chain.carry(model, r, answer[rows], first=l, attn=frozen)  # (b, 1 + C S)
        C = dz.shape[1] // S
        diff = (lg[:, 1:] - lg[:, :1]).view(b, C, S)
        mask = torch.cat(masks, 1)  # (b, C, S): True = exactly 0
        diff = torch.where(mask, torch.zeros_like(diff), diff)
        if at:  # a role without a token: NaN
            has = torch.stack([at["valid"][:, at["cols"][r]].any(1) for r in SOURCE_ROLES], 1).repeat_interleave(2, 1)
            diff[:, 3:] = torch.where(has[..., None], diff[:, 3:], torch.full_like(diff[:, 3:], float("nan")))
        out[rec][rows.cpu()] = diff.transpose(1, 2).float().cpu()


def _at_roles(model, rec, snap, same, at, end: _End) -> tuple[torch.Tensor, torch.Tensor]:
    """The receiver's END output change along each sender's k and v path at each role position.

    ``snap`` ``(b P, 1 + S, d)``: the senders' residual rows entering the receiver's layer at the role slots;
    ``same`` ``(b, P, S)``; ``end``: the receiver's clean attention at END (:class:`_End`).
    Returns the change of the receiver's END output ``(b, 6 S, dh)`` (roles × (k, v) × senders) and the
    mask ``(b, 6, S)`` of senders that change nothing at any of the role's tokens."""
    s0, p0, V, q0, v0 = end
    dh = q0.shape[-1]
    arch, l, (_, h) = arch_for(model), rec[0], rec
    geo = geometry(model)
    g, b, S = geo.kv_head(h), len(q0), snap.shape[1] - 1
    scaling: float = getattr(module(model, arch, "attn", l), "scaling")  # noqa: B009 (typed) 1/sqrt(dh)
    x = module(model, arch, "attn_norm", l)(snap)
    cos, sin = at["rope"][l]
    ks = _rope(module(model, arch, "k_proj", l)(x)[..., g * dh : (g + 1) * dh], cos, sin).view(b, -1, S + 1, dh)
    vs = module(model, arch, "v_proj", l)(x)[..., g * dh : (g + 1) * dh].view(b, -1, S + 1, dh)  # (b, P, 1 + S, dh)
    where, valid = at["where"], at["valid"]
    ar = torch.arange(b, device=where.device)
    dz, masks = [], []
    for r in SOURCE_ROLES:
        c = at["cols"][r]
        pos, val = where[:, c], valid[:, c]  # (b, m)
        sc = s0[:, None].repeat(1, S + 1, 1)  # (b, 1 + S, T): k path
        new = torch.einsum("bd,bmsd->bms", q0, ks[:, c]) * scaling  # (b, m, 1 + S)
        for j in range(pos.shape[1]):
            bi = ar[val[:, j]]
            sc[bi, :, pos[bi, j]] = new[bi, j]
        p = sc.float().softmax(-1).to(sc.dtype)
        zk = torch.einsum("bst,btd->bsd", p[..., :-1], V) + p[..., -1:] * v0[:, None]  # (b, 1 + S, dh)
        w = p0.gather(1, pos) * val  # (b, m): v path, linear
        zv = torch.einsum("bm,bmsd->bsd", w.to(vs.dtype), vs[:, c, 1:] - vs[:, c, :1])  # (b, S, dh)
        dz += [zk[:, 1:] - zk[:, :1], zv]
        m = (same[:, c] | ~val[..., None]).all(1)  # (b, S)
        masks += [m, m]
    return torch.cat(dz, 1), torch.stack(masks, 1)


def frame(res: dict[Head, torch.Tensor], logit_o: torch.Tensor, H: int) -> pd.DataFrame:
    """Rows ``receiver, receiver_layer, receiver_head, position, path, sender, sender_layer, sender_head,
    effect, effect_se, logit_diff, n``: per path (``position`` END, A, operator or B, as :data:`COLUMNS`) the
    mean relative effect ``(logit_p - logit_o) / logit_o`` over the ``n`` samples that have the path (a role
    without a token has none), its standard error, and the mean logit change (``sender_head = "mlp"`` for MLP
    senders)."""
    rows = []
    for (l, h), d in res.items():
        rel = (d / logit_o[:, None, None]).double()
        have = ~rel.isnan()  # (n, S, C)
        n = have.sum(0)
        mean, ld = rel.nansum(0) / n, d.double().nansum(0) / n
        var = ((rel - mean).nan_to_num(0.0) ** 2).sum(0) / (n - 1).clamp(min=1)
        se = torch.where(n > 1, (var / n).sqrt(), torch.full_like(var, float("nan")))
        for c in range(d.shape[1]):
            i, j = divmod(c, H + 1)
            for ci in range(d.shape[2]):
                position, path = COLUMNS[ci]
                rows.append(
                    {
                        "receiver": f"{l}.{h}",
                        "receiver_layer": l,
                        "receiver_head": h,
                        "position": position,
                        "path": path,
                        "sender": f"MLP {i}" if j == H else f"{i}.{j}",
                        "sender_layer": i,
                        "sender_head": "mlp" if j == H else str(j),
                        "effect": float(mean[c, ci]),
                        "effect_se": float(se[c, ci]),
                        "logit_diff": float(ld[c, ci]),
                        "n": int(n[c, ci]),
                    }
                )
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
