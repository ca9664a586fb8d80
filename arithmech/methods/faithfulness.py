"""Faithfulness of the top-n circuit: how much of the counterfactual's effect it recovers alone.

Path patching ranks components one at a time; their effects do not add (a sum of one-at-a-time effects is
not a measure of a circuit). Here a circuit ``C`` (a set of heads and MLPs) is run **together**, every
intervention at END only (as identify's patching and knockout at END), every earlier position the base
prompt's own, and the metric is the project's logit difference (:mod:`arithmech.methods.patching`)::

    LD = logit(answer_r) - logit(answer_c)       at END; answer_r = {C} of X_r, answer_c = the model's top-1 on X_c

Three runs per circuit, each a share of a whole (ratio of means over prompts ``k``, as ``effects.share``):

* **noising** (is ``C`` enough when everything else is ablated?): X_r with every component *outside* ``C``
  ablated at END::

      share = mean_k[LD_k(C only) - LD_k(all ablated)] / mean_k[LD_k(X_r) - LD_k(all ablated)]

  1 when ``C`` is every component (the same run as X_r: exactly 1), 0 when ``C`` is empty;
* **converse** (what is left when ``C`` is ablated): X_r with ``C`` ablated, the same denominator;
  ``1 - share`` is what ``C`` is needed for;
* **denoising** (sufficiency): X_c with ``C`` patched in from X_r (its END outputs on X_r), everything
  else X_c's and recomputed::

      share = mean_k[LD_k(X_c + C from X_r) - LD_k(X_c)] / mean_k[LD_k(X_r) - LD_k(X_c)]

Two ablations (noising and converse):

* **mean**: identify's reference-pool mean (:mod:`arithmech.methods.ablation.pool`: per template ×
  length × position, the prompt's own operand fold left out), the value its knockout uses;
* **resample**: the component's END output on *one* X_c prompt of the reference pool (:func:`resample_sources`:
  the same template and token length, another operand pair, a seeded draw; fallbacks: the same family and
  length, then any pool prompt of that length, counted in the step's record). Tests whether a result hinges
  on the mean: a mean is not a value any prompt produces.

Circuits: the top ``n`` components by effect rank, ``n = 1 … N`` (heads and MLPs in one ranking,
:func:`arithmech.methods.effects.ranked`: identify patches both the same way, and the embedded model's
strongest components include MLPs; a heads-only curve with every MLP ablated would sit near 0 by
construction, one with every MLP kept would credit the MLPs to every circuit), against ``n_random`` random
circuits of each size ``n`` drawn (seeded) from every component outside that top ``n`` (:func:`circuits`).

Two measures per circuit, the same runs: the ``share`` above (a ratio of means: unbounded, its interval runs far
below 0 when the resampled denominator nears 0) and the per-prompt :func:`recovery` the claim reads (per prompt the
same fraction, prompts with no positive effect left out and counted, ``n_used``, with their problem clusters,
``n_used_clusters``): its mean clipped to [0, 1] (``recovery``) and unclipped (``recovery_raw``, with ``over_one``,
the share of used prompts above 1), so over-recovery is seen beside the clipped value. The rule
(:func:`arithmech.methods.faithfulness_rule.faithful_verdict`) reads noising with mean ablation *and* denoising; the
cross-position circuit (:mod:`arithmech.methods.faithfulness_sites`) adds rows of order ``operands`` /
``random-layer``.

What the full effect is (``baseline``, the denominator's subtrahend): noising, LD(X_r) − LD(X_r with every head and
MLP at END at its mean). Every path from X_r's earlier tokens into END runs through END's heads, so this is the
whole effect of X_r's tokens before END on END's LD (END's own token is kept); the cross-position circuit's
denominator is that same effect with END's MLPs recomputed instead of set to their means
(:mod:`arithmech.methods.faithfulness_sites`). Denoising: LD(X_r) − LD(X_c) for both.

Intervals: percentile bootstrap of the ratio of means over the prompts' problem clusters
(:func:`arithmech.core.stats.bootstrap_ratio_intervals`, :func:`arithmech.data.splits.resampling_units`),
numerator and denominator resampled together: the share's at 95%, the recovery's (clipped and unclipped) at the
rule's level 1 − 0.05/11 (:data:`~arithmech.methods.faithfulness_rule.RULE_LEVEL`, Bonferroni over its 11
candidates; column ``level``) with at least :data:`N_BOOT_RULE` resamples. The random band is the 5–95% quantile
of the random draws' values at each size, with their maximum (:func:`band`).

The per-prompt LDs themselves (END values, resample sources, LDs under ablations) are computed in
:mod:`arithmech.methods.faithfulness_lds`; this module builds the circuits, their recoveries and rows.

Shapes (``n`` prompts, ``L`` layers, ``H`` heads of ``dh``, ``d`` width, ``V`` vocabulary, ``A`` circuits):
END values ``z (n, L, H*dh)`` (o_proj input) and ``m (n, L, d)`` (MLP output); LDs ``(A, n)`` float64;
rows of :data:`COLUMNS`, one per (method, ablation, order, draw, n).

>>> s = FaithfulnessSettings(n_max=20, n_random=20, seed=0, n_boot=1000, bootstrap="cluster", split="held-out",
...                          batch_size=64, converse_random=False)
>>> frame, info = faithfulness(model, tok, samples, effects, "all", pool_means, pool, s)
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import torch

from arithmech.core.models import geometry
from arithmech.core.stats import bootstrap_ratio_intervals
from arithmech.data import pairs, splits
from arithmech.data.batches import answer_ids
from arithmech.methods.ablation.intervention import MeanSource
from arithmech.methods.ablation.knockout import Ablation
from arithmech.methods.effects import ranked
from arithmech.methods.faithfulness_lds import PerPrompt, end_values, lds, resample_sources
from arithmech.methods.faithfulness_rule import (
    RULE_LEVEL,
)
from arithmech.methods.faithfulness_settings import FaithfulnessSettings, Rows

METHODS = ("noising", "converse", "denoising")
ABLATIONS = ("mean", "resample", "x_r")  # x_r: denoising's patched values
COLUMNS = [
    "task",
    "method",
    "ablation",
    "order",
    "draw",
    "n",
    "share",
    "lo",
    "hi",
    "recovery",
    "recovery_lo",
    "recovery_hi",
    "recovery_raw",
    "recovery_raw_lo",
    "recovery_raw_hi",
    "over_one",
    "n_used",
    "n_prompts",
    "n_clusters",
    "n_used_clusters",
    "level",
    "baseline",
    "split",
    "components",
    "positions",
]
LEVEL = 0.95  # the share's interval (shown, not read by the rule)
N_BOOT_RULE = 10_000  # at least this many resamples for the rule's intervals (their tails hold 0.23% each)
BASELINE = {
    "noising": "every head and MLP at END ablated",
    "converse": "every head and MLP at END ablated",
    "denoising": "X_c",
}  # what each direction's "full effect" is measured from (LD(X_r) minus this)

Component = tuple  # (layer, head) or (layer, "mlp")


def label(c: Component) -> str:
    """``"3.1"`` for head 1 of layer 3, ``"MLP 3"`` for its MLP (effects.csv's names); a cross-position site
    ``(layer, head, where)`` (:mod:`arithmech.methods.faithfulness_sites`) as ``"3.1@operands"`` / ``"3.1@end"``."""
    if len(c) == 3:
        return f"{c[0]}.{c[1]}@{c[2]}"
    return f"MLP {c[0]}" if c[1] == "mlp" else f"{c[0]}.{c[1]}"


def ablation_of(components: Sequence[Component]) -> Ablation:
    """The :class:`~arithmech.methods.ablation.knockout.Ablation` that intervenes on ``components``."""
    return Ablation.of(heads=[c for c in components if c[1] != "mlp"], mlps=[c[0] for c in components if c[1] == "mlp"])


def circuits(top: Sequence[Component], universe: Sequence[Component], n_max: int, n_random: int, seed: int) -> list:
    """``[(order, draw, n, circuit)]``: the top ``n`` of ``top`` for ``n = 1 … n_max`` (draw -1), and for each ``n``
    ``n_random`` random circuits of ``n`` components of ``universe`` outside the top ``n`` itself (a seeded
    ``random.Random``; draw ``0 … n_random - 1``). Drawn from every other component, MLPs included: drawn only
    outside the top ``n_max``, a model whose MLPs all rank high would get heads-only random circuits with every
    MLP ablated, a band near 0 by construction."""
    if n_max > len(universe) - n_max:
        raise ValueError(
            f"n_max={n_max}: random circuits of up to {n_max} components outside the top {n_max} need "
            f"n_max <= {len(universe) // 2}"
        )
    rng = random.Random(seed)
    out = [("top", -1, n, tuple(top[:n])) for n in range(1, n_max + 1)]
    for n in range(1, n_max + 1):
        rest = [c for c in universe if c not in set(top[:n])]
        out += [("random", r, n, tuple(rng.sample(rest, n))) for r in range(n_random)]
    return out


def recovery(num: torch.Tensor, den: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The bounded measure the rule reads: ``(r (m, A), used (n,) bool)`` with, per prompt ``k`` whose own effect
    ``den[k] > 0``, ``r_k = clip(num[k] / den[k], 0, 1)``; ``num (n, A)``, ``den (n,)``.

    Why this and not the ratio of means (``share``): a ratio of means has the *mean* denominator, and when the
    baseline (all ablated) sometimes beats X_r the resampled denominator comes near 0 and the interval runs to
    −3 (SmolLM2's noising). Here each prompt counts once, with a value in [0, 1], so the mean is a
    proportion-like quantity whose bootstrap interval stays in [0, 1]. Clipping reads "more than all of the
    effect" as all of it and "the wrong way" as none of it. Against the alternatives: top-1 accuracy is coarser
    (one bit a prompt) and not 0 when everything is ablated; the answer's probability is not normalised to the
    prompt's own effect. A prompt with ``den <= 0`` (the ablation does not lower its LD) has nothing to recover:
    it is left out and counted (``n_used``). The full circuit gives ``num == den``, exactly 1; the empty one
    ``num == 0``, exactly 0."""
    used = den > 0
    return (num[used] / den[used, None]).clamp(0.0, 1.0), used


@dataclass(frozen=True)
class Units:
    """What the intervals of a run's rows resample (:func:`circuit_rows`), one entry per prompt.

    Attributes:
        clusters: each prompt's resampling unit (:func:`arithmech.data.splits.resampling_units` with the run's
            ``bootstrap``); ``None``: each prompt its own.
        problems: each prompt's problem cluster, for ``n_used_clusters``; ``None``: ``clusters``, else each prompt
            its own.
        n_clusters: the distinct problems the prompts ask (:func:`arithmech.data.splits.n_problems`).
    """

    clusters: list | None
    problems: list | None
    n_clusters: int

    @classmethod
    def of(cls, samples: Sequence[pairs.Sample], bootstrap: str) -> Units:
        """The units of ``samples`` resampled by ``bootstrap`` (``"cluster"`` or ``"prompt"``)."""
        s = list(samples)
        return cls(splits.resampling_units(s, bootstrap), splits.resampling_units(s, "cluster"), splits.n_problems(s))


def circuit_rows(rows: Rows, plan, num, den, settings: FaithfulnessSettings, units: Units) -> list[dict]:
    """One row per circuit of ``plan``, with the columns ``rows`` names; ``num (n, A)``, ``den (n,)`` float64: the
    ratio of means (``share``, its 95% cluster-bootstrap interval) and, over the prompts :func:`recovery` uses, the
    clipped mean (``recovery``), the unclipped mean (``recovery_raw``) and the share of them above 1 (``over_one``),
    both means with intervals at the rule's :data:`~arithmech.methods.faithfulness_rule.RULE_LEVEL` (at least
    :data:`N_BOOT_RULE` resamples). ``settings``: ``n_boot``, ``seed`` and ``split``; ``units``: what the intervals
    resample and the problem clusters counted among the used prompts (``n_used_clusters``)."""
    n_boot, seed, clusters = settings.n_boot, settings.seed, units.clusters
    share = num.mean(0) / den.mean()
    lo, hi = bootstrap_ratio_intervals(num, den, n_boot, LEVEL, seed, clusters)
    rec, used = recovery(num, den)
    m = int(used.sum())
    problems = units.problems
    owner = problems if problems is not None else clusters if clusters is not None else list(range(len(den)))
    nan = torch.full((num.shape[1],), float("nan"), dtype=torch.float64)
    r_mid = r_lo = r_hi = raw = w_lo = w_hi = over = nan
    if m:
        cl = None if clusters is None else [c for c, u in zip(clusters, used.tolist()) if u]
        ones, nb = torch.ones(m, dtype=torch.float64), max(n_boot, N_BOOT_RULE)
        unclipped = num[used] / den[used, None]
        r_lo, r_hi = bootstrap_ratio_intervals(rec, ones, nb, RULE_LEVEL, seed, cl)
        w_lo, w_hi = bootstrap_ratio_intervals(unclipped, ones, nb, RULE_LEVEL, seed, cl)
        r_mid, raw, over = rec.mean(0), unclipped.mean(0), (unclipped > 1).double().mean(0)
    n_uc = len({u for u, k in zip(owner, used.tolist()) if k})
    return [
        {
            "task": rows.task,
            "method": rows.method,
            "ablation": rows.ablation,
            "order": o,
            "draw": d,
            "n": k,
            "share": float(share[a]),
            "lo": float(lo[a]),
            "hi": float(hi[a]),
            "recovery": float(r_mid[a]),
            "recovery_lo": float(r_lo[a]),
            "recovery_hi": float(r_hi[a]),
            "recovery_raw": float(raw[a]),
            "recovery_raw_lo": float(w_lo[a]),
            "recovery_raw_hi": float(w_hi[a]),
            "over_one": float(over[a]),
            "n_used": m,
            "n_prompts": num.shape[0],
            "n_clusters": units.n_clusters,
            "n_used_clusters": n_uc,
            "level": RULE_LEVEL,
            "baseline": rows.baseline,
            "split": settings.split,
            "components": " ".join(map(label, c)),
            "positions": rows.positions,
        }
        for a, (o, d, k, c) in enumerate(plan)
    ]


def faithfulness(
    model,
    tok,
    samples: Sequence[pairs.Sample],
    effects: pd.DataFrame,
    task: str,
    means: MeanSource,
    pool: dict,
    settings: FaithfulnessSettings,
) -> tuple[pd.DataFrame, dict]:
    """The curves of the module docstring on ``samples`` (evaluation-side X_r whose X_c moves the answer),
    components ranked by ``effects`` of ``task``; ``means``: identify's reference-pool means, ``pool``: its
    prompts (:func:`~arithmech.methods.ablation.pool.pool_prompts`); ``settings``: the circuits, the intervals
    and the batches (:class:`~arithmech.methods.faithfulness_settings.FaithfulnessSettings`). Returns
    ``(frame of COLUMNS, info)``; ``info`` holds the endpoints' mean LDs, the resample tiers and the plan's size. A
    prompt that no pool X_c matches in length cannot be resampled; it is left out of every curve (so all read the
    same prompts) and counted (``info["left_out_no_source"]``)."""
    n_max, seed, batch_size = settings.n_max, settings.seed, settings.batch_size
    drawn, tiers_all = resample_sources(tok, samples, pool, seed, getattr(means, "folds", 4), batch_size)
    if tiers_all["none"]:  # no pool X_c of its length: left out of every curve (all read the same prompts)
        samples = [s for s, x in zip(samples, drawn) if x is not None]
    geo = geometry(model)
    L, H = geo.n_layers, geo.n_heads
    universe = [(l, h) for l in range(L) for h in list(range(H)) + ["mlp"]]
    top = ranked(effects, task)
    plan = circuits(top, universe, n_max, settings.n_random, seed)
    clean, corrupt = [s.clean for s in samples], [s.corrupt for s in samples]
    ans_r = answer_ids(tok, samples)
    z_r, m_r, logit_r = end_values(model, tok, clean, batch_size)
    _, _, logit_c = end_values(model, tok, corrupt, batch_size)
    ans_c = logit_c.argmax(-1)
    at = torch.arange(len(samples))
    ld_r = logit_r[at, ans_r].double() - logit_r[at, ans_c].double()
    ld_c = logit_c[at, ans_r].double() - logit_c[at, ans_c].double()
    units = Units.of(samples, settings.bootstrap)
    sources = [x for x in drawn if x is not None]
    z_s, m_s, _ = end_values(model, tok, sources, batch_size)
    every = ablation_of(universe)
    keep = [ablation_of([c for c in universe if c not in set(circ)]) for _, _, _, circ in plan]
    conv_plan = [p for p in plan if settings.converse_random or p[0] == "top"]
    conv = [ablation_of(c) for *_, c in conv_plan]
    at_end = lambda method, ablation: Rows(task, method, ablation, "end", BASELINE[method])
    rows, info = (
        [],
        {
            "n_prompts": len(samples),
            "n_clusters": units.n_clusters,
            "resample_tiers": tiers_all,
            "left_out_no_source": tiers_all["none"],
            "circuits": len(plan),
            "ranking": [label(c) for c in top[:n_max]],
            "ld_x_r": float(ld_r.mean()),
            "ld_x_c": float(ld_c.mean()),
        },
    )
    for name, src, keys in (
        ("mean", means, [means.key(s) for s in samples]),
        ("resample", PerPrompt(z_s, m_s, "one reference-pool X_c (resample)"), list(range(len(samples)))),
    ):
        ld = lds(model, tok, clean, keys, src, [Ablation(), every] + keep + conv, (ans_r, ans_c), batch_size)  # (A, n)
        none, off = ld[0], ld[1]
        den = none - off
        rows += circuit_rows(at_end("noising", name), plan, (ld[2 : 2 + len(plan)] - off).T, den, settings, units)
        rows += circuit_rows(at_end("converse", name), conv_plan, (ld[2 + len(plan) :] - off).T, den, settings, units)
        info[f"ld_all_ablated_{name}"] = float(off.mean())
    ld = lds(
        model,
        tok,
        corrupt,
        list(range(len(samples))),
        PerPrompt(z_r, m_r, "X_r's END outputs"),
        [Ablation(), every] + [ablation_of(c) for *_, c in plan],
        (ans_r, ans_c),
        batch_size,
    )
    rows += circuit_rows(at_end("denoising", "x_r"), plan, (ld[2:] - ld[0]).T, ld_r - ld[0], settings, units)
    info["denoising_all_patched_minus_x_r"] = float((ld[1] - ld_r).abs().max())
    return pd.DataFrame(rows, columns=COLUMNS), info
