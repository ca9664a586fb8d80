"""Mean-ablation values from a reference pool that the evaluated prompts never see.

A knocked-out component gets "the average activation across counterfactual data" (paper §4.1). If
that average is taken over the evaluated prompts' own X_c, a prompt's own operands sit in its own
mean and the knockout can hand the answer back. Here the means come from a **reference pool**:

* per template family (``equation``, ``statement``, ``qa``, ``time-span``, ``accumulation``, ...)
  ``pool_size`` X_c prompts (default 512) drawn by :func:`arithmech.data.pairs.make_pairs` from a
  seeded stream of its own (:func:`pool_seed`), so no evaluated prompt is in the pool;
* **leave-one-fold-out over operand pairs**: every operand pair ``(a, b)`` belongs to one of
  ``folds`` folds (:func:`fold`, a fixed hash, not the sum, so a fold is not an answer); a prompt with
  pair ``(a, b)`` is ablated with the mean of the pool prompts of the *other* folds, so its own pair
  (and a quarter of the others, with 4 folds) is never in its mean;
* **per position**: the mean of group ``(template, token length)`` at each position (the paper's
  mean ablation); when that group holds fewer than ``min_group`` prompts outside the fold, the
  **family** mean at the same position counted from END (right-aligned over the family's prompts of
  every length) is used instead, and prompts with no family (Fig. 4's free text) get the mean of
  **every family** right-aligned (positions further from END than any pool prompt reaches: the mean
  over all of the pool's positions). :meth:`PoolMeans.source` names which one a prompt got; the knockout
  tables record it (``mean_source``).

Sums are accumulated in float32 whatever the model's dtype (activations are cast before summing).
Shapes: a group's sums are ``(folds, L, seq, H*dh)`` (head outputs, the o_proj input) and
``(folds, L, seq, d)`` (MLP outputs); a family's are right-aligned ``(folds, L, max_len, ·)`` with
counts ``(folds, max_len)``.
"""

from __future__ import annotations

import zlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import torch

from arithmech.core.models import BATCH_SIZE
from arithmech.data import pairs
from arithmech.data.batches import group_by_length
from arithmech.data.draw import Draw
from arithmech.methods.ablation.knockout import activations

ALL = "*"  # the family key of "every family"


def fold(a: int, b: int, folds: int) -> int:
    """The fold of operand pair ``(a, b)``: a fixed hash (crc32 of ``"a,b"``) modulo ``folds``."""
    return zlib.crc32(f"{a},{b}".encode()) % folds


def pool_seed(seed: int, family: str) -> int:
    """The seed of ``family``'s reference pool: its own stream, never the identification's ``seed``
    (``make_pairs(seed)``) nor the held-out test's (``seed + 1``)."""
    return zlib.crc32(f"reference-pool:{seed}:{family}".encode())


def pool_key(s: pairs.Sample) -> tuple:
    """What :meth:`PoolMeans.lookup` needs of a prompt: ``(template, family, a, b)``."""
    return (s.template, s.family, s.a, s.b)


def _parts(key: Hashable | None) -> tuple | None:
    """A pool key :func:`pool_key` ``(template, family, a, b)`` as the tuple it is (``None`` stays ``None``)."""
    if key is None or isinstance(key, tuple):
        return key
    raise TypeError(f"a pool key is (template, family, a, b), not {key!r}")


@dataclass
class PoolMeans:
    """Fold sums of a reference pool (see the module docstring) and the rule that picks a prompt's mean:
    a :class:`~arithmech.methods.ablation.intervention.MeanSource` whose :meth:`lookup` gives each prompt its own
    means."""

    folds: int
    min_group: int
    group: dict = field(default_factory=dict)  # (template, seq) -> [z (F, L, seq, ·), m, n (F,)]
    usable: set | None = None  # the groups prune() would keep, when known before adding
    family: dict = field(default_factory=dict)  # family -> [z (F, L, T, ·), m, n (F, T)] right-aligned
    sizes: dict = field(default_factory=dict)  # family -> pool prompts drawn
    digest: str | None = None  # the cache key (arithmech.methods.ablation.pool_cache), once known
    is_pooled = False  # a prompt's means depend on its key (MeanSource)

    # -------------------------------------------------------------------------------- building
    def add(self, key: tuple, z: torch.Tensor, m: torch.Tensor) -> None:
        """Add one pool prompt (``key`` = :func:`pool_key`; ``z (L, seq, H*dh)``, ``m (L, seq, d)``)."""
        template, fam, a, b = key
        f, seq = fold(a, b, self.folds), z.shape[1]
        if self.usable is None or (template, seq) in self.usable:  # else no prompt can use the group
            g = self.group.setdefault(
                (template, seq),
                [torch.zeros(self.folds, *z.shape), torch.zeros(self.folds, *m.shape), torch.zeros(self.folds)],
            )
            g[0][f] += z
            g[1][f] += m
            g[2][f] += 1
        for name in (fam, ALL):
            e = self.family.get(name)
            if e is None or e[0].shape[2] < seq:  # grow the right-aligned window
                T = max(seq, 0 if e is None else e[0].shape[2])
                new = [
                    torch.zeros(self.folds, z.shape[0], T, z.shape[2]),
                    torch.zeros(self.folds, m.shape[0], T, m.shape[2]),
                    torch.zeros(self.folds, T),
                ]
                if e is not None:
                    t0 = e[0].shape[2]
                    new[0][:, :, T - t0 :], new[1][:, :, T - t0 :], new[2][:, T - t0 :] = e
                self.family[name] = e = new
            T = e[0].shape[2]
            e[0][f, :, T - seq :] += z
            e[1][f, :, T - seq :] += m
            e[2][f, T - seq :] += 1

    def plan(self, keys: Sequence[tuple], lengths: Sequence[int]) -> None:
        """Know the groups before adding (``keys`` = :func:`pool_key` and token ``lengths`` of every pool
        prompt still to come): :meth:`add` then never allocates a group :meth:`prune` would drop (the
        peak memory of a pool over many templates and lengths; the sums kept are the same)."""
        counts: dict = {}
        for (template, _, a, b), seq in zip(keys, lengths):
            counts.setdefault((template, seq), [0] * self.folds)[fold(a, b, self.folds)] += 1
        self.usable = {k for k, n in counts.items() if sum(n) - min(n) >= self.min_group}

    def prune(self) -> None:
        """Drop the groups no prompt can use (fewer than ``min_group`` outside every fold): memory only,
        the lookups are the same (such a prompt falls back to its family either way)."""
        for k in [k for k, (_, _, n) in self.group.items() if float((n.sum() - n).max()) < self.min_group]:
            del self.group[k]

    # -------------------------------------------------------------------------------- lookups
    def key(self, s: pairs.Sample) -> tuple:
        """What :meth:`lookup` needs of sample ``s``: :func:`pool_key`."""
        return pool_key(s)

    def for_unseen(self) -> PoolMeans:
        """The pool itself: a prompt outside its groups already gets its family's or every family's mean."""
        return self

    def _group(self, key, seq):
        if key is None:
            return None
        template, _, a, b = key
        g = self.group.get((template, seq))
        if g is None:
            return None
        f = fold(a, b, self.folds)
        n = float(g[2].sum() - g[2][f])
        return (g, f, n) if n >= self.min_group else None

    def source(self, key: Hashable | None, seq: int) -> str:
        """``"template"`` (template × length × position), ``"family"`` (the family, right-aligned) or
        ``"all-families"`` (no family of its own in the pool, or a prompt without one)."""
        if self._group(key, seq) is not None:
            return "template"
        k = _parts(key)
        return "family" if k is not None and k[1] in self.family else "all-families"

    def lookup(self, key: Hashable | None, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(L, seq, H*dh)``, ``(L, seq, d)`` float32 means for a prompt of length ``seq`` with
        ``key`` = :func:`pool_key` (``None``: a prompt with no family and no operands)."""
        got = self._group(key, seq)
        if got is not None:  # the other folds summed (no subtraction: exact)
            (z, m, _), f, n = got
            keep = torch.arange(self.folds) != f
            return z[keep].sum(0) / n, m[keep].sum(0) / n
        k = _parts(key)
        fam = k[1] if k is not None and k[1] in self.family else ALL
        f = fold(k[2], k[3], self.folds) if k is not None else None
        z, m, n = self.family[fam]
        z, m, n = z[:, :, -seq:], m[:, :, -seq:], n[:, -seq:]
        keep = torch.ones(self.folds, dtype=torch.bool)
        if f is not None:
            keep[f] = False
        cnt = n[keep].sum(0)  # (min(seq, T),)
        if seq <= z.shape[2] and bool((cnt > 0).all()):
            return z[keep].sum(0) / cnt[None, :, None], m[keep].sum(0) / cnt[None, :, None]
        if fam != ALL:
            return self.lookup(None if k is None else (k[0], ALL, k[2], k[3]), seq)
        # longer than every pool prompt: positions the pool never reaches get the mean over all its positions
        zs, ms, c = z[keep].sum(0), m[keep].sum(0), cnt.clamp(min=1)[None, :, None]
        fill_z, fill_m = zs.sum(1) / cnt.sum(), ms.sum(1) / cnt.sum()  # (L, ·)
        out_z, out_m = fill_z[:, None].repeat(1, seq, 1), fill_m[:, None].repeat(1, seq, 1)
        have = torch.cat([torch.zeros(seq - len(cnt), dtype=torch.bool), cnt > 0])
        out_z[:, have], out_m[:, have] = (zs / c)[:, cnt > 0], (ms / c)[:, cnt > 0]
        return out_z, out_m

    def describe(self) -> str:
        """One line for the results: pool sizes, folds and the fallback rule."""
        sizes = ", ".join(f"{k} {v}" for k, v in sorted(self.sizes.items()))
        return (
            f"reference pool ({sizes} X_c), leave-one-fold-out over operand pairs ({self.folds} folds), "
            f"template x length x position, family mean at the same position from END below {self.min_group}"
        )


def pool_prompts(tok, templates: Sequence, pool_size: int = 512, seed: int = 0, *, draw: Draw) -> dict:
    """family → the reference pool's pairs of that family (their ``corrupt`` prompts are the pool's X_c):
    ``pool_size`` per family from :func:`pool_seed`'s stream, the family's templates of ``templates``, round-robin.
    Only tokenizes: the same arguments give the same prompts (resample ablation draws single pool prompts,
    :mod:`arithmech.methods.faithfulness`); :func:`build_pool` takes them."""
    if pool_size < 1:
        raise ValueError(f"pool_size={pool_size}: need pool_size >= 1")
    by_family: dict = {}
    for t in templates:
        if t.id not in [u.id for u in by_family.get(t.family, [])]:
            by_family.setdefault(t.family, []).append(t)
    return {
        fam: pairs.make_pairs(tok, by_family[fam], n=pool_size, seed=pool_seed(seed, fam), draw=draw)[0]
        for fam in sorted(by_family)
    }


def build_pool(model, tok, pools: dict, folds: int = 4, min_group: int = 32, batch_size: int = BATCH_SIZE) -> PoolMeans:
    """The reference pool's means over ``pools`` (family → its pairs, :func:`pool_prompts`: ``pool_size`` X_c per
    family from :func:`pool_seed`'s stream, drawn with the evaluated prompts' draw, so their positions line up),
    summed per ``folds`` operand-pair folds; a (template, length) group of fewer than ``min_group`` X_c falls back to
    its family's mean."""
    if folds < 2 or min_group < 1:
        raise ValueError(
            f"folds={folds}, min_group={min_group}: need folds >= 2 (a prompt's own fold is left out) "
            "and min_group >= 1"
        )
    pm = PoolMeans(folds, min_group)
    every = [s for pool in pools.values() for s in pool]
    lengths = [0] * len(every)
    for idx, ids in group_by_length(tok, [s.corrupt for s in every], batch_size):
        for i in idx:
            lengths[i] = ids.shape[1]
    pm.plan([pool_key(s) for s in every], lengths)
    for fam, pool in pools.items():
        pm.sizes[fam] = len(pool)
        for i, z, m in activations(model, tok, [s.corrupt for s in pool], batch_size):
            pm.add(pool_key(pool[i]), z, m)
    pm.prune()
    return pm
