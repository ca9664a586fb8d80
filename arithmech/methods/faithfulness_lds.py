"""The per-prompt logit differences the faithfulness curves are built from (:mod:`arithmech.methods.faithfulness`).

:func:`end_values` reads every head's and MLP's END output (and the END logits) by the very forward the ablated
runs use; :class:`PerPrompt` hands each prompt its own END values back as the ablated values (a resample source, or
X_r's outputs when denoising); :func:`resample_sources` draws, for each prompt, one reference-pool X_c of its
template and length from another fold, and :func:`sourced` keeps the prompts such a source matches; :func:`lds`
computes ``LD = logit(answer_r) - logit(answer_c)`` at END under each ablation. How the LDs become recoveries,
circuits and rows is :mod:`arithmech.methods.faithfulness`'s.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch

from arithmech.core.models import BATCH_SIZE, arch_for, geometry
from arithmech.core.trace import TraceDict
from arithmech.data import pairs
from arithmech.data.batches import group_by_length
from arithmech.methods.ablation.intervention import Forwards, MeanSource
from arithmech.methods.ablation.knockout import Ablation, ablated_logits
from arithmech.methods.ablation.pool import fold
from arithmech.methods.faithfulness_settings import FaithfulnessSettings


@dataclass
class PerPrompt:
    """A :class:`~arithmech.methods.ablation.intervention.MeanSource` that gives prompt ``i`` (its key) its own END
    values ``z[i] (L, H*dh)``, ``m[i] (L, d)`` — resample sources or X_r's outputs. END only: every position reads
    the END value, so use it with ``positions="end"``."""

    z: torch.Tensor
    mlp: torch.Tensor
    what: str = "per-prompt END values"
    is_pooled = False

    def key(self, s) -> Hashable:
        raise TypeError("PerPrompt is keyed by the prompt's index")

    def lookup(self, key: Hashable | None, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(L, seq, H*dh)``, ``(L, seq, d)``: prompt ``key``'s END values at every position."""
        if not isinstance(key, int):
            raise TypeError(f"PerPrompt is keyed by the prompt's index, not {key!r}")
        return self.z[key][:, None].expand(-1, seq, -1), self.mlp[key][:, None].expand(-1, seq, -1)

    def source(self, key, seq) -> str:
        return self.what

    def for_unseen(self) -> PerPrompt:
        return self

    def describe(self) -> str:
        return self.what


@torch.no_grad()
def end_values(model, tok, prompts: Sequence[str], batch_size: int = BATCH_SIZE):
    """``(z (n, L, H*dh), m (n, L, d), logits (n, V))``: every head's and MLP's END output and the END logits,
    float32, computed by the very forward the ablated runs use
    (:func:`~arithmech.methods.ablation.knockout.ablated_logits` with nothing ablated), so a value written back in place
    of itself changes no bit."""
    arch, L = arch_for(model), geometry(model).n_layers
    zs = arch.head_sites(range(L))
    ms = arch.mlp_sites(range(L))
    got: dict = {}

    def grab(x, name):
        got[name] = (x[0] if isinstance(x, tuple) else x)[:, -1].float().cpu()
        return x

    n = len(prompts)
    z = m = logits = None
    with (
        TraceDict(model, zs, retain_output=False, edit_input=grab),
        TraceDict(model, ms, retain_output=False, edit_output=grab),
    ):
        for _, idx, lg in ablated_logits(model, tok, prompts, None, _Unused(L), [Ablation()], Forwards(batch_size)):
            zb = torch.stack([got[k] for k in zs], 1)  # (b, L, H*dh): the END forward just seen
            mb = torch.stack([got[k] for k in ms], 1)
            if z is None or m is None or logits is None:  # the first batch: set together
                z, m = zb.new_empty(n, *zb.shape[1:]), mb.new_empty(n, *mb.shape[1:])
                logits = lg.new_empty(n, lg.shape[-1]).cpu()
            z[idx], m[idx], logits[idx] = zb, mb, lg.cpu()
    return z, m, logits


@dataclass
class _Unused:
    """The means of a run that ablates nothing (never read: an empty mask leaves every value as it is)."""

    layers: int
    is_pooled = True

    def lookup(self, key: Hashable | None, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.zeros(self.layers, seq, 1), torch.zeros(self.layers, seq, 1)

    def key(self, s) -> Hashable:
        return None

    def source(self, key: Hashable | None, seq: int) -> str:
        return self.describe()

    def for_unseen(self) -> _Unused:
        return self

    def describe(self) -> str:
        return "none (nothing ablated)"


@torch.no_grad()
def lds(
    model,
    tok,
    prompts: Sequence[str],
    keys,
    source: MeanSource,
    ablations: Sequence[Ablation],
    answers: tuple[torch.Tensor, torch.Tensor],
    batch_size: int = BATCH_SIZE,
) -> torch.Tensor:
    """``(A, n)`` float64: ``LD = logit(answer_r) - logit(answer_c)`` at END of each prompt under each ablation
    (each component of an ablation replaced at END by ``source``'s value for that prompt, found by its
    ``keys``); ``answers = (answer_r, answer_c)``, each ``(n,)`` token ids."""
    answer_r, answer_c = answers
    out = torch.empty(len(ablations), len(prompts), dtype=torch.float64)
    for where, idx, logits in ablated_logits(model, tok, prompts, keys, source, ablations, Forwards(batch_size)):
        G, rows = len(where), torch.tensor(idx).repeat_interleave(len(where))
        at = torch.arange(len(rows), device=logits.device)
        ld = (
            (
                logits[at, answer_r[rows].to(logits.device)].double()
                - logits[at, answer_c[rows].to(logits.device)].double()
            )
            .cpu()
            .view(len(idx), G)
        )
        for g, js in where.items():
            for j in js:
                out[j, idx] = ld[:, g]
    return out


def resample_sources(
    tok, samples: Sequence[pairs.Sample], pool: dict, seed: int, folds: int = 4, batch_size: int = BATCH_SIZE
) -> tuple[list[str | None], dict[str, int]]:
    """One reference-pool X_c per sample (``pool``: :func:`arithmech.methods.ablation.pool.pool_prompts`) of the
    same template and token length whose operand pair lies in another fold
    (:func:`~arithmech.methods.ablation.pool.fold`, as the mean leaves the prompt's own fold out); else of the same
    family and length; else of the same length (a seeded draw each); else ``None`` (tier ``none``: no pool X_c has its
    length, so no END output lines up with it). Returns ``(prompts, {tier: count})``."""
    every = [s for ss in pool.values() for s in ss]
    length = {}
    for idx, ids in group_by_length(tok, [s.corrupt for s in every] + [s.clean for s in samples], batch_size):
        for i in idx:
            length[i] = ids.shape[1]
    by: dict[tuple, list[int]] = {}
    for i, s in enumerate(every):
        for tier, k in (
            ("template", (s.template, length[i])),
            ("family", (s.family, length[i])),
            ("length", length[i]),
        ):
            by.setdefault((tier, k), []).append(i)
    rng = random.Random(seed)
    out: list[str | None] = []
    tiers = {"template": 0, "family": 0, "length": 0, "none": 0}
    for j, s in enumerate(samples):
        seq, own = length[len(every) + j], fold(s.a, s.b, folds)
        for tier, k in (("template", (s.template, seq)), ("family", (s.family, seq)), ("length", seq)):
            cand = [i for i in by.get((tier, k), []) if fold(every[i].a, every[i].b, folds) != own]
            if cand:
                out.append(every[rng.choice(cand)].corrupt)
                tiers[tier] += 1
                break
        else:
            out.append(None)
            tiers["none"] += 1
    return out, tiers


def sourced(
    tok, samples: Sequence[pairs.Sample], pool: dict, means: MeanSource, settings: FaithfulnessSettings
) -> tuple[list[pairs.Sample], int]:
    """``(the samples a pool X_c matches in length, how many were left out)``: the prompts every curve reads, the
    END circuits' (:func:`faithfulness`) and the cross-position one's alike (:func:`resample_sources`)."""
    drawn, tiers = resample_sources(tok, samples, pool, settings.seed, getattr(means, "folds", 4), settings.batch_size)
    return [s for s, x in zip(samples, drawn) if x is not None], tiers["none"]
