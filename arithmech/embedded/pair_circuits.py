"""Does the embedded model use the same components on facts it was trained on and on facts it never saw?

The embedded model is trained on most single-digit facts and held out from a seeded 15 % of the operand
pairs (:mod:`arithmech.data.heldout`). Identify's X_r are almost all trained facts, so its circuit may be a
lookup of memorised sentences. Here the same path patching (identify's, :func:`~arithmech.methods.patching.path_patch`)
runs on two sets of X_r of one operation, drawn from the same templates:

* **held out**: every distinct prompt of a held-out pair that the model answers right (and whose X_c moves
  the answer), as identify keeps its X_r;
* **trained**: as many prompts of trained pairs, kept the same way.

Each set ranks heads and MLPs by the mean relative change of the answer logit (identify's effect), and the
**top-k overlap** says how many of one set's top ``k`` components are also in the other's. Two sets of prompts
never give exactly the same ranking, so the overlap is read against its **noise ceiling**: the overlap between
two sets of *trained* prompts that ask disjoint facts, each with as many facts and prompts as the held-out set
(the same size, the same kind of change between the sets: other facts). The comparison is ``trained A`` vs ``held out``
beside ``trained A`` vs ``trained B``. Both come with a 95 % bootstrap interval over the **facts** (problem clusters
``(operation, A, B)``, resampled within each set): a held-out operation may hold only a few facts, each asked
by many templates. If the held-out overlap sits at the ceiling, what the ranking shows is not tied to
memorised facts; far below it, the circuit on trained facts is not the one that computes. A toy that answers
only some held-out pairs right can only show this for those it gets right.

>>> r = compare(model, tok, "addition")
>>> r["overlap"], r["ceiling"]          # {"k", "value", "lo", "hi"} each
"""

from __future__ import annotations

import random

import torch

from arithmech.core.models import BATCH_SIZE
from arithmech.core.stats import bootstrap_counts
from arithmech.data import pairs
from arithmech.data.batches import answer_ids
from arithmech.data.draw import Draw
from arithmech.data.heldout import is_heldout_pair
from arithmech.data.splits import cluster
from arithmech.methods.patching import path_patch
from arithmech.methods.prepare import prepare

TOP = 10  # components compared (identify's TOP: the heads a later step studies)
DRAWS = 4000  # pairs drawn per operation before the split (every held-out prompt of the templates appears)
DRAW = Draw("last-digit", 0, 1)  # identify's default answer token, zero-shot: the pairs of every set


def split_samples(model, tok, task: str, seed: int, batch_size: int, draw: Draw) -> dict[str, list[pairs.Sample]]:
    """``{"held out": X_r of held-out pairs, "trained A", "trained B": as many X_r each of trained pairs}``, each
    prompt once, kept as identify keeps its X_r (:func:`arithmech.methods.prepare.prepare`: right, and X_c moves
    the answer). Two disjoint sets of trained facts, each as many facts as the held-out set has (seeded), their
    prompts from the same templates; the three sets are sampled to one size. ``draw``: how the pairs are drawn."""
    drawn, _ = pairs.make_pairs(tok, task, n=DRAWS, seed=seed, draw=draw)
    distinct = list({s.clean: s for s in drawn}.values())
    held = [s for s in distinct if is_heldout_pair(s.op, s.a, s.b)]
    trained = [s for s in distinct if not is_heldout_pair(s.op, s.a, s.b)]
    kept_h = prepare(model, tok, held, len(held), seed, batch_size, draw=draw)[0]
    n_facts = len({cluster(s) for s in kept_h})
    rng = random.Random(f"pair-circuits:{seed}")
    facts = sorted({cluster(s) for s in trained})
    rng.shuffle(facts)
    halves = (set(facts[0 : 2 * n_facts : 2]), set(facts[1 : 2 * n_facts : 2]))  # as many facts as held out, each
    pick = [s for s in trained if cluster(s) in halves[0] | halves[1]]
    kept_t = prepare(model, tok, pick, len(pick), seed, batch_size, draw=draw)[0]
    a, b = ([s for s in kept_t if cluster(s) in h] for h in halves)
    n = min(len(kept_h), len(a), len(b))
    return {"held out": rng.sample(kept_h, n), "trained A": rng.sample(a, n), "trained B": rng.sample(b, n)}


def effects(model, tok, samples: list[pairs.Sample], batch_size: int = BATCH_SIZE) -> torch.Tensor:
    """``(n, S)`` per-prompt relative change of the answer logit of every sender (``S = L * (H + 1)``, each
    layer's heads then its MLP), identify's effect."""
    p = path_patch(
        model,
        tok,
        [s.clean for s in samples],
        [s.corrupt for s in samples],
        answer_ids(tok, samples),
        method="fast",
        batch_size=batch_size,
    )
    return p.relative_change(warn=False).reshape(len(samples), -1)


def top_sets(x: torch.Tensor, w: torch.Tensor, k: int) -> list[frozenset]:
    """The ``k`` senders of most negative weighted mean effect per resample: ``x`` ``(n, S)``, ``w`` ``(B, n)``."""
    mean = (w @ x.double()) / w.sum(1, keepdim=True)  # (B, S)
    return [frozenset(r) for r in mean.argsort(1)[:, :k].tolist()]


def overlap(
    a: torch.Tensor, b: torch.Tensor, ca: list, cb: list, k: int = TOP, n_boot: int = 1000, seed: int = 0
) -> dict:
    """How many of ``a``'s top-``k`` senders are in ``b``'s: the point value on all prompts and a 95 % percentile
    bootstrap interval (each set's facts ``ca`` / ``cb``, one label per prompt, resampled on their own; ``seed``
    and ``seed + 1``)."""
    one = lambda x: torch.ones(1, x.shape[0], dtype=torch.float64)
    value = len(top_sets(a, one(a), k)[0] & top_sets(b, one(b), k)[0])
    ta = top_sets(a, bootstrap_counts(a.shape[0], n_boot, seed, ca), k)
    tb = top_sets(b, bootstrap_counts(b.shape[0], n_boot, seed + 1, cb), k)
    got = torch.tensor([len(x & y) for x, y in zip(ta, tb)], dtype=torch.float64)
    lo, hi = torch.quantile(got, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return {"k": k, "value": value, "lo": lo, "hi": hi}


def compare(
    model, tok, task: str = "addition", seed: int = 0, k: int = TOP, n_boot: int = 1000, batch_size: int = BATCH_SIZE
) -> dict:
    """The module docstring's comparison. Returns ``{"task", "n_prompts"`` (per set), ``"n_facts"`` (per set),
    ``"overlap"`` (trained A vs held out), ``"ceiling"`` (trained A vs trained B), ``"top"`` (per set, sender
    indices ``layer * (H + 1) + head``, ``head = H`` the MLP)}``."""
    s = split_samples(model, tok, task, seed, batch_size, DRAW)
    eff = {name: effects(model, tok, ss, batch_size) for name, ss in s.items()}
    facts = {name: [cluster(x) for x in ss] for name, ss in s.items()}
    one = lambda x: torch.ones(1, x.shape[0], dtype=torch.float64)
    a, h, b = "trained A", "held out", "trained B"
    return {
        "task": task,
        "n_prompts": {n: len(ss) for n, ss in s.items()},
        "n_facts": {n: len(set(f)) for n, f in facts.items()},
        "overlap": overlap(eff[a], eff[h], facts[a], facts[h], k, n_boot, seed),
        "ceiling": overlap(eff[a], eff[b], facts[a], facts[b], k, n_boot, seed),
        "top": {n: sorted(top_sets(x, one(x), k)[0]) for n, x in eff.items()},
    }
