"""Attribution patching (EAP, EAP-IG) of the quantity identify measures exactly, and where it misses.

Identify's effect of a sender *n* (head ``i.j`` or MLP ``i``) is exact path patching
(:func:`arithmech.methods.patching.path_patch_fast`): *n*'s END output takes its ``X_c`` value, every
attention head at END is frozen at its ``X_r`` value, the MLPs recompute, and the answer logit
``logit_p`` is compared with the unpatched ``logit_o``. With every head frozen, the answer logit is a
function of the END residual stream alone, the **END chain**::

    r = resid_pre[0]                                          # the END token's embedding
    for k in 0..L-1:  r = r + o_proj_k(z[k]);  r = r + MLP_k(norm_k(r)) (+ m[k])
    logit = final_norm(r) @ W_U[{C}]

where ``z[k]`` (``(H*dh,)``, every head's output before ``W_O``) are constants (frozen attention) and
``m[k]`` is an extra write after MLP ``k`` (0 on the clean run). Patching head ``i.j`` changes the slice
``j`` of ``z[i]`` by ``Δz = z_c - z_r``; patching MLP ``i`` adds ``Δm = mlp_c - mlp_r`` after MLP ``i``.

* **EAP** (attribution patching): the first-order Taylor term at the clean point,
  ``Δlogit ≈ ∂logit/∂z[i]_j · Δz_j`` (heads) and ``∂logit/∂m[i] · Δm`` (MLPs), for every sender at once
  from one forward and one backward of the END chain per batch of samples.
* **EAP-IG**: the gradient averaged over ``steps`` points of the straight line from the ``X_r`` to the
  ``X_c`` END activations (midpoint rule, ``α = (s + ½) / steps``): the END embedding and every
  head's ``z`` move together, ``x(α) = x_r + α (x_c - x_r)``, and the MLPs recompute along the way (at
  ``α = 1`` the chain *is* the ``X_c`` END state). The MLP senders' gradient is taken at the same points.

**What is frozen and what is differentiated.** In all three methods the attention of every head at
END is frozen (its output is a constant of the chain): no gradient flows through queries, keys,
values or softmax. The exact method evaluates the remaining nonlinearities exactly: each MLP's
RMSNorm (``mlp_norm``: the ``1 / rms(r)`` scale), each gated MLP (``act(gate(x)) * up(x)``: the SiLU
gate and the gate × up product) and the final RMSNorm. EAP differentiates through those same norms
and MLP gates at the clean point (first order only); EAP-IG differentiates through them along the
path, where every sender has moved, not just the one being scored.

**Why EAP misses** (:func:`diagnose`): the chain can be made linear by freezing its nonlinearities at
their clean values — ``freeze=("norm",)`` keeps each RMSNorm's scale at the clean run's value (the
norm becomes ``w * r * s_clean``), ``freeze=("gate",)`` keeps each MLP's ``act(gate(x))`` at the clean
run's value (the MLP becomes ``down(a_clean * up(x))``). With both frozen the chain is affine and EAP
equals the exact effect (tested); with one frozen, the miss that remains is the other one's doing.

Shapes: ``n`` samples, ``L`` layers, ``H`` heads; results ``(n, L, H + 1)`` (index ``H`` = the MLP),
in logit units (``logit_p - logit_o``); :func:`relative` turns them into identify's relative effect.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from arithmech.core.models import arch_for, geometry, module, weight
from arithmech.core.stats import bootstrap_counts
from arithmech.methods import chain
from arithmech.methods.patching import EndCache, path_patch_fast
from arithmech.paper import KEY_THRESHOLD

FREEZABLE = ("norm", "gate")
MAX_ROWS = 4096  # attribute: samples x alphas per forward and backward of the END chain
COMPARE_TOP = 10  # compare: senders in the top sets the summary compares
COMPARE_BOOT = 1000  # compare: bootstrap resamples of each Spearman interval


# ------------------------------------------------------------------------------------ the chain
def _check_freeze(freeze: Sequence[str]) -> tuple[str, ...]:
    """``freeze`` as a tuple if every entry is one of :data:`FREEZABLE`, else a :class:`ValueError`."""
    bad = [f for f in freeze if f not in FREEZABLE]
    if bad:
        raise ValueError(f"freeze {bad}: choose from {FREEZABLE}")
    return tuple(freeze)


def _frozen_norm(norm, x: torch.Tensor) -> torch.Tensor:
    """An RMSNorm with each row's scale fixed at that of row 0 of its sample (the clean row), detached:
    ``w * x * s_0`` with ``s_0 = <norm(x0), w x0> / |w x0|²`` (a :data:`arithmech.methods.chain.Norm`)."""
    x0 = x[:, :1].detach()
    y0, u0 = norm(x0), norm.weight * x0
    s0 = (y0 * u0).sum(-1, keepdim=True) / (u0 * u0).sum(-1, keepdim=True)
    return norm.weight * x * s0


@contextlib.contextmanager
def _gate_frozen(model, arch, on: bool):
    """While open (and ``on``), every MLP's ``act_fn`` output is that of row 0 of its sample, detached."""
    if not on:
        yield
        return
    handles: list = []
    for k in range(geometry(model).n_layers):
        act = getattr(module(model, arch, "mlp", k), "act_fn", None)
        if not isinstance(act, torch.nn.Module):
            for h in handles:
                h.remove()
            raise ValueError("freeze=('gate',) needs an MLP with an act_fn module (the gated Llama MLP)")
        handles.append(act.register_forward_hook(lambda m, a, out: out[:, :1].detach().expand_as(out)))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def run_chain(
    model,
    start: torch.Tensor,
    z: Sequence[torch.Tensor],
    mlp_add: Sequence[torch.Tensor | None],
    answer: torch.Tensor,
    freeze: Sequence[str] = (),
) -> torch.Tensor:
    """The END chain (:func:`arithmech.methods.chain.carry`) for ``R`` rows per sample from before layer 0,
    with the heads' frozen outputs given as o_proj inputs ``z`` (so they can be differentiated); returns the
    answer logits ``(b, R)``.

    Args:
        start: ``(b, R, d)`` END residual before layer 0.
        z: per layer ``(b, R, H*dh)``, the o_proj input at END (the heads' frozen outputs).
        mlp_add: per layer ``(b, R, d)`` or ``None``, added after MLP ``k``.
        answer: ``(b,)`` answer ids {C}.
        freeze: nonlinearities frozen at row 0 of each sample (see the module docstring).
    """
    freeze = _check_freeze(freeze)
    arch, L = arch_for(model), geometry(model).n_layers
    attn = {k: module(model, arch, "o_proj", k)(z[k]) for k in range(L)}  # (b, R, d) per layer
    add = {k: m for k, m in enumerate(mlp_add) if m is not None}
    norm = _frozen_norm if "norm" in freeze else chain.own_norm
    with _gate_frozen(model, arch, "gate" in freeze):
        return chain.carry(model, start, answer, first=0, attn=attn, mlp_add=add, norm=norm)


# ---------------------------------------------------------------------------------- attribution
def attribute(
    model,
    clean: EndCache,
    corrupt: EndCache,
    answer: torch.Tensor,
    alphas: Sequence[float] = (0.0,),
    freeze: Sequence[str] = (),
    max_rows: int = MAX_ROWS,
) -> torch.Tensor:
    """Gradient × difference for every head and MLP: ``(n, L, H+1)`` estimated ``logit_p - logit_o``.

    ``alphas = (0,)`` is EAP (the gradient at the clean point); ``alphas = [(s + 0.5) / m for s in
    range(m)]`` is EAP-IG with ``m`` steps. The ``len(alphas)`` points run as rows of one forward and
    one backward per chunk of samples (``chunk * len(alphas) <= max_rows``).
    """
    arch, geo = arch_for(model), geometry(model)
    L, H = geo.n_layers, geo.n_heads
    if _check_freeze(freeze) and list(alphas) != [0.0]:
        raise ValueError("freezing a nonlinearity is defined at the clean point only: use alphas=(0.0,)")
    n = clean.z.shape[0]
    a = torch.tensor(list(alphas), dtype=clean.z.dtype)
    R = len(a)
    out = torch.empty(n, L, H + 1)
    chunk = max(1, max_rows // R)
    dev = weight(module(model, arch, "o_proj", 0)).device
    for s in range(0, n, chunk):
        sl = slice(s, min(n, s + chunk))
        al = a.to(dev)[None, :, None]
        dz = (corrupt.z[sl] - clean.z[sl]).to(dev)  # (b, L, H*dh)
        z = [(clean.z[sl, k].to(dev)[:, None] + al * dz[:, k, None]).requires_grad_(True) for k in range(L)]
        e0 = (
            clean.resid_pre[sl, 0].to(dev)[:, None]
            + al * (corrupt.resid_pre[sl, 0] - clean.resid_pre[sl, 0]).to(dev)[:, None]
        )
        m = [torch.zeros_like(e0, requires_grad=True) for _ in range(L)]
        with torch.enable_grad():
            lg = run_chain(model, e0, z, m, answer[sl].to(dev), freeze)
            grads = torch.autograd.grad(lg.sum(), z + m)
        gz = torch.stack(grads[:L], 1).mean(2)  # (b, L, H*dh), mean over α
        gm = torch.stack(grads[L:], 1).mean(2)  # (b, L, d)
        out[sl, :, :H] = (gz * dz).unflatten(-1, (H, -1)).sum(-1).float().cpu()
        dm = (corrupt.mlp_out[sl] - clean.mlp_out[sl]).to(dev)
        out[sl, :, H] = (gm * dm).sum(-1).float().cpu()
    return out


def ig_alphas(steps: int) -> list[float]:
    """The midpoint rule's points on ``[0, 1]``: ``(s + ½) / steps``."""
    if steps < 1:
        raise ValueError(f"ig steps={steps}: need at least one step")
    return [(s + 0.5) / steps for s in range(steps)]


@torch.no_grad()
def exact(
    model,
    clean: EndCache,
    corrupt: EndCache,
    answer: torch.Tensor,
    senders: Sequence[tuple[int, int]],
    freeze: Sequence[str] = (),
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact path patching of some ``senders`` ``(layer, head)`` (head ``H`` = the MLP) through the END
    chain, optionally with nonlinearities frozen. Returns ``(logit_p - logit_o (n, S), logit_o (n,))``;
    with ``freeze=()`` it equals :func:`~arithmech.methods.patching.path_patch_fast` (tested)."""
    arch, geo = arch_for(model), geometry(model)
    L, H = geo.n_layers, geo.n_heads
    dh = clean.z.shape[-1] // H
    dev = weight(module(model, arch, "o_proj", 0)).device
    S = len(senders)
    z = [clean.z[:, k].to(dev)[:, None].repeat(1, S + 1, 1) for k in range(L)]
    add: list[torch.Tensor | None] = [None] * L
    for c, (i, j) in enumerate(senders, start=1):
        if j < H:
            z[i][:, c, j * dh : (j + 1) * dh] = corrupt.z[:, i, j * dh : (j + 1) * dh].to(dev)
        else:
            grown = add[i]
            if grown is None:  # (n, 1 + S, d): MLP i's patched rows
                grown = add[i] = torch.zeros(clean.z.shape[0], S + 1, clean.resid_pre.shape[-1], device=dev)
            grown[:, c] = (corrupt.mlp_out[:, i] - clean.mlp_out[:, i]).to(dev)
    start = clean.resid_pre[:, 0].to(dev)[:, None].expand(-1, S + 1, -1)
    lg = run_chain(model, start, z, add, answer.to(dev), freeze).float().cpu()
    return lg[:, 1:] - lg[:, :1], lg[:, 0]


def relative(diff: torch.Tensor, logit_o: torch.Tensor) -> torch.Tensor:
    """Identify's per-sample effect ``(logit_p - logit_o) / logit_o`` from a logit change ``(n, ...)``."""
    return diff / logit_o.reshape(-1, *([1] * (diff.dim() - 1)))


# ---------------------------------------------------------------------------------- comparison
def compare(
    model,
    clean: EndCache,
    corrupt: EndCache,
    answer: torch.Tensor,
    ig_steps: int = 8,
    threshold: float = KEY_THRESHOLD,
    seed: int = 0,
    clusters=None,
) -> dict:
    """Exact, EAP and EAP-IG effects of every head and MLP, timed side by side on the same caches.

    Returns ``{"frame": DataFrame, "times": {...}, "summary": {...}}``; the frame has one row per
    sender: ``layer, head ("mlp" for MLPs), exact, eap, eap_ig`` (mean relative effects), their
    ``*_se`` (standard errors over samples), ``exact_logit_diff``, ``eap_logit_diff``,
    ``eap_ig_logit_diff`` and ``n``. The summary's Spearman ρ come with a 95% percentile bootstrap interval over
    the prompts (or their problem ``clusters``; :data:`COMPARE_BOOT` resamples from ``seed``;
    :func:`spearman_intervals`); the top sets compared are :data:`COMPARE_TOP` senders.
    """
    top, n_boot = COMPARE_TOP, COMPARE_BOOT
    times = {}
    t0 = time.perf_counter()
    ex = path_patch_fast(model, clean, corrupt, answer)
    times["exact_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    eap = attribute(model, clean, corrupt, answer, (0.0,))
    times["eap_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ig = attribute(model, clean, corrupt, answer, ig_alphas(ig_steps))
    times["eap_ig_s"] = time.perf_counter() - t0
    lo = ex.logit_o[:, :1]
    per = {"exact": ex.logit_diff(), "eap": eap, "eap_ig": ig}
    n, L, H1 = eap.shape
    rows = []
    for l in range(L):
        for h in range(H1):
            r = {"layer": l, "head": "mlp" if h == H1 - 1 else str(h)}
            for k, v in per.items():
                rel = v[:, l, h] / lo[:, 0]
                r[k] = float(rel.mean())
                r[f"{k}_se"] = float(rel.std() / np.sqrt(n)) if n > 1 else float("nan")
                r[f"{k}_logit_diff"] = float(v[:, l, h].mean())
            rows.append(r | {"n": n})
    frame = pd.DataFrame(rows)
    summary = summarize(frame, threshold, top)
    rels = {k: v / lo[:, :1, None] for k, v in per.items()}  # (n, L, H+1) per-prompt effects
    for m in ("eap", "eap_ig"):
        summary[m].update(spearman_intervals(rels["exact"], rels[m], H1 - 1, n_boot, seed, clusters))
    summary["spearman_interval"] = (
        f"95% percentile bootstrap over {'problem clusters' if clusters else 'prompts'} "
        f"({n_boot} resamples, seed {seed}): each resample re-averages both methods' "
        "per-prompt effects and re-ranks the senders"
    )
    return {"frame": frame, "times": times, "summary": summary}


def _spearman_rows(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``(B,)`` Spearman ρ between the rows of ``a`` and ``b`` ``(B, S)`` (average ranks for ties, as pandas)."""
    ra = torch.tensor(pd.DataFrame(a.numpy()).rank(axis=1).to_numpy())
    rb = torch.tensor(pd.DataFrame(b.numpy()).rank(axis=1).to_numpy())
    ra, rb = ra - ra.mean(1, keepdim=True), rb - rb.mean(1, keepdim=True)
    return (ra * rb).sum(1) / (ra.norm(dim=1) * rb.norm(dim=1))


def spearman_intervals(
    exact: torch.Tensor,
    est: torch.Tensor,
    H: int,
    n_boot: int = 1000,
    seed: int = 0,
    clusters=None,
    level: float = 0.95,
) -> dict:
    """Bootstrap intervals of the Spearman ρ between two methods' mean effects, prompt noise included.

    ``exact``, ``est``: ``(n, L, H+1)`` per-prompt effects (last column: MLPs). Resample ``b`` weights the
    prompts by :func:`arithmech.core.stats.bootstrap_counts` (the same ``seed`` gives the same resamples as
    identify's effect intervals), averages each method over them and ranks the senders again. Returns
    ``{"spearman_all_lo", "spearman_all_hi", "spearman_heads_lo", "spearman_heads_hi"}`` (every sender;
    heads only)."""
    n = exact.shape[0]
    w = bootstrap_counts(n, n_boot, seed, clusters)  # (B, n)
    mean = lambda x: (w @ x.reshape(n, -1).double()) / w.sum(1, keepdim=True)  # (B, L*(H+1))
    me, mm = mean(exact), mean(est)
    heads = torch.tensor([j % (H + 1) != H for j in range(me.shape[1])])
    q = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)
    out = {}
    for tag, cols in (("all", slice(None)), ("heads", heads)):
        lo, hi = torch.quantile(_spearman_rows(me[:, cols], mm[:, cols]), q).tolist()
        out[f"spearman_{tag}_lo"], out[f"spearman_{tag}_hi"] = float(lo), float(hi)
    return out


def summarize(frame: pd.DataFrame, threshold: float = KEY_THRESHOLD, top: int = 10) -> dict:
    """Per method (eap, eap_ig) against ``exact``: Spearman rank correlation over every sender and over
    heads only, the overlap of the top-``top`` heads (most negative effect) and of the key-head sets
    (effect < ``threshold``)."""
    heads = frame[frame["head"] != "mlp"]
    name = lambda d: [f"{l}.{h}" for l, h in zip(d["layer"], d["head"])]
    top_of = lambda col: set(name(heads.sort_values([col, "layer", "head"], kind="stable").head(top)))
    key_of = lambda col: set(name(heads[heads[col] < threshold]))
    out = {
        "n_senders": len(frame),
        "n_heads": len(heads),
        "top": top,
        "threshold": threshold,
        "exact_key_heads": sorted(key_of("exact")),
        "exact_top": sorted(top_of("exact")),
    }
    for m in ("eap", "eap_ig"):
        ke, km = key_of("exact"), key_of(m)
        out[m] = {
            "spearman_all": float(frame["exact"].rank().corr(frame[m].rank())),
            "spearman_heads": float(heads["exact"].rank().corr(heads[m].rank())),
            "top_overlap": len(top_of("exact") & top_of(m)),
            "key_heads": sorted(km),
            "key_overlap": len(ke & km),
            "key_union": len(ke | km),
        }
    return out


def diagnose(
    model, clean: EndCache, corrupt: EndCache, answer: torch.Tensor, frame: pd.DataFrame, n_misses: int = 5
) -> pd.DataFrame:
    """The ``n_misses`` senders where EAP is furthest from the exact effect, each re-computed (exact and
    EAP) with the norms frozen, the MLP gates frozen, and both. ``cause``: the nonlinearity whose
    freezing removes most of the miss (``norm``, ``gate``, or ``both`` when neither alone removes half).

    Rows ``layer, head, exact, eap, miss`` (exact − EAP, relative effect), ``miss_norm_frozen``,
    ``miss_gate_frozen``, ``miss_both_frozen``, ``cause``.
    """
    H = geometry(model).n_heads
    d = frame.assign(miss=frame["exact"] - frame["eap"])
    d = d.reindex(d["miss"].abs().sort_values(ascending=False, kind="stable").index).head(n_misses)
    senders = [(int(l), H if h == "mlp" else int(h)) for l, h in zip(d["layer"], d["head"])]
    rows = []
    misses = {}
    for tag, fr in (("norm", ("norm",)), ("gate", ("gate",)), ("both", ("norm", "gate"))):
        diff, lo = exact(model, clean, corrupt, answer, senders, fr)
        est = attribute(model, clean, corrupt, answer, (0.0,), fr)
        est = torch.stack([est[:, l, h] for l, h in senders], 1)
        misses[tag] = ((diff - est) / lo[:, None]).mean(0)
    for c, r in enumerate(d.itertuples()):
        mn, mg, mb = (float(misses[t][c]) for t in ("norm", "gate", "both"))
        cause = "norm" if abs(mn) < abs(mg) else "gate"
        if min(abs(mn), abs(mg)) > 0.5 * abs(r.miss):
            cause = "both"
        rows.append(
            {
                "layer": r.layer,
                "head": r.head,
                "exact": r.exact,
                "eap": r.eap,
                "miss": r.miss,
                "miss_norm_frozen": mn,
                "miss_gate_frozen": mg,
                "miss_both_frozen": mb,
                "cause": cause,
            }
        )
    return pd.DataFrame(rows)
