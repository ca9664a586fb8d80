"""The literal reference of upstream path patching: the two steps of :mod:`arithmech.methods.upstream`, with hooks.

Nothing here is computed from caches of another method: per batch of equal-length prompts one hooked
forward of ``X_r`` and one of ``X_c`` record every layer's head outputs (o_proj input ``z``, ``(b, T, H dh)``)
and MLP outputs (``(b, T, d)``) at every position, and the clean answer logit ``logit_o``. Then per sender
and source position ``P`` (END, or one role's tokens):

1. one forward of ``X_r``: the sender's output at ``P`` set to its ``X_c`` value, every head at ``P`` from
   the sender's layer on set to its ``X_r`` value (the sender's own slice excepted), MLPs live; the
   receiver layers' q/k/v projection outputs ``(b, T, width)`` are recorded;
2. per later receiver and path one forward of ``X_r``: the receiver's q (at END), or its key/value
   head's k or v projection at ``P``, replaced by the recorded one; every head at END from the receiver's
   layer on set to its ``X_r`` value except the receiver, which recomputes (the model's own attention,
   RoPE and GQA); the answer logit minus ``logit_o``.

That is ``1 + 3`` forwards per sender for step 1 and ``3 + 6`` per sender × later receiver for step 2, per
batch — far slower than :func:`arithmech.methods.upstream.upstream_fast`; it exists to check it
(``tests/parity/methods/test_upstream.py``, ``benchmarks/bench_upstream.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from arithmech.core.models import BATCH_SIZE, arch_for, geometry, input_device
from arithmech.core.trace import TraceDict
from arithmech.data.batches import group_by_length
from arithmech.methods.patch_inputs import Inputs
from arithmech.methods.upstream import COLUMNS, SOURCE_ROLES, Head, check, senders_of


def _where(roles: Sequence[dict] | None, idx: list[int], T: int) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Per source position, ``(batch rows, token positions)`` of its tokens: END is ``T - 1`` of every row; a
    role's tokens before END (a role token at END belongs to the END paths)."""
    out = {"END": (torch.arange(len(idx)), torch.full((len(idx),), T - 1))}
    for r in SOURCE_ROLES if roles is not None else ():
        pairs = (
            [(b, p) for b, i in enumerate(idx) for p in roles[i].get(r, []) if p < T - 1] if roles is not None else []
        )
        out[r] = (
            torch.tensor([b for b, _ in pairs], dtype=torch.long),
            torch.tensor([p for _, p in pairs], dtype=torch.long),
        )
    return out


@torch.no_grad()
def upstream_reference(  # noqa: C901, PLR0915 (the literal reference, written out in one piece)
    model,
    tok,
    inputs: Inputs,
    receivers: Sequence[Head],
    batch_size: int = BATCH_SIZE,
    senders: Sequence[Head] | None = None,
) -> dict[Head, torch.Tensor]:
    """The module docstring's steps, literally, on ``inputs`` (:class:`~arithmech.methods.patch_inputs.Inputs`,
    as :func:`~arithmech.methods.upstream.upstream_fast` takes it): its X_r prompts, X_c prompts (needed: the
    reference records X_c itself), answers ``(n,)`` and roles; its END caches are not read. ``senders`` limits the
    scan (the others stay NaN). Returns ``{receiver: (n, S, C) logit_p - logit_o}``, columns as
    :data:`arithmech.methods.upstream.COLUMNS`; a role without a token: NaN.

    >>> ref = upstream_reference(model, tok, Inputs(clean_p, c, x, ans, corrupt_prompts=corrupt_p, roles=roles),
    ...                          [(3, 2)], senders=[(0, 1), (1, 8)])          # {(3, 2): (n, S, len(COLUMNS))}
    """
    if inputs.corrupt_prompts is None:
        raise ValueError("upstream_reference runs X_c itself: give Inputs its corrupt_prompts and roles")
    prompts, corrupt_prompts, answer, roles = inputs.prompts, inputs.corrupt_prompts, inputs.answer, inputs.roles
    receivers = [(r[0], r[1]) for r in receivers]
    check(model, receivers)
    arch, geo = arch_for(model), geometry(model)
    L, H, dh = geo.n_layers, geo.n_heads, geo.head_dim
    C = len(COLUMNS) if roles is not None else 3
    n = len(prompts)
    layers = sorted({l for l, _ in receivers})
    todo = sorted(set(senders) if senders is not None else {s for r in receivers for s in senders_of(model, r)})
    out = {r: torch.full((n, len(senders_of(model, r)), C), float("nan")) for r in receivers}
    dev = input_device(model)
    o_name = arch.head_sites(range(L))
    mlp_name = arch.mlp_sites(range(L))
    proj_name = {arch.path(f"{p}_proj", l): (l, p) for l in layers for p in "qkv"}
    st: dict = {}

    def edit_z(x, name):
        k = o_name[name]
        if st["mode"] == "record":
            st["z"][k] = x.clone()
            return x
        if k < st["from"]:
            return x
        bi, ti = st["at"]
        live = st.get("live")
        keep = x[:, -1, live[1] * dh : (live[1] + 1) * dh].clone() if live and k == live[0] else None
        x = x.clone()
        x[bi, ti] = st["clean_z"][k][bi, ti]  # every head at the position: X_r
        s = st.get("sender")
        if s and k == s[0] and s[1] < H:
            x[bi, ti, s[1] * dh : (s[1] + 1) * dh] = st["corrupt_z"][k][bi, ti, s[1] * dh : (s[1] + 1) * dh]
        if keep is not None:  # the receiver recomputes at END
            x[:, -1, live[1] * dh : (live[1] + 1) * dh] = keep
        return x

    def edit_mlp(y, name):
        k = mlp_name[name]
        if st["mode"] == "record":
            st["mlp"][k] = y.clone()
            return y
        s = st.get("sender")
        if not s or s[1] != H or k != s[0]:
            return y
        bi, ti = st["at"]
        y = y.clone()
        y[bi, ti] = st["corrupt_mlp"][k][bi, ti]
        return y

    def edit_proj(y, name):
        l, p = proj_name[name]
        if st["mode"] == "step1":
            st["rec"][(l, p)] = y.clone()
        elif st["mode"] == "step2" and (l, p) == (st["live"][0], st["path"]):
            j = st["live"][1] if p == "q" else geo.kv_head(st["live"][1])
            bi, ti = st["replace_at"]
            y = y.clone()
            y[bi, ti, j * dh : (j + 1) * dh] = st["got"][(l, p)][bi, ti, j * dh : (j + 1) * dh]
        return y

    def record(ids):
        st.update(mode="record", z={}, mlp={})
        lg = model(ids, logits_to_keep=1, use_cache=False).logits[:, -1].float()
        return lg, st["z"], st["mlp"]

    with (
        TraceDict(model, list(o_name), retain_output=False, edit_input=edit_z),
        TraceDict(model, list(mlp_name), retain_output=False, edit_output=edit_mlp),
        TraceDict(model, list(proj_name), retain_output=False, edit_output=edit_proj),
    ):
        for idx, ids in group_by_length(tok, prompts, batch_size):
            ids = ids.to(dev)
            x_ids = torch.tensor([tok(corrupt_prompts[i], add_special_tokens=True)["input_ids"] for i in idx]).to(dev)
            if x_ids.shape != ids.shape:
                raise ValueError("X_c prompts must have the same token length as their X_r prompts")
            a = answer[idx].to(dev)
            lg, clean_z, _ = record(ids)
            logit_o = lg.gather(1, a[:, None])[:, 0]
            _, corrupt_z, corrupt_mlp = record(x_ids)
            st.update(clean_z=clean_z, corrupt_z=corrupt_z, corrupt_mlp=corrupt_mlp)
            at = _where(roles, idx, ids.shape[1])
            for s in todo:
                for where, (bi, ti) in at.items():
                    if len(bi) == 0:
                        continue
                    bi, ti = bi.to(dev), ti.to(dev)
                    st.update(mode="step1", sender=s, live=None, at=(bi, ti), rec={}, **{"from": s[0]})
                    model(ids, logits_to_keep=1, use_cache=False)
                    got = st["rec"]
                    for rec in receivers:
                        if s[0] >= rec[0]:
                            continue
                        col = senders_of(model, rec).index(s)
                        for c, (position, path) in enumerate(COLUMNS[:C]):
                            if position != where:
                                continue
                            end = tuple(t.to(dev) for t in at["END"])
                            st.update(
                                mode="step2",
                                sender=None,
                                live=rec,
                                path=path,
                                got=got,
                                replace_at=(bi, ti),
                                at=end,
                                **{"from": rec[0]},
                            )
                            lg = model(ids, logits_to_keep=1, use_cache=False).logits[:, -1].float()
                            d = (lg.gather(1, a[:, None])[:, 0] - logit_o).cpu()
                            has = torch.zeros(len(idx), dtype=torch.bool)
                            has[bi.cpu()] = True
                            out[rec][torch.tensor(idx)[has], col, c] = d[has]
    return out
