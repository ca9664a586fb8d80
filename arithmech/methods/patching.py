"""Path patching sender → logits (paper §4.1, Algorithm 1, App. B): two implementations, one answer.

For a sender node *n* (head ``i.j`` or MLP ``i``) the patched run is the reference run ``X_r`` in
which

* *n*'s output at the END position takes its value on the counterfactual ``X_c``;
* every attention head at END in the layers after *n* (and the other heads of layer ``i``) is
  frozen at its ``X_r`` value;
* the MLPs recompute, so the change reaches the logits through the residual stream and the
  MLPs only (the paths ``n → MLPs → logits`` of App. B).

Only END changes: heads read other positions, which stay clean, and every head at END is frozen.
So the patched logits follow from the clean END residual stream alone — that is the **fast**
method (default). With ``r_mid[i]`` the clean residual before MLP ``i``, ``a[k]`` the clean
attention output of layer ``k`` and ``z`` the o_proj input (the heads' outputs before ``W_O``)::

    r = r_mid[i] + W_O[i][:, head j] @ (z_c[i, j] - z_r[i, j])     # the sender's change
    r = r + MLP_i(norm_i(r))                                      # MLP i recomputes
    for k > i:  r = r + a[k];  r = r + MLP_k(norm_k(r))           # frozen heads, live MLPs
    logit = final_norm(r) @ W_U[{C}]                               # the answer row only

computed for all heads × samples at once (the END chain of :mod:`arithmech.methods.chain`: the
model's own norm and MLP modules; any o_proj bias cancels in the difference). The **reference**
method does what Algorithm 1 says, literally: one hooked forward per sender, batched over samples.
Both agree to float rounding (``tests/parity/methods/test_patching.py``; ``benchmarks/bench_patching.py``).

Each run also keeps the logit of ``X_c``'s own answer ``answer_c`` (the model's top-1 at END of ``X_c``).
With ``LD = logit({C}) - logit(answer_c)``, a sender's *share* of the counterfactual's effect is
``mean(LD(patched) - LD(X_r)) / mean(LD(X_r) - LD(X_c))`` over prompts (:meth:`Patched.share`; interval in
:mod:`arithmech.methods.effects`): −1 carries the whole effect, 0 none, on any model's logit scale.

Shapes: ``n`` samples, ``L`` layers, ``H`` query heads, ``dh`` head size, ``d`` model width.
Results are ``(n, L, H + 1)`` with index ``H`` = the MLP of that layer, held in a
:class:`~arithmech.methods.patched.Patched` (:mod:`arithmech.methods.patched`, with its relative change and share).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from arithmech.core.models import BATCH_SIZE, arch_for, geometry, input_device, module, weight
from arithmech.core.prefix import SharedPrefix
from arithmech.core.trace import TraceDict, head_contributions
from arithmech.data.batches import group_by_length
from arithmech.methods import chain
from arithmech.methods.patch_inputs import EndCache, Inputs
from arithmech.methods.patched import Patched

MAX_ROWS = 1 << 13  # fast path: rows of the running END state per chunk of samples
MAX_LOGITS = 1 << 24  # fast path with prob=True: full-vocabulary logits held at once
METHODS = ("fast", "reference")  # path_patch's implementations (one answer, see the module docstring)


# ----------------------------------------------------------------------------------- END caches
_SITES = {
    "z": ("o_proj", "in"),
    "attn_out": ("o_proj", "out"),
    "resid_pre": ("attn_norm", "in"),
    "resid_mid": ("mlp_norm", "in"),
    "mlp_out": ("mlp", "out"),
}


@torch.no_grad()
def end_cache(
    model, tok, prompts: Sequence[str], answer: torch.Tensor | None = None, batch_size: int = BATCH_SIZE
) -> EndCache:
    """Run ``prompts`` in equal-length batches (no padding) and keep the END activations.

    Each distinct prompt runs once, so equal prompts get bit-identical rows (whatever the batch
    composition and the BLAS threading would otherwise do to the last bits). A batch whose prompts share
    solved examples runs them once (:class:`arithmech.core.prefix.SharedPrefix`): END is read after them.
    """
    arch, L = arch_for(model), geometry(model).n_layers
    site = {
        d: {arch.path(m, i): (key, i) for key, (m, dd) in _SITES.items() if dd == d for i in range(L)}
        for d in ("in", "out")
    }
    got: dict[str, dict[int, torch.Tensor]] = {k: {} for k in _SITES}

    def grab(direction: str):
        def fn(x, name):
            key, i = site[direction][name]
            got[key][i] = (x[0] if isinstance(x, tuple) else x)[:, -1].detach().clone()
            return x

        return fn

    uniq = list(dict.fromkeys(prompts))
    where = {p: i for i, p in enumerate(uniq)}
    inv = torch.tensor([where[p] for p in prompts])  # row -> distinct prompt
    rows_of: list[list[int]] = [[] for _ in uniq]
    for r, u in enumerate(inv.tolist()):
        rows_of[u].append(r)
    store: dict[str, list] = {}
    order = []
    answer_logit = torch.empty(len(prompts))  # kept only with answer ids
    dev = input_device(model)
    batches = [(idx, ids.to(dev)) for idx, ids in group_by_length(tok, uniq, batch_size)]
    shared = SharedPrefix(model, [ids for _, ids in batches])  # few-shot prefixes, run before any hook
    with (
        TraceDict(model, site["in"], retain_output=False, edit_input=grab("in")),
        TraceDict(model, site["out"], retain_output=False, edit_output=grab("out")),
    ):
        for idx, ids in batches:
            logits = shared.forward(ids, logits_to_keep=1, use_cache=False).logits[:, -1].float()
            order.append(torch.tensor(idx))
            for key in _SITES:
                store.setdefault(key, []).append(torch.stack([got[key][i] for i in range(L)], 1))
            if answer is not None:
                rows = [r for u in idx for r in rows_of[u]]
                at = torch.tensor([j for j, u in enumerate(idx) for _ in rows_of[u]], device=logits.device)
                answer_logit[rows] = logits[at, answer[rows].to(logits.device)].cpu()
                store.setdefault("logsumexp", []).append(logits.logsumexp(-1))
                store.setdefault("logit_std", []).append(logits.std(-1))
                store.setdefault("top1", []).append(logits.argmax(-1))
    if not order:
        raise ValueError("no prompts to run")
    perm = torch.cat(order).argsort()
    out = {}
    for key in list(store):  # pop: each field's batches are freed once it is assembled
        parts = store.pop(key)
        out[key] = torch.cat([p.to(parts[0].device) for p in parts])[perm.to(parts[0].device)][inv.to(parts[0].device)]
    return EndCache(**out, answer_logit=answer_logit if answer is not None else None)


def counter_fields(model, clean: EndCache, corrupt: EndCache, answer: torch.Tensor) -> dict:
    """``counter``, ``ld_r``, ``ld_c`` of :class:`Patched`, one computation for both methods: ``answer_c`` is
    the model's top-1 at END of ``X_c`` (``corrupt.top1``, kept by :func:`end_cache` when given answer ids;
    else the argmax of the cached final residual's logits, ``MAX_LOGITS`` at a time); ``LD = logit(answer_r) -
    logit(answer_c)`` on ``X_r`` and ``X_c`` from each cache's final END residual (:func:`chain.final_logits`)."""
    final = lambda c: c.resid_mid[:, -1] + c.mlp_out[:, -1]  # (n, d) END residual after the last MLP
    rows = max(1, MAX_LOGITS // model.config.vocab_size)
    counter = (
        corrupt.top1.cpu()
        if corrupt.top1 is not None
        else torch.cat([chain.final_logits(model, r).argmax(-1) for r in final(corrupt).split(rows)])
    )
    ld = lambda c: chain.final_logits(model, final(c), answer) - chain.final_logits(model, final(c), counter)
    return {"counter": counter, "ld_r": ld(clean), "ld_c": ld(corrupt)}


# ----------------------------------------------------------------------------------- fast path
@torch.no_grad()
def path_patch_fast(
    model,
    clean: EndCache,
    corrupt: EndCache,
    answer: torch.Tensor,
    prob: bool = False,
    max_rows: int = MAX_ROWS,
    max_logits: int = MAX_LOGITS,
) -> Patched:
    """Exact path patching of every head and MLP from the clean END residual stream.

    Rows of the running state, per sample: for each layer ``i`` a *baseline* (zero change, entering
    at ``r_mid[i]``), its ``H`` heads (entering at ``r_mid[i] + W_O slice · Δz``) and its MLP (the
    baseline after MLP ``i`` plus ``mlp_c[i] - mlp_r[i]``). Each layer adds the clean attention output
    to the rows that entered earlier and runs its norm + MLP on all rows at once: the END chain of
    :mod:`arithmech.methods.chain` with rows joining at every layer. Samples are processed in chunks of
    at most ``max_rows`` rows (``n_chunk * L * (H + 2)``). A sender whose residual change is exactly
    zero gets its baseline's logit (it *is* the unpatched run). The same rows give the logit of the
    counterfactual's answer (:func:`counter_fields`): ``counter_p`` / ``counter_o``.
    """
    arch, L = arch_for(model), geometry(model).n_layers
    n = clean.z.shape[0]
    H = geometry(model).n_heads
    per = L * (H + 2)
    chunk = max(1, max_rows // per)
    unembed = module(model, arch, "unembed")
    logit_p = torch.empty(n, L, H + 1)
    logit_o = torch.empty(n, L)
    lse_p = torch.empty(n, L, H + 1) if prob else None
    lse_o = torch.empty(n, L) if prob else None
    unchanged = torch.empty(n, L, H + 1, dtype=torch.bool)
    cf = counter_fields(model, clean, corrupt, answer)
    counter_p, counter_o = torch.empty(n, L, H + 1), torch.empty(n, L)
    for s in range(0, n, chunk):
        sl = slice(s, min(n, s + chunk))
        state, base_cols = None, []
        for k in range(L):
            dev = chain.device_of(module(model, arch, "mlp", k))
            w_o = weight(module(model, arch, "o_proj", k))  # (d, H*dh)
            dz = (corrupt.z[sl, k] - clean.z[sl, k]).to(w_o.device)
            delta = head_contributions(dz, w_o, H).to(dev)  # (b, H, d)
            new = clean.resid_mid[sl, k].to(dev)[:, None] + torch.cat([torch.zeros_like(delta[:, :1]), delta], 1)
            if state is not None:
                state = state.to(dev) + clean.attn_out[sl, k].to(dev)[:, None]  # frozen heads
                state = torch.cat([state, new], 1)
            else:
                state = new
            base_cols.append(state.shape[1] - (H + 1))
            state = chain.mlp_block(model, k, state)  # live MLPs
            d_mlp = (corrupt.mlp_out[sl, k] - clean.mlp_out[sl, k]).to(dev)
            mlp_row = state[:, base_cols[-1]] + d_mlp
            state = torch.cat([state, mlp_row[:, None]], 1)
            unchanged[sl, k, :H] = (delta == 0).all(-1).cpu()
            unchanged[sl, k, H] = (d_mlp == 0).all(-1).cpu()
        if state is None:
            raise ValueError("path patching needs a model with at least one layer")
        x = chain.final_norm(model, state)  # (b, L*(H+2), d)
        lg = chain.answer_logits(model, x, answer[sl]).float().cpu().view(-1, L, H + 2)
        # layout per layer: [baseline, head 0..H-1, mlp]
        logit_o[sl], logit_p[sl, :, :H], logit_p[sl, :, H] = lg[..., 0], lg[..., 1 : H + 1], lg[..., H + 1]
        lc = chain.answer_logits(model, x, cf["counter"][sl]).float().cpu().view(-1, L, H + 2)
        counter_o[sl], counter_p[sl, :, :H], counter_p[sl, :, H] = lc[..., 0], lc[..., 1 : H + 1], lc[..., H + 1]
        if lse_p is not None and lse_o is not None:  # prob: full-vocabulary logits, a few samples at a time
            per_sample = x.shape[1] * weight(unembed).shape[0]
            lse = torch.cat(
                [
                    unembed(xc).float().logsumexp(-1)
                    for xc in x.to(weight(unembed).device).split(max(1, max_logits // per_sample))
                ]
            )
            lse = lse.cpu().view(-1, L, H + 2)
            lse_o[sl], lse_p[sl, :, :H], lse_p[sl, :, H] = lse[..., 0], lse[..., 1 : H + 1], lse[..., H + 1]
    # A sender whose change to the residual is exactly 0 leaves the run as it was: copy the baseline,
    # so that e.g. clean -> clean is exactly 0 however the BLAS splits rows among threads.
    logit_p = torch.where(unchanged, logit_o[..., None], logit_p)
    counter_p = torch.where(unchanged, counter_o[..., None], counter_p)
    if lse_p is not None and lse_o is not None:  # prob
        lse_p = torch.where(unchanged, lse_o[..., None], lse_p)
    return Patched(
        logit_p,
        logit_o,
        clean.need("answer_logit").cpu(),
        clean.need("logit_std").cpu(),
        lse_p,
        lse_o,
        counter_p=counter_p,
        counter_o=counter_o,
        **cf,
    )


# ----------------------------------------------------------------------------- reference path
@torch.no_grad()
def path_patch_reference(
    model,
    tok,
    inputs: Inputs,
    prob: bool = False,
    batch_size: int = BATCH_SIZE,
    components: Sequence[tuple[int, int]] | None = None,
) -> Patched:
    """Algorithm 1 literally: one hooked forward of ``inputs.prompts`` (X_r) per sender, batched over samples, the
    frozen and patched values from the END caches ``inputs.clean`` / ``inputs.corrupt`` (``z (n, L, H*dh)``,
    ``mlp_out (n, L, d)``), the logit of ``inputs.answer (n,)`` (:class:`~arithmech.methods.patch_inputs.Inputs`).

    Head ``(i, j)``: at END, o_proj's input in layer ``i`` is the clean value with head ``j``'s slice
    from ``X_c``; in every later layer it is the clean value (all heads frozen). MLP ``(i, H)``: MLP
    ``i``'s END output is its ``X_c`` value and all heads of later layers are frozen at END. Anything
    not frozen (the MLPs after the sender) recomputes. ``components`` limits the scan (default: all).
    X_c's answer (:func:`counter_fields`) is read from the same forwards, ``counter_o`` from one unhooked one.
    Returns a :class:`Patched`, ``logit_p (n, L, H + 1)`` (a component left out of ``components``: NaN).
    """
    prompts, clean, corrupt, answer = inputs.prompts, inputs.clean, inputs.corrupt, inputs.answer
    arch, L = arch_for(model), geometry(model).n_layers
    H = geometry(model).n_heads
    dh = clean.z.shape[-1] // H
    n = len(prompts)
    comps = list(components) if components is not None else [(i, j) for i in range(L) for j in range(H + 1)]
    layer_of = arch.head_sites(range(L)) | arch.mlp_sites(range(L))
    logit_p = torch.full((n, L, H + 1), float("nan"))
    lse_p = torch.full((n, L, H + 1), float("nan")) if prob else None
    cf = counter_fields(model, clean, corrupt, answer)
    counter_p, counter_o = torch.full((n, L, H + 1), float("nan")), torch.empty(n)
    st: dict = {}

    def edit_z(x, name):
        k, (i, j) = layer_of[name], st["comp"]
        if k < i or (j == H and k == i):
            return x
        x = x.clone()
        x[:, -1] = clean.z[st["idx"], k].to(x.device)
        if k == i:
            x[:, -1, j * dh : (j + 1) * dh] = corrupt.z[st["idx"], k, j * dh : (j + 1) * dh].to(x.device)
        return x

    def edit_mlp(y, name):
        k, (i, j) = layer_of[name], st["comp"]
        if j != H or k != i:
            return y
        y = y.clone()
        y[:, -1] = corrupt.mlp_out[st["idx"], k].to(y.device)
        return y

    dev = input_device(model)
    batches = list(group_by_length(tok, prompts, batch_size))
    pick = lambda lg, ids, idx: lg.gather(1, ids[idx].to(lg.device)[:, None])[:, 0].cpu()
    for idx, ids in batches:  # the unpatched run: counter_o
        counter_o[idx] = pick(model(ids.to(dev), logits_to_keep=1, use_cache=False).logits[:, -1], cf["counter"], idx)
    with (
        TraceDict(model, list(arch.head_sites(range(L))), retain_output=False, edit_input=edit_z),
        TraceDict(model, list(arch.mlp_sites(range(L))), retain_output=False, edit_output=edit_mlp),
    ):
        for comp in comps:
            st["comp"] = comp
            for idx, ids in batches:
                st["idx"] = torch.tensor(idx)
                lg = model(ids.to(dev), logits_to_keep=1, use_cache=False).logits[:, -1].float()
                logit_p[idx, comp[0], comp[1]] = lg.gather(1, answer[idx].to(lg.device)[:, None])[:, 0].cpu()
                counter_p[idx, comp[0], comp[1]] = pick(lg, cf["counter"], idx)
                if lse_p is not None:  # prob
                    lse_p[idx, comp[0], comp[1]] = lg.logsumexp(-1).cpu()
    o = clean.need("answer_logit").cpu()
    lse_o = clean.need("logsumexp").cpu()[:, None].expand(n, L).clone() if prob else None
    return Patched(
        logit_p,
        o[:, None].expand(n, L).clone(),
        o,
        clean.need("logit_std").cpu(),
        lse_p,
        lse_o,
        counter_p=counter_p,
        counter_o=counter_o[:, None].expand(n, L).clone(),
        **cf,
    )


# ---------------------------------------------------------------------------------- front door
def path_patch(
    model,
    tok,
    clean_prompts: Sequence[str],
    corrupt_prompts: Sequence[str],
    answer: torch.Tensor,
    method: str = "fast",
    prob: bool = False,
    batch_size: int = BATCH_SIZE,
) -> Patched:
    """Path-patch every head and MLP for the pairs ``(clean_prompts[k], corrupt_prompts[k])`` (the fast path in
    chunks of :data:`MAX_ROWS` rows; :func:`path_patch_fast` takes another).

    Args:
        answer: ``(n,)`` answer-token ids {C} (:func:`arithmech.data.batches.answer_ids`).
        method: ``"fast"`` (exact, batched over heads × samples) or ``"reference"`` (hooks).
        prob: also compute the full-vocabulary logsumexp, for the probability of {C}.
    """
    if method not in METHODS:
        raise ValueError(f"method {method!r}: use 'fast' or 'reference'")
    if len(clean_prompts) != len(corrupt_prompts) or len(clean_prompts) != len(answer):
        raise ValueError("clean prompts, corrupt prompts and answer ids must have the same length")
    for c, x in zip(clean_prompts, corrupt_prompts):
        if len(tok(c)["input_ids"]) != len(tok(x)["input_ids"]):
            raise ValueError(f"X_r {c!r} and X_c {x!r} differ in token length; END must be the same position")
    if method == "fast":  # X_r[k] and X_c[k] have one length: one forward caches both
        clean, corrupt = split_cache(
            end_cache(model, tok, list(clean_prompts) + list(corrupt_prompts), torch.cat([answer, answer]), batch_size),
            len(answer),
        )
        return path_patch_fast(model, clean, corrupt, answer, prob, MAX_ROWS)
    # the reference caches X_r with the very batches its hooked forwards use (bit-identical clean values);
    # X_c with the answer ids too, for the model's own top-1 there (the counterfactual's answer)
    clean = end_cache(model, tok, clean_prompts, answer, batch_size)
    corrupt = end_cache(model, tok, corrupt_prompts, answer, batch_size)
    return path_patch_reference(model, tok, Inputs(clean_prompts, clean, corrupt, answer), prob, batch_size)


def split_cache(cache: EndCache, n: int) -> tuple[EndCache, EndCache]:
    """Rows ``[:n]`` and ``[n:]`` of a cache as two caches."""
    fields = EndCache.__dataclass_fields__
    a: dict[str, Any] = {f: None if getattr(cache, f) is None else getattr(cache, f)[:n] for f in fields}
    b: dict[str, Any] = {f: None if getattr(cache, f) is None else getattr(cache, f)[n:] for f in fields}
    return EndCache(**a), EndCache(**b)
