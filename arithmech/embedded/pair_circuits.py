"""Does the embedded model use the same components on facts it was trained on and on facts it never saw?

The embedded model is trained on most single-digit facts and held out from a seeded 15 % of the operand
pairs (:mod:`arithmech.data.heldout`). Identify's X_r are almost all trained facts, so its circuit may be a
lookup of memorised sentences. Here the same path patching (identify's, :func:`~arithmech.methods.patching.path_patch`)
runs on two sets of X_r of one operation, drawn from the same templates:

* **held out**: every distinct prompt of a held-out pair that the model answers right (and whose X_c moves
  the answer), as identify keeps its X_r;
* **trained**: as many prompts of trained pairs, kept the same way.

Each set ranks heads and MLPs by the mean relative change of the answer logit (identify's effect), and the
**top-k overlap** says how many of the trained set's top ``k`` components are also in the held-out set's. Two
sets of prompts never give exactly the same ranking, so the overlap is read against its **noise ceiling**:
the overlap between two disjoint halves of the trained prompts, each as large as the held-out set (the same
draw size, the same prompt noise, the same facts). Both come with a 95 % bootstrap interval (prompts
resampled within each set, ``n_boot`` times). If the held-out overlap sits at the ceiling, what the ranking
shows is not tied to memorised facts; far below it, the circuit on trained facts is not the one that
computes. A toy that answers only some held-out pairs right can only show this for those it gets right.

>>> r = compare(model, tok, "addition")
>>> r["overlap"], r["ceiling"]          # {"k", "value", "lo", "hi"} each
"""
from __future__ import annotations

import random

import torch

from arithmech.core.models import BATCH_SIZE
from arithmech.core.stats import bootstrap_counts
from arithmech.data import pairs
from arithmech.data.heldout import is_heldout_pair
from arithmech.methods.patching import path_patch
from arithmech.methods.prepare import prepare

TOP = 10            # components compared (identify's TOP: the heads a later step studies)
DRAWS = 4000        # pairs drawn per operation before the split (every held-out prompt of the templates appears)


def split_samples(model, tok, task: str = "addition", seed: int = 0, batch_size: int = BATCH_SIZE,
                  answer_token: str = "last-digit") -> dict[str, list[pairs.Sample]]:
    """``{"held out": X_r of held-out pairs, "trained": as many X_r of trained pairs}``, each prompt once,
    kept as identify keeps its X_r (:func:`arithmech.methods.prepare.prepare`: right, and X_c moves the answer).
    The trained prompts are a seeded subset of the kept ones."""
    drawn, _ = pairs.make_pairs(tok, task, n=DRAWS, seed=seed, answer_token=answer_token)
    distinct = list({s.clean: s for s in drawn}.values())
    held = [s for s in distinct if is_heldout_pair(s.op, s.a, s.b)]
    trained = [s for s in distinct if not is_heldout_pair(s.op, s.a, s.b)]
    kept_h = prepare(model, tok, held, len(held), seed, batch_size, answer_token)[0]
    rng = random.Random(f"pair-circuits:{seed}")
    pool = rng.sample(trained, min(len(trained), 3 * len(held)))    # the model answers most trained facts right
    kept_t = prepare(model, tok, pool, len(pool), seed, batch_size, answer_token)[0]
    return {"held out": kept_h, "trained": rng.sample(kept_t, min(len(kept_t), 2 * len(kept_h)))}


def effects(model, tok, samples: list[pairs.Sample], batch_size: int = BATCH_SIZE) -> torch.Tensor:
    """``(n, S)`` per-prompt relative change of the answer logit of every sender (``S = L * (H + 1)``, each
    layer's heads then its MLP), identify's effect."""
    p = path_patch(model, tok, [s.clean for s in samples], [s.corrupt for s in samples],
                   pairs.answer_ids(tok, samples), method="fast", batch_size=batch_size)
    return p.relative_change(warn=False).reshape(len(samples), -1)


def top_sets(x: torch.Tensor, w: torch.Tensor, k: int) -> list[frozenset]:
    """The ``k`` senders of most negative weighted mean effect per resample: ``x`` ``(n, S)``, ``w`` ``(B, n)``."""
    mean = (w @ x.double()) / w.sum(1, keepdim=True)                          # (B, S)
    return [frozenset(r) for r in mean.argsort(1)[:, :k].tolist()]


def overlap(a: torch.Tensor, b: torch.Tensor, k: int = TOP, n_boot: int = 1000, seed: int = 0) -> dict:
    """How many of ``a``'s top-``k`` senders are in ``b``'s: the point value on all prompts and a 95 % percentile
    bootstrap interval (each set's prompts resampled on its own; ``seed`` and ``seed + 1``)."""
    one = lambda x: torch.ones(1, x.shape[0], dtype=torch.float64)
    value = len(top_sets(a, one(a), k)[0] & top_sets(b, one(b), k)[0])
    ta = top_sets(a, bootstrap_counts(a.shape[0], n_boot, seed), k)
    tb = top_sets(b, bootstrap_counts(b.shape[0], n_boot, seed + 1), k)
    got = torch.tensor([len(x & y) for x, y in zip(ta, tb)], dtype=torch.float64)
    lo, hi = torch.quantile(got, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return {"k": k, "value": value, "lo": lo, "hi": hi}


def compare(model, tok, task: str = "addition", seed: int = 0, k: int = TOP, n_boot: int = 1000,
            batch_size: int = BATCH_SIZE) -> dict:
    """The module docstring's comparison. Returns ``{"task", "n_held_out", "n_trained", "overlap"`` (trained top-k
    vs held-out top-k), ``"ceiling"`` (two disjoint halves of the trained prompts, each the size of the held-out
    set; ``None`` with fewer than twice as many trained prompts), ``"top_trained"``, ``"top_held_out"``
    (sender indices ``layer * (H + 1) + head``, ``head = H`` the MLP)}``."""
    s = split_samples(model, tok, task, seed, batch_size)
    h, t = effects(model, tok, s["held out"], batch_size), effects(model, tok, s["trained"], batch_size)
    n = h.shape[0]
    one = lambda x: torch.ones(1, x.shape[0], dtype=torch.float64)
    return {"task": task, "n_held_out": n, "n_trained": t.shape[0],
            "overlap": overlap(t, h, k, n_boot, seed),
            "ceiling": overlap(t[:n], t[n:2 * n], k, n_boot, seed) if t.shape[0] >= 2 * n else None,
            "top_trained": sorted(top_sets(t, one(t), k)[0]), "top_held_out": sorted(top_sets(h, one(h), k)[0])}
