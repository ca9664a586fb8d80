"""Faithfulness across positions: a circuit of heads *at several token positions*.

:mod:`arithmech.methods.faithfulness` intervenes at END only; there, keeping or patching the top components is
close to a decomposition of END's residual stream, and heads that move operand information act at END only
through attention. Here a circuit is a set of **sites** ``(layer, head, where)``:

* ``where = "operands"``: the head's output (its slice of the o_proj input) at every token of ``{A}``, ``{B}``
  and the operator, and at END (the sample's ``positions``: they differ per prompt, so every row gets its own
  mask);
* ``where = "end"``: at END only.

The circuit studied (:func:`circuit`): the operand-reading heads — the ``k_read`` heads whose END attention mass
on the operand tokens (``attention_roles.csv``, role ``operand``, position 0 left out) is largest among those
above every head's 95th percentile — at ``"operands"``, plus the first ``k_key`` key heads at ``"end"``. Its
controls (:func:`random_layer_circuits`): ``n_random`` circuits that replace each head by another head **of the
same layer** (never one of the circuit's), at the same ``where``: layer-matched, position-matched.

The universe is every head at the operand positions and END (MLPs are never touched: ablating every MLP would put
every circuit near 0 by construction). Two runs per circuit ``C`` (sites ``S(C)``, universe ``U``)::

    noising   X_r, every site of U \\ S(C) replaced by identify's reference-pool mean at that position
              baseline: all of U ablated;  full: nothing ablated (X_r itself)
    denoising X_c, the sites of S(C) replaced by X_r's value at that position (X_c has X_r's token length)
              baseline: X_c itself;        full: all of U patched (END then equals X_r's END: every head at END
              is X_r's and each MLP at END reads only END's residual)

The noising denominator, LD(X_r) − LD(all of U ablated), is the quantity the END circuits' noising decomposes (the
effect of X_r's tokens before END on END's LD: every such path runs through END's heads, all ablated in both),
measured with END's MLPs recomputed from the ablated stream instead of set to their reference-pool means (column
``baseline``; the step records the two denominators' ratio on the same prompts). Ablating the MLPs too would
put a heads-only circuit near 0 by construction; adding them to every circuit would credit them to it.

Each with the per-prompt :func:`~arithmech.methods.faithfulness.recovery` (clipped and unclipped) and the ratio of means
(:func:`~arithmech.methods.faithfulness.circuit_rows`). Every value is recomputed downstream of a site; the
positions before a prompt's first site run once and are reused as a KV cache (:func:`site_lds`).

Shapes: ``n`` prompts of ``seq`` tokens, ``L`` layers, ``H`` heads of ``dh``; a prompt's values ``(L, seq, H*dh)``;
a row's mask ``(L, seq, H)`` bool; LDs ``(A, n)`` float64.

>>> rows, info = cross_position(model, tok, samples, means, reading=[(3, 1)], key=[(5, 0)], task="all",
...                             settings=FaithfulnessSettings(n_max=20, n_random=20, seed=0, n_boot=1000,
...                                                           bootstrap="cluster", split="held-out", batch_size=64,
...                                                           converse_random=False))
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from arithmech.core import prefix
from arithmech.core.models import BATCH_SIZE, arch_for, geometry, input_device
from arithmech.core.trace import TraceDict
from arithmech.data import pairs
from arithmech.data.batches import answer_ids, group_by_length
from arithmech.methods.faithfulness import BASELINE as F_BASELINE
from arithmech.methods.faithfulness import Units, circuit_rows
from arithmech.methods.faithfulness_settings import FaithfulnessSettings, Rows

WHERE = {"operands": ("A", "B", "operator", "end"), "end": ("end",)}
BASELINE = "every head at A, B, operator and END ablated, MLPs recomputed"  # the noising full effect's baseline
K_READ, K_KEY = 5, 5  # the circuit: at most this many operand-reading heads and key heads (≤ 10 heads)
READ_QUANTILE = 0.95  # a reading head's operand mass lies above this quantile of every head's


def reading_heads(roles: pd.DataFrame, k: int = K_READ, task: str = "all") -> list[tuple[int, int]]:
    """The operand-reading heads of ``attention_roles.csv`` (:func:`arithmech.methods.attention.attention_by_role`):
    role ``operand`` of ``task``, ``mass_nofirst`` strictly above its :data:`READ_QUANTILE` over every head, the
    ``k`` largest (ties by layer, head), in that order."""
    df = roles[(roles.task == task) & (roles.role == "operand")]
    if df.empty:
        raise ValueError(f"attention_roles.csv has no role 'operand' of task {task!r}")
    cut = df.mass_nofirst.quantile(READ_QUANTILE)
    top = df[df.mass_nofirst > cut].sort_values(["mass_nofirst", "layer", "head"], ascending=[False, True, True])
    return [(int(l), int(h)) for l, h in zip(top.layer[:k], top["head"][:k])]


def key_heads(kh: dict, task: str, k: int = K_KEY) -> list[tuple[int, int]]:
    """The first ``k`` key heads of ``key_heads.json`` for ``task`` — the paper's rule's, else the LD-ratio rule's
    (``by_share``), as :func:`arithmech.analyze.claims.studied_heads` reads them."""
    pick = lambda b: b.get("heads", []) if task == kh.get("task") else b.get("per_task", {}).get(task, [])
    heads = pick(kh) or pick(kh.get("by_share") or {})
    return [(int(h["layer"]), int(h["head"])) for h in heads[:k]]


def circuit(reading: Sequence, key: Sequence) -> tuple:
    """The sites: each reading head at ``"operands"``, each key head not among them at ``"end"``."""
    return tuple((l, h, "operands") for l, h in reading) + tuple((l, h, "end") for l, h in key if (l, h) not in reading)


def random_layer_circuits(sites: Sequence, n_heads: int, n_random: int, seed: int) -> list[tuple]:
    """``n_random`` circuits, each site ``(l, h, where)`` replaced by ``(l, h', where)`` with ``h'`` a head of layer
    ``l`` outside the circuit and not yet drawn in that circuit (a seeded ``random.Random``). Refused (ValueError)
    when a layer has fewer free heads than the circuit holds there."""
    rng, taken = random.Random(seed), {(l, h) for l, h, _ in sites}
    out = []
    for _ in range(n_random):
        used, draw = set(), []
        for l, _, w in sites:
            free = [h for h in range(n_heads) if (l, h) not in taken and (l, h) not in used]
            if not free:
                raise ValueError(f"layer {l} has no head left outside the circuit for a layer-matched draw")
            h = rng.choice(free)
            used.add((l, h))
            draw.append((l, h, w))
        out.append(tuple(draw))
    return out


def site_mask(sites: Sequence, positions: dict, seq: int, L: int, H: int) -> torch.Tensor:
    """``(L, seq, H)`` bool: True at each site's layer, head and token positions (``positions``: a sample's
    ``{"A": [...], "B": [...], "operator": [...], "end": int}``)."""
    at = {
        w: sorted({p for r in roles for p in ([positions[r]] if r == "end" else positions[r])})
        for w, roles in WHERE.items()
    }
    if any(p >= seq or p < 0 for ps in at.values() for p in ps):
        raise ValueError(f"token positions {positions} do not fit a prompt of {seq} tokens")
    m = torch.zeros(L, seq, H, dtype=torch.bool)
    for l, h, w in sites:
        m[l, at[w], h] = True
    return m


@torch.no_grad()
def head_values(model, tok, prompts: Sequence[str], batch_size: int = BATCH_SIZE):
    """``([z_i (L, seq_i, H*dh)], logits (n, V))``: every head's output at every position (the o_proj input) and the
    END logits, float32, from the very forward :func:`site_lds` runs (nothing replaced)."""
    L = geometry(model).n_layers
    names = list(arch_for(model).head_sites(range(L)))
    zs: list = [None] * len(prompts)  # filled: (L, seq_i, H*dh) each
    lg: list = [None] * len(prompts)  # filled: (vocab,) each
    with TraceDict(model, names, retain_input=True, retain_output=False) as tr:
        for idx, ids in group_by_length(tok, prompts, batch_size):
            out = model(ids.to(input_device(model)), use_cache=False, logits_to_keep=1).logits[:, -1].float().cpu()
            got = torch.stack([tr[n].input.float().cpu() for n in names], 1)  # (b, L, seq, H*dh)
            for j, i in enumerate(idx):
                zs[i], lg[i] = got[j], out[j]
    return zs, torch.stack(lg)


@torch.no_grad()
def site_lds(
    model,
    tok,
    prompts: Sequence[str],
    values: Sequence[torch.Tensor],
    masks: Sequence[Sequence[torch.Tensor]],
    answer_r: torch.Tensor,
    answer_c: torch.Tensor,
    batch_size: int = BATCH_SIZE,
) -> torch.Tensor:
    """``(A, n)`` float64 LDs at END: prompt ``i`` under mask ``a`` (``masks[a][i] (L, seq_i, H)`` bool) has every
    masked head output replaced by ``values[i] (L, seq_i, H*dh)``, everything else recomputed. The positions
    before the prompt's first masked site (in any row) cannot change (causal attention): they run once, one row,
    and their keys and values are reused for every row (:mod:`arithmech.core.prefix`; ``prefix.enabled(False)``
    runs every row whole)."""
    geo = geometry(model)
    L, H = geo.n_layers, geo.n_heads
    names = arch_for(model).head_sites(range(L))
    st: dict = {}

    def edit(x, name):  # x (rows, seq, H*dh); rows = prompt-major × masks
        l = names[name]
        m = st["mask"][:, l]  # (rows, seq, H)
        if not m.any():
            return x
        xc, src = x.unflatten(-1, (H, -1)), st["src"][:, l].to(x).unflatten(-1, (H, -1))
        return torch.where(m[..., None].to(x.device), src, xc).flatten(-2)

    A, out = len(masks), torch.empty(len(masks), len(prompts), dtype=torch.float64)
    dev = input_device(model)
    with TraceDict(model, list(names), retain_output=False, edit_input=edit):
        for idx, ids in group_by_length(tok, prompts, batch_size):
            for pos, i in enumerate(idx):  # one prompt, its masks in chunks of batch_size rows
                one, seq = ids[pos : pos + 1].to(dev), ids.shape[1]
                touched = torch.stack([masks[a][i].any(0).any(-1) for a in range(A)]).any(0)  # (seq,)
                p0 = min(int(touched.nonzero()[0]) if touched.any() else seq - 1, seq - 1) if prefix.active() else 0
                kv = None
                if p0 > 0:  # positions before every site: run once, as a cache
                    st["mask"] = torch.zeros(1, L, p0, H, dtype=torch.bool)
                    kv = prefix.layers_of(model(one[:, :p0], use_cache=True, logits_to_keep=1).cache)
                for a0 in range(0, A, batch_size):
                    a1 = min(A, a0 + batch_size)
                    st["mask"] = torch.stack([masks[a][i][:, p0:] for a in range(a0, a1)])
                    st["src"] = values[i][None, :, p0:].expand(a1 - a0, -1, -1, -1)
                    rest = one[:, p0:].repeat(a1 - a0, 1)
                    lg = (
                        model(rest, cache=prefix.expanded(model, kv, a1 - a0), use_cache=True, logits_to_keep=1)
                        if kv is not None
                        else model(rest, use_cache=False, logits_to_keep=1)
                    ).logits[:, -1]
                    out[a0:a1, i] = (lg[:, answer_r[i]].double() - lg[:, answer_c[i]].double()).cpu()
    return out


def cross_position(
    model,
    tok,
    samples: Sequence[pairs.Sample],
    means,
    reading: Sequence,
    key: Sequence,
    task: str,
    settings: FaithfulnessSettings,
) -> tuple[list[dict], dict]:
    """The noising (mean) and denoising rows of the module docstring for :func:`circuit` ``(reading, key)`` (order
    ``operands``, ``n`` = its heads) and its layer-matched random circuits (order ``random-layer``,
    ``settings.n_random`` of them), positions ``"operands"``, and the sanity rows ``all`` (every head at those
    positions: 1) and ``none`` (0), each run as a circuit: rows of :data:`arithmech.methods.faithfulness.COLUMNS`,
    and ``info``. ``settings``
    (:class:`~arithmech.methods.faithfulness_settings.FaithfulnessSettings`; ``n_max`` and ``converse_random`` are
    the END circuits' and not read here)."""
    n_random, seed, batch_size = settings.n_random, settings.seed, settings.batch_size
    geo = geometry(model)
    L, H = geo.n_layers, geo.n_heads
    sites = circuit(reading, key)
    if not sites:
        raise ValueError("no operand-reading or key head: no cross-position circuit to test")
    universe = tuple((l, h, "operands") for l in range(L) for h in range(H))
    plan = _circuits(sites, universe, H, n_random, seed)
    clean, corrupt = [s.clean for s in samples], [s.corrupt for s in samples]
    z_r, logit_r = head_values(model, tok, clean, batch_size)
    z_c, logit_c = head_values(model, tok, corrupt, batch_size)
    if any(a.shape != b.shape for a, b in zip(z_r, z_c)):
        raise ValueError("an X_c has another token length than its X_r: positions cannot be matched")
    ans_r, ans_c = answer_ids(tok, samples), logit_c.argmax(-1)
    mask = lambda ss: [site_mask(ss, s.positions, z.shape[1], L, H) for s, z in zip(samples, z_r)]
    full, circ = mask(universe), [mask(c) for *_, c in plan]
    empty = [torch.zeros_like(m) for m in full]
    mean_z = [means.lookup(means.key(s), z.shape[1])[0] for s, z in zip(samples, z_r)]
    kw = dict(answer_r=ans_r, answer_c=ans_c, batch_size=batch_size)
    noise = site_lds(
        model, tok, clean, mean_z, [empty, full] + [[f & ~c for f, c in zip(full, cc)] for cc in circ], **kw
    )
    deno = site_lds(model, tok, corrupt, z_r, [empty, full] + circ, **kw)
    rows = _rows(task, plan, noise, deno, settings, Units.of(samples, settings.bootstrap))
    at = torch.arange(len(samples))
    ld_r = logit_r[at, ans_r].double() - logit_r[at, ans_c].double()
    return rows, _info(reading, key, len(sites), n_random, noise, deno, ld_r, [z.shape[1] for z in z_r])


def _circuits(sites: tuple, universe: tuple, n_heads: int, n_random: int, seed: int) -> list[tuple]:
    """The circuits run, as ``(order, draw, n, sites)``: the operand sites themselves, ``n_random`` layer-matched
    random circuits, and the sanity rows run as circuits (``all``: 1, ``none``: 0)."""
    plan = [("operands", -1, len(sites), sites)]
    plan += [
        ("random-layer", r, len(sites), c) for r, c in enumerate(random_layer_circuits(sites, n_heads, n_random, seed))
    ]
    plan += [("all", -1, len(universe), universe), ("none", -1, 0, ())]  # sanity rows, run as circuits: 1 and 0
    return plan


def _rows(task: str, plan: list, noise, deno, settings: FaithfulnessSettings, units) -> list[dict]:
    """The circuits' rows: noising (mean-ablate everything outside the circuit; recovery against all ablated) and
    denoising (patch X_r's values into X_c at the circuit; recovery against X_c)."""
    rows = circuit_rows(
        Rows(task, "noising", "mean", "operands", BASELINE),
        plan,
        (noise[2:] - noise[1]).T,
        noise[0] - noise[1],
        settings,
        units,
    )
    rows += circuit_rows(
        Rows(task, "denoising", "x_r", "operands", F_BASELINE["denoising"]),
        plan,
        (deno[2:] - deno[0]).T,
        deno[1] - deno[0],
        settings,
        units,
    )
    return rows


def _info(reading, key, n_sites: int, n_random: int, noise, deno, ld_r, lengths: list[int]) -> dict:
    """What the test records beside its rows: the heads, the sites and draws, the two sanity gaps (everything
    patched, nothing ablated: each should give X_r's logit difference ``ld_r``), the prompts' token count, and
    the two noising denominators' parts."""
    return {
        "reading_heads": [f"{l}.{h}" for l, h in reading],
        "key_heads": [f"{l}.{h}" for l, h in key],
        "sites": n_sites,
        "draws": n_random,
        "denoising_all_patched_minus_x_r": float((deno[1] - ld_r).abs().max()),
        "noising_nothing_ablated_minus_x_r": float((noise[0] - ld_r).abs().max()),
        "tokens_per_prompt": float(np.mean(lengths)),
        "ld_x_r": float(ld_r.mean()),
        "ld_all_ablated_mean": float(noise[1].mean()),
    }


__all__ = [
    "cross_position",
    "reading_heads",
    "key_heads",
    "circuit",
    "random_layer_circuits",
    "site_mask",
    "head_values",
    "site_lds",
    "WHERE",
    "K_READ",
    "K_KEY",
    "BASELINE",
]
