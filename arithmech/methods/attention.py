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

**Controls.** A model without BOS (SmolLM2) starts many prompts with ``{A}``, and the first
position is where most heads park their attention (the "attention sink"): its mass would count
as operand attention. So every mass is also given

* *without the first position*: position 0 dropped and the row renormalised over the rest;
  two derived roles sit beside the five: ``operand`` (A ∪ B) and ``first`` (position 0, whatever it is);
* as a *density* beside the mass: mass per token of the role (three operand tokens collect more
  mass than one operator token at the same per-token attention);
* against a *baseline*: :func:`nonkey_baseline` puts each key head's value beside the distribution
  over every non-key head of the model (median, 5–95 %, the key head's percentile), and
  :func:`rule_verdict` decides, by a rule fixed in advance, whether the key head reads a role more
  than the other heads do.

One prompt at a time (the attention strips of Fig. 7 / 16) lives in :mod:`arithmech.methods.explorer`;
the analyze step end to end in :mod:`arithmech.analyze.run`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from arithmech.core.models import Arch, arch_for, geometry, input_device
from arithmech.core.names import component_label
from arithmech.core.trace import TraceDict
from arithmech.data import pairs
from arithmech.data.batches import group_by_length

ROLES = ("A", "B", "operator", "bos", "other")
DERIVED = ("operand", "first")  # operand = A ∪ B; first = position 0 (whatever its role)
ALL_ROLES = ROLES + DERIVED
VIEWS = {"with first": ("mean_score", "density"), "without first": ("mass_nofirst", "density_nofirst")}
Head = tuple[int, int]


# ------------------------------------------------------------------------------ attention by role
def role_labels(positions: dict, seq_len: int, bos: bool = True) -> list[str]:
    """Role of every key position ``0..seq_len-1`` (see module docstring); A/B/operator win over bos."""
    out = ["bos" if (bos and i == 0) else "other" for i in range(seq_len)]
    for role in ("operator", "B", "A"):
        for p in positions.get(role, []):
            out[p] = role
    return out


def role_onehot(roles: Sequence[Sequence[str]], first: bool = True) -> torch.Tensor:
    """``(n, seq, len(ALL_ROLES))`` membership of every position in every role of :data:`ALL_ROLES`.

    ``roles[i]``: the seq labels of sample i (:func:`role_labels`). ``first=False`` drops position 0
    from every role (its row is all zeros), the "without first position" view.
    """
    oh = torch.tensor(
        [[[r == role for role in ROLES] + [r in ("A", "B"), p == 0] for p, r in enumerate(rs)] for rs in roles],
        dtype=torch.float32,
    )
    if not first:
        oh[:, 0] = 0
    return oh


def role_mass(rows: torch.Tensor, roles: Sequence[Sequence[str]]) -> torch.Tensor:
    """Attention mass per role. ``rows: (n, H, seq)`` END rows, ``roles[i]``: seq labels of sample i.

    Returns ``(n, H, len(ROLES))``; it sums to the row sums (1 for a softmax row).
    """
    return role_stats(rows, roles)["mass"][..., : len(ROLES)]


def role_stats(rows: torch.Tensor, roles: Sequence[Sequence[str]]) -> dict[str, torch.Tensor]:
    """Per-sample role masses and token counts, with and without the first position.

    ``rows: (n, H, seq)`` END rows (softmax rows), ``roles[i]``: seq labels of sample i. Returns
    ``mass``, ``mass_nofirst``: ``(n, H, len(ALL_ROLES))``; ``tokens``, ``tokens_nofirst``:
    ``(n, len(ALL_ROLES))``. Without the first position a row is renormalised over positions 1..:
    ``mass_nofirst[r] = Σ_{p≥1, p∈r} a_p / Σ_{p≥1} a_p`` (the sink's share removed, the rest kept in
    proportion); the ``ROLES`` part of either mass sums to 1 per head.
    """
    oh, oh_nf = role_onehot(roles).to(rows), role_onehot(roles, first=False).to(rows)
    rest = rows[..., 1:].sum(-1, keepdim=True).clamp_min(torch.finfo(rows.dtype).tiny)  # (n, H, 1)
    return {
        "mass": torch.einsum("nhs,nsr->nhr", rows, oh),
        "mass_nofirst": torch.einsum("nhs,nsr->nhr", rows, oh_nf) / rest,
        "tokens": oh.sum(1),
        "tokens_nofirst": oh_nf.sum(1),
    }


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
            raise ValueError(
                "the attention module returned no weights: load the model with "
                "attn_implementation='eager' (sdpa and flash attention do not return them)"
            )
        rows[names[name]] = out[1][:, :, -1].float().cpu()
        return out

    with TraceDict(model, list(names), retain_output=False, edit_output=keep, stop=True):
        model(ids.to(input_device(model)))
    return rows


COLUMNS = [
    "layer",
    "head",
    "role",
    "mean_score",
    "kv_head",
    "task",
    "n",
    "se",
    "tokens",
    "density",
    "mass_nofirst",
    "se_nofirst",
    "tokens_nofirst",
    "density_nofirst",
]


def _summary(mass: torch.Tensor, mass_nf: torch.Tensor, tokens: torch.Tensor, tokens_nf: torch.Tensor) -> dict:
    """Means over samples (dim 0) of ``(n, L, H, R)`` masses and ``(n, R)`` counts; see :func:`attention_by_role`."""
    n = mass.shape[0]
    se = lambda x: x.std(0) / n**0.5 if n > 1 else torch.full(x.shape[1:], float("nan"))
    m, m_nf, t, t_nf = mass.mean(0), mass_nf.mean(0), tokens.mean(0), tokens_nf.mean(0)
    dens = lambda x, c: torch.where(c > 0, x / c.clamp_min(1e-12), torch.full_like(x, float("nan")))
    nan_first = torch.ones(len(ALL_ROLES))
    nan_first[ALL_ROLES.index("first")] = float("nan")  # no first position in the "without" view
    return {
        "mean_score": m,
        "se": se(mass),
        "tokens": t.expand_as(m),
        "density": dens(m, t),
        "mass_nofirst": m_nf * nan_first,
        "se_nofirst": se(mass_nf) * nan_first,
        "tokens_nofirst": t_nf.expand_as(m),
        "density_nofirst": dens(m_nf, t_nf) * nan_first,
    }


def attention_by_role(
    model, tok, samples: Sequence[pairs.Sample], layers: Iterable[int] | None = None, batch_size: int = 64
) -> pd.DataFrame:
    """END-row attention per role of every head of ``layers`` (default: all), per task, two views.

    Returns a long DataFrame, one row per ``layer, head, role, task`` (``role`` in :data:`ALL_ROLES`;
    ``task`` is each sample's operation plus ``"all"``, Fig. 5 has one panel per operation), with

    * ``mean_score``, ``se``: mean mass over the ``n`` samples and its standard error, the first
      position counted in its own role (a BOS, or ``{A}`` where a prompt starts with it);
    * ``mass_nofirst``, ``se_nofirst``: the same with position 0 dropped and each row renormalised
      over the rest (NaN for role ``first``);
    * ``tokens``, ``tokens_nofirst``: mean number of tokens of the role per prompt;
    * ``density``, ``density_nofirst``: mass per token, pooled over prompts (mean mass / mean
      tokens, so ``density · tokens`` sums to 1 over :data:`ROLES`; NaN where the role has no token).

    ``bos`` is position 0 when it holds the tokenizer's BOS id (read from the ids, not the model's name);
    ``first`` is position 0 whatever it holds (the attention sink of models without BOS).
    """
    geo = geometry(model)
    layers = list(range(geo.n_layers)) if layers is None else sorted(set(layers))
    has_bos = tok.bos_token_id is not None
    n, R = len(samples), len(ALL_ROLES)
    mass, mass_nf = torch.zeros(n, len(layers), geo.n_heads, R), torch.zeros(n, len(layers), geo.n_heads, R)
    tokens, tokens_nf = torch.zeros(n, R), torch.zeros(n, R)
    for idx, ids in group_by_length(tok, [s.clean for s in samples], batch_size):
        rows = end_rows(model, ids, layers)
        bos = has_bos and int(ids[0, 0]) == tok.bos_token_id
        roles = [role_labels(samples[i].positions, ids.shape[1], bos) for i in idx]
        for j, l in enumerate(layers):
            st = role_stats(rows[l], roles)
            mass[idx, j], mass_nf[idx, j] = st["mass"], st["mass_nofirst"]
        tokens[idx], tokens_nf[idx] = st["tokens"], st["tokens_nofirst"]
    out = []
    ops = np.array([s.op for s in samples])
    for task in ["all"] + sorted(set(ops)):
        sel = torch.from_numpy(np.ones(n, bool) if task == "all" else ops == task)
        cols = _summary(mass[sel], mass_nf[sel], tokens[sel], tokens_nf[sel])  # each (L, H, R)
        for (j, l), h, (r, role) in itertools.product(enumerate(layers), range(geo.n_heads), enumerate(ALL_ROLES)):
            out.append(
                (
                    l,
                    h,
                    role,
                    float(cols["mean_score"][j, h, r]),
                    geo.kv_head(h),
                    task,
                    int(sel.sum()),
                    *(float(cols[c][j, h, r]) for c in COLUMNS[7:]),
                )
            )
    return pd.DataFrame(out, columns=COLUMNS)


def label_heads(
    roles: pd.DataFrame, heads: Sequence[Head] | None = None, task: str = "all", view: str = "with first"
) -> pd.DataFrame:
    """One row per head: ``operand`` (A+B), ``operator``, ``rest`` (bos+other) masses and the ``label``.

    ``view``: ``"with first"`` (``mean_score``) or ``"without first"`` (``mass_nofirst``, where bos is 0
    and rest is the other tokens); ``first`` (mass on position 0, ``mean_score``) is kept when present.
    """
    col = VIEWS[view][0]
    df = roles[roles.task == task]
    wide = df.pivot(index=["layer", "head", "kv_head"], columns="role", values=col)
    if "first" in set(df.role):
        wide["first"] = df[df.role == "first"].set_index(["layer", "head", "kv_head"]).mean_score
    df = wide.reset_index()
    df.columns.name = None
    if heads is not None:
        order = {h: i for i, h in enumerate(heads)}
        df = df[[(l, h) in order for l, h in zip(df["layer"], df["head"])]]
        df = df.assign(rank=[order[(l, h)] for l, h in zip(df["layer"], df["head"])]).sort_values("rank")
    df = df.assign(operand=df.A + df.B, rest=df.bos.fillna(0) + df.other)
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


# ------------------------------------------------------------------------------ the non-key control
BASELINE_ROLES = ("A", "B", "operand", "operator", "other", "first")
BASELINE_COLUMNS = [
    "name",
    "layer",
    "head",
    "role",
    "measure",
    "view",
    "value",
    "se",
    "n",
    "nonkey_median",
    "nonkey_p05",
    "nonkey_p95",
    "percentile",
    "n_nonkey",
    "verdict",
]
MIN_NONKEY = 20  # fewer non-key heads than this: a 5–95 % range means little → inconclusive
ROLE_RULES = {"operand": "attention-roles", "operator": "attention-reads-operator"}  # the claim of each role


def rule_verdict(value: float, se: float, p95: float, n_nonkey: int) -> str:
    """The rule, fixed before any run: a key head reads a role *more than the non-key heads* when its
    value lies above the non-key heads' 95th percentile by more than two standard errors (``holds``);
    below it by more than two (``does not hold``); otherwise, or with fewer than :data:`MIN_NONKEY`
    non-key heads or no value, ``inconclusive``."""
    if not np.isfinite(value) or not np.isfinite(p95) or n_nonkey < MIN_NONKEY:
        return "inconclusive"
    margin = 2 * se if np.isfinite(se) else 0.0
    return "holds" if value - margin > p95 else "does not hold" if value + margin < p95 else "inconclusive"


def nonkey_baseline(roles: pd.DataFrame, key_heads: Sequence[Head], task: str = "all") -> pd.DataFrame:
    """Each key head's role masses and densities beside the distribution over every *non-key* head.

    ``roles``: :func:`attention_by_role` (attention_roles.csv). For each key head (ranked), role of
    :data:`BASELINE_ROLES`, ``measure`` (mass / density) and ``view`` (with / without first position):
    ``value`` (± ``se``, over ``n`` prompts; a density's se is the mass's divided by the mean token
    count), the non-key heads' median, 5th and 95th percentiles (``numpy.percentile``, linear), the
    key head's ``percentile`` among them (share below, ties counted half, in %), ``n_nonkey`` (non-key
    heads with a value; key heads are never in it) and the :func:`rule_verdict`.
    """
    df = roles[(roles.task == task) & roles.role.isin(BASELINE_ROLES)]
    keys = list(dict.fromkeys((int(l), int(h)) for l, h in key_heads))
    key_set = set(keys)
    is_key = np.array([(int(l), int(h)) in key_set for l, h in zip(df["layer"], df["head"])], bool)
    out = []
    for (view, (mcol, dcol)), role in itertools.product(VIEWS.items(), BASELINE_ROLES):
        sel = (df.role == role).to_numpy()
        if not sel.any() or (role == "first" and view == "without first"):  # absent, or undefined
            continue
        for measure, col in (("mass", mcol), ("density", dcol)):
            base = df.loc[sel & ~is_key, col].to_numpy(float)
            base = base[np.isfinite(base)]
            q = np.percentile(base, [50, 5, 95]) if len(base) else np.full(3, np.nan)
            err_col = "se" if view == "with first" else "se_nofirst"
            tok_col = "tokens" if view == "with first" else "tokens_nofirst"
            at = df[sel].set_index(["layer", "head"])
            for l, h in keys:
                if (l, h) not in at.index:
                    raise ValueError(f"key head {l}.{h} is not in the attention table (layers {sorted(set(df.layer))})")
                row = at.loc[(l, h)]
                v, se = float(row[col]), float(row[err_col])
                se = se / float(row[tok_col]) if measure == "density" and float(row[tok_col]) > 0 else se
                pct = (
                    100 * (np.sum(base < v) + 0.5 * np.sum(base == v)) / len(base)
                    if len(base) and np.isfinite(v)
                    else np.nan
                )
                out.append(
                    (
                        f"{l}.{h}",
                        l,
                        h,
                        role,
                        measure,
                        view,
                        v,
                        se,
                        int(row["n"]),
                        *q,
                        pct,
                        len(base),
                        rule_verdict(v, se, q[2], len(base)),
                    )
                )
    return pd.DataFrame(out, columns=BASELINE_COLUMNS)


def verdict_lines(
    baseline: pd.DataFrame, role: str = "operand", measure: str = "mass", heads_from: str | None = None
) -> list[str]:
    """Sentences for a chapter, from :func:`nonkey_baseline` rows (attention_baseline.csv): the rule,
    then per head the verdict without the first position, with the first-position verdict beside.

    ``heads_from``: where the analysed heads come from (``analyze.json``'s ``heads_from``). The lines call
    them *key heads* only when it is ``"key heads"`` (the key-head rule passed them); otherwise — the top
    heads by effect rank of a model where none passes, or unknown — they are "analysed heads"."""
    what = "key heads" if heads_from == "key heads" else "analysed heads"
    b = baseline[(baseline.role == role) & (baseline.measure == measure)]
    if b.empty:
        return [f"No {what[:-1]} to compare with the other heads on {role} {measure}."]
    wo, w = b[b.view == "without first"], b[b.view == "with first"].set_index("name")
    first = wo.iloc[0]
    others = "non-key heads" if what == "key heads" else "other heads"
    rule = ROLE_RULES.get(role, "attention-roles")
    lines = [
        f"Rule (`{rule}`): a head reads the {role} tokens more than the other heads when "
        f"its END attention {measure} on them, first position excluded and the rest renormalised, lies "
        f"above the 95th percentile of the {int(first.n_nonkey)} {others} by more than two standard "
        f"errors (n = {int(first.n)} prompts)."
    ]
    for r in wo.itertuples():
        o = w.loc[r.name]
        lines.append(
            f"{component_label(r.name)}: {r.value:.3f} ± {r.se:.3f} vs the {others}' median {r.nonkey_median:.3f}, "
            f"95th percentile {r.nonkey_p95:.3f} (percentile {r.percentile:.0f}): **{r.verdict}**; with the "
            f"first position: {o.value:.3f} vs {o.nonkey_p95:.3f}, {o.verdict}."
        )
    tally = wo.verdict.value_counts()
    source = f" ({heads_from})" if heads_from and what != "key heads" else ""
    nope = tally.get("does not hold", 0)
    lines.append(
        f"{tally.get('holds', 0)} of {len(wo)} {what}{source} hold, {nope} {'does' if nope == 1 else 'do'} not, "
        f"{tally.get('inconclusive', 0)} inconclusive."
    )
    return lines
