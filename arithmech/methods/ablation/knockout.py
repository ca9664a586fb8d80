"""Knockout by mean ablation (paper §4.1, Fig. 3) and shared-head knockout (Table 4);
:mod:`arithmech.methods.ablation.transfer` runs it on Fig. 4's prompts and a held-out family.

A knocked-out head no longer writes what it computed on the prompt: its slice of the o_proj input
(its output before ``W_O``) is replaced by its mean over the counterfactual prompts ``X_c`` — the
"average activation across counterfactual data" of §4.1. A knocked-out MLP has its output replaced
the same way. **Where** (``positions``):

* ``"end"`` (default): at the END position only — the position path patching measured, so the
  knockout validates exactly the effect that ranked the heads. Every earlier position is the clean
  run's, so the prompt's prefix is run once and each ablation only runs the END token on top of its
  key/value cache: about ``seq`` times less compute than ``"all"``, with the same numbers as a full
  forward that ablates at END (tested).
* ``"all"``: at every position (Wang et al. 2023's mean ablation of a whole head); the heads then
  also stop feeding later layers at earlier positions, so random heads hurt more.

Three kinds of mean:

* **reference pool** (:mod:`arithmech.methods.ablation.pool`, what identify uses): X_c prompts drawn
  apart from the evaluated ones, a prompt's own operand pair left out, per template × length ×
  position with a documented family fallback.
* **per group** (:func:`mean_activations`): one mean per template and token length, per position,
  over the ``X_c`` prompts of that group: position ``p`` of an ``X_r`` prompt gets the mean of
  position ``p`` of its own template's ``X_c`` prompts (Wang et al. 2023's mean ablation). The evaluated
  prompt's own X_c is in its group's mean (kept for the prompt explorer and the Table 4 comparison).
* **pooled** (:meth:`Means.pooled`): one vector for the first position and one for all later
  positions, averaged over every ``X_c`` prompt. Used on prompts that have no ``X_c`` of their own
  (Fig. 4's cases, a held-out template family, GSM8K-style text).

Position 0 is ``<s>`` for Llama tokenizers: it is the same token in every prompt, so its mean is
(to float rounding) its own value and knocking out leaves it alone, as it should.

Many ablations are run in one forward: each prompt is repeated once per ablation (rows
``prompt-major``: row ``i * G + a`` is prompt ``i`` under ablation ``a``) and each row carries its
own head/MLP mask (``(rows, L, H)`` / ``(rows, L)``), so a whole curve costs a few batched forwards;
identical ablations (``k = 0`` of every order, say) run once. Accuracy is top-1 at END against the
answer token {C} (:func:`~arithmech.data.batches.answer_ids`, whichever token that is).

Random baselines (:func:`~arithmech.methods.ablation.curves.knockout_curve`, in
:mod:`arithmech.methods.ablation.curves`) draw from the components *outside* ``exclude`` (the key
heads / MLPs) and, with ``exclude_top``, outside the top ``k`` by effect rank at each ``k``, ``n_random`` seeded
orders; every accuracy comes with its count and Wilson interval.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from arithmech.core import prefix as shared_prefix
from arithmech.core.models import BATCH_SIZE, arch_for, geometry, input_device
from arithmech.core.prefix import SharedPrefix
from arithmech.core.trace import TraceDict
from arithmech.data.batches import answer_ids, group_by_length
from arithmech.data.pairs import Sample
from arithmech.methods.ablation.intervention import Forwards, MeanAblation, MeanSource

Head = tuple[int, int]


@dataclass(frozen=True)
class Ablation:
    """What to knock out: heads as ``(layer, head)`` and MLPs as layer indices."""

    heads: frozenset = frozenset()
    mlps: frozenset = frozenset()

    @classmethod
    def of(cls, heads: Sequence[Head] = (), mlps: Sequence[int] = ()) -> Ablation:
        return cls(frozenset(map(tuple, heads)), frozenset(mlps))


@dataclass
class Means:
    """Mean o_proj input ``z[key]``: ``(L, seq, H*dh)`` and MLP output ``mlp[key]``: ``(L, seq, d)``
    per group ``key``, with ``count[key]`` prompts. A pooled ``Means`` has ``seq == 2`` (first
    position, every later position) and the single key ``"*"``. A
    :class:`~arithmech.methods.ablation.intervention.MeanSource`."""

    z: dict = field(default_factory=dict)
    mlp: dict = field(default_factory=dict)
    count: dict = field(default_factory=dict)

    @property
    def is_pooled(self) -> bool:
        """One pooled mean for every prompt (:meth:`pooled`)."""
        return list(self.z) == ["*"]

    def key(self, s: Sample) -> Hashable:
        """The group a sample's mean is looked up under (its template)."""
        return group_key(s)

    def source(self, key: Hashable | None, seq: int) -> str:
        """Which mean a prompt gets (the same for every prompt here), for ``mean_source``."""
        return "pooled X_c (first / later positions)" if self.is_pooled else "X_c of the evaluated samples"

    def lookup(self, key: Hashable, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(L, seq, H*dh)``, ``(L, seq, d)`` means for a prompt of group ``key`` and length ``seq``."""
        if self.is_pooled:
            z, m = self.z["*"], self.mlp["*"]
            pick = torch.tensor([0] + [1] * (seq - 1))
            return z[:, pick], m[:, pick]
        k = (key, seq)
        if k not in self.z:
            raise KeyError(
                f"no X_c mean for group {key!r} at length {seq}; compute the means on the same "
                "samples, or use Means.pooled() for prompts without counterfactuals"
            )
        return self.z[k], self.mlp[k]

    def pooled(self) -> Means:
        """Position-pooled means: position 0 and positions >= 1 averaged over every group."""
        z0 = zr = m0 = mr = torch.zeros(())  # sums over the groups (0 + x is x exactly)
        n0 = nr = 0
        for k, z in self.z.items():
            c, seq = self.count[k], z.shape[1]
            z0, m0 = z0 + c * z[:, 0], m0 + c * self.mlp[k][:, 0]
            zr, mr = zr + c * z[:, 1:].sum(1), mr + c * self.mlp[k][:, 1:].sum(1)
            n0, nr = n0 + c, nr + c * (seq - 1)
        return Means({"*": torch.stack([z0 / n0, zr / nr], 1)}, {"*": torch.stack([m0 / n0, mr / nr], 1)}, {"*": n0})

    def for_unseen(self) -> Means:
        """Prompts outside the groups (free text, a held-out family) get the position-pooled means."""
        return self if self.is_pooled else self.pooled()

    def describe(self) -> str:
        """One line for ``run.json``: which means these are."""
        return "X_c of the identification samples (per template)"


def group_key(s: Sample) -> str:
    """The mean-ablation group of a sample: its template."""
    return s.template


@torch.no_grad()
def activations(model, tok, prompts: Sequence[str], batch_size: int = BATCH_SIZE):
    """Yield ``(i, z, m)`` for each prompt ``prompts[i]`` (batches of equal-length prompts run together):
    every layer's head outputs ``z (L, seq, H*dh)`` (o_proj input) and MLP outputs ``m (L, seq, d)``,
    float32 on the CPU. One prompt at a time, and a batch's captures are dropped before the next batch
    runs: the peak is one batch's captures, not a stacked ``(b, L, seq, ·)`` copy beside them."""
    arch, L = arch_for(model), geometry(model).n_layers
    zs = arch.head_sites(range(L))
    ms = arch.mlp_sites(range(L))
    got: dict = {}

    def grab(x, name):
        got[name] = x[0] if isinstance(x, tuple) else x
        return x

    dev = input_device(model)
    with (
        TraceDict(model, zs, retain_output=False, edit_input=grab),
        TraceDict(model, ms, retain_output=False, edit_output=grab),
    ):
        for idx, ids in group_by_length(tok, prompts, batch_size):  # a shared few-shot prefix runs once
            z, m = shared_prefix.captured(
                model, ids.to(dev), lambda: ([got.pop(n) for n in zs], [got.pop(n) for n in ms])
            )
            z, m = [x.float().cpu() for x in z], [x.float().cpu() for x in m]  # L x (b, seq, H*dh), L x (b, seq, d)
            for r, i in enumerate(idx):
                yield i, torch.stack([x[r] for x in z]), torch.stack([x[r] for x in m])
            z = m = None


def mean_activations(
    model, tok, prompts: Sequence[str], keys: Sequence[Hashable], batch_size: int = BATCH_SIZE
) -> Means:
    """Per-group, per-position means of every head's output (o_proj input) and every MLP output.

    ``keys[i]`` names the group of ``prompts[i]`` (e.g. its template); prompts of one key and one
    token length form a group. Pass the ``X_c`` prompts (the paper's choice). Sums are float32 on
    the CPU (:func:`activations`), whatever the model's dtype and device.
    """
    sums_z: dict = {}
    sums_m: dict = {}
    count: dict = {}
    for i, z, m in activations(model, tok, prompts, batch_size):  # z: (L, seq, H*dh), m: (L, seq, d)
        k = (keys[i], z.shape[1])
        sums_z[k] = sums_z.get(k, 0) + z
        sums_m[k] = sums_m.get(k, 0) + m
        count[k] = count.get(k, 0) + 1
    return Means({k: v / count[k] for k, v in sums_z.items()}, {k: v / count[k] for k, v in sums_m.items()}, count)


@torch.no_grad()
def knockout_topk(
    model,
    tok,
    prompts: Sequence[str],
    keys: Sequence[Hashable] | None,
    means: MeanSource,
    ablations: Sequence[Ablation],
    k: int = 1,
    forwards: Forwards = Forwards(),
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-``k`` next tokens at END under each ablation (each a
    :class:`~arithmech.methods.ablation.intervention.MeanAblation` of every layer's o_proj input and MLP output, one
    mask row per prompt × ablation row).

    Args:
        prompts: the ``n`` prompts.
        keys: group of each prompt (as given to :func:`mean_activations`); ``None`` with pooled means.
        ablations: ``A`` ablations; the empty :class:`Ablation` is the intact model.
        forwards: the batching and where to ablate (:class:`~arithmech.methods.ablation.intervention.Forwards`:
            ``"end"``, the default, or ``"all"``; see the module docstring).
    Returns:
        ``ids (A, n, k)`` and ``probs (A, n, k)``.

    >>> ids, p = knockout_topk(model, tok, ["4 + 3 ="], None, means.for_unseen(), [Ablation(), Ablation.of([(0, 3)])],
    ...                        k=5, forwards=Forwards(positions="all"))     # ids, p: (2, 1, 5)
    """
    A, n = len(ablations), len(prompts)
    out_ids = torch.empty(A, n, k, dtype=torch.long)
    out_p = torch.empty(A, n, k)
    for where, idx, logits in ablated_logits(model, tok, prompts, keys, means, ablations, forwards):
        p, i = logits.softmax(-1).topk(k, -1)  # (G * b, k), row i*G + a
        b, G = len(idx), len(where)
        i, p = i.cpu().view(b, G, k), p.cpu().view(b, G, k)
        for g, rows in where.items():
            for a in rows:
                out_ids[a, idx], out_p[a, idx] = i[:, g], p[:, g]
    return out_ids, out_p


@torch.no_grad()
def ablated_logits(
    model,
    tok,
    prompts: Sequence[str],
    keys: Sequence[Hashable] | None,
    means: MeanSource,
    ablations: Sequence[Ablation],
    forwards: Forwards = Forwards(),
):
    """The forwards of :func:`knockout_topk` (same arguments), as a generator of ``(where, idx, logits)``:
    ``logits (b * G, vocab)`` float32 END logits of the prompts ``idx`` (a batch of ``b`` equal-length
    prompts) under ``G`` distinct ablations, row ``i * G + g`` prompt ``idx[i]`` under the ``g``-th of them;
    ``where[g]`` lists the positions in ``ablations`` that ablation stands for (identical ablations run once).
    While a chunk is yielded, every hook on the model has just seen that chunk's END forward (a caller's own
    :class:`~arithmech.core.trace.TraceDict` around the loop reads it there)."""
    batch_size, positions = forwards.batch_size, forwards.positions  # checked when the Forwards was made
    max_rows, max_tokens = forwards.max_rows, forwards.max_tokens
    arch, geo = arch_for(model), geometry(model)
    L, H = geo.n_layers, geo.n_heads
    unique = list(dict.fromkeys(ablations))  # identical ablations run once
    A = len(unique)
    hmask = torch.zeros(A, L, H, dtype=torch.bool)
    mmask = torch.zeros(A, L, dtype=torch.bool)
    for a, ab in enumerate(unique):
        for l, h in ab.heads:
            hmask[a, l, h] = True
        for l in ab.mlps:
            mmask[a, l] = True
    slots: dict = {}
    for j, ab in enumerate(ablations):
        slots.setdefault(unique.index(ab), []).append(j)
    zs = arch.head_sites(range(L))
    ms = arch.mlp_sites(range(L))
    st: dict = {"G": 1}  # G: ablations per prompt in this forward

    def edit_z(x, name):  # x: (rows, seq', H*dh); mask (rows, H)
        l = zs[name]
        return MeanAblation(st["h"][:, l], st["z"][:, l], positions, repeat=st["G"])(x)

    def edit_m(y, name):  # y: (rows, seq', d); mask (rows, 1)
        l = ms[name]
        return MeanAblation(st["m"][:, l, None], st["mlp"][:, l], positions, repeat=st["G"])(y)

    dev = input_device(model)
    batches = [(idx, ids.to(dev)) for idx, ids in group_by_length(tok, prompts, batch_size)]
    # the clean prefix before END (few-shot examples shared by a batch run once), before any hook is set
    shared = SharedPrefix(model, [ids[:, :-1] for _, ids in batches if ids.shape[1] > 1] if positions == "end" else [])
    with (
        TraceDict(model, zs, retain_output=False, edit_input=edit_z),
        TraceDict(model, ms, retain_output=False, edit_output=edit_m),
    ):
        for idx, ids in batches:
            b, seq = ids.shape
            end = positions == "end" and seq > 1
            look = []
            for i in idx:  # END only: keep one position per prompt
                z, m = means.lookup(None if keys is None else keys[i], seq)
                look.append((z[:, -1:].clone(), m[:, -1:].clone()) if end else (z, m))
            st["z"] = torch.stack([z for z, _ in look])  # (b, L, seq or 1, H*dh)
            st["mlp"] = torch.stack([m for _, m in look])  # (b, L, seq or 1, d)
            look, prefix = [], None  # the lookups freed before the forwards
            if end:
                st["h"], st["m"] = torch.zeros(b, L, H, dtype=torch.bool), torch.zeros(b, L, dtype=torch.bool)
                prefix = shared.forward(ids[:, :-1], logits_to_keep=1, use_cache=True).cache  # clean
            G = max(1, min(max_rows, max_tokens // seq) // b)
            cache: DynamicCache | None = None
            for a0 in range(0, A, G):
                a1 = min(A, a0 + G)
                st["G"] = a1 - a0
                st["h"] = hmask[a0:a1].repeat(b, 1, 1)  # row i*G + a: ablation a0 + a
                st["m"] = mmask[a0:a1].repeat(b, 1)
                if prefix is None:
                    logits = (
                        model(ids.repeat_interleave(a1 - a0, 0).to(dev), logits_to_keep=1, use_cache=False)
                        .logits[:, -1]
                        .float()
                    )
                else:
                    # a generator: each layer's repeat is copied into the cache and freed at once
                    cache = DynamicCache(
                        (
                            (c.keys.repeat_interleave(a1 - a0, 0), c.values.repeat_interleave(a1 - a0, 0))
                            for c in prefix.layers
                        ),
                        config=model.config,
                    )
                    logits = (
                        model(ids[:, -1:].repeat_interleave(a1 - a0, 0).to(dev), cache=cache, use_cache=True)
                        .logits[:, -1]
                        .float()
                    )
                yield {a - a0: slots[a] for a in range(a0, a1)}, idx, logits
                logits = cache = None  # freed before the next chunk builds its own


def correct(
    model,
    tok,
    samples: Sequence[Sample],
    means: MeanSource,
    ablations: Sequence[Ablation],
    forwards: Forwards = Forwards(),
) -> torch.Tensor:
    """``(A, n)`` whether the top-1 token at END is the answer token under each ablation.

    ``means``: a :class:`Means` or a :class:`~arithmech.methods.ablation.pool.PoolMeans`; ``forwards``:
    :func:`knockout_topk`'s."""
    keys = None if means.is_pooled else [means.key(s) for s in samples]
    ids, _ = knockout_topk(model, tok, [s.clean for s in samples], keys, means, ablations, k=1, forwards=forwards)
    return ids[..., 0] == answer_ids(tok, samples)


def scores(
    model,
    tok,
    samples: Sequence[Sample],
    means: MeanSource,
    ablations: Sequence[Ablation],
    other: torch.Tensor,
    forwards: Forwards = Forwards(),
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(correct, gaps)``, each ``(A, n)``, from one pass of ablated forwards: :func:`correct`'s top-1 hits (the same
    ``softmax().topk(1)`` read) and the logit difference ``logit({C}) − logit(other[i])`` at END of each X_r under
    each ablation, with ``other`` the counterfactual answers (:func:`counter_answers`): the knockout on the quantity
    identify ranks by, beside the top-1 (which a prompt chosen to be right keeps until its answer loses the rank)."""
    keys = None if means.is_pooled else [means.key(s) for s in samples]
    answer = answer_ids(tok, samples)
    hit = torch.empty(len(ablations), len(samples), dtype=torch.bool)
    out = torch.empty(len(ablations), len(samples), dtype=torch.float64)
    for where, idx, logits in ablated_logits(model, tok, [s.clean for s in samples], keys, means, ablations, forwards):
        G = len(where)
        top = logits.softmax(-1).topk(1, -1)[1].cpu().view(len(idx), G)
        lg = logits.double().cpu().view(len(idx), G, -1)
        gap = lg.gather(-1, answer[idx].view(-1, 1, 1).expand(-1, G, 1)) - lg.gather(
            -1, other[idx].view(-1, 1, 1).expand(-1, G, 1)
        )
        for g, rows in where.items():
            for a in rows:
                out[a, idx] = gap[:, g, 0]
                hit[a, idx] = top[:, g] == answer[idx]
    return hit, out


def counter_answers(model, tok, samples: Sequence[Sample], means: MeanSource, forwards: Forwards = Forwards()):
    """``(n,)``: the intact model's top-1 token at END of each X_c, the counterfactual answer identify's logit
    difference reads (:func:`arithmech.methods.patching.counter_fields`)."""
    keys = None if means.is_pooled else [means.key(s) for s in samples]
    ids, _ = knockout_topk(model, tok, [s.corrupt for s in samples], keys, means, [Ablation()], k=1, forwards=forwards)
    return ids[0, :, 0]


def accuracy(
    model,
    tok,
    samples: Sequence[Sample],
    means: MeanSource,
    ablations: Sequence[Ablation],
    forwards: Forwards = Forwards(),
) -> torch.Tensor:
    """``(A,)`` top-1 accuracy on ``samples`` (answer token {C}) under each ablation."""
    return correct(model, tok, samples, means, ablations, forwards).float().mean(-1)


def mean_sources(tok, samples: Sequence[Sample], means: MeanSource) -> str:
    """Which mean the samples got, as ``source n; …`` (``means.source`` per prompt)."""
    keys = [None if means.is_pooled else means.key(s) for s in samples]
    got = Counter(means.source(k, len(tok(s.clean)["input_ids"])) for k, s in zip(keys, samples))
    return "; ".join(f"{k} {v}" for k, v in sorted(got.items()))
