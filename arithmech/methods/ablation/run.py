"""The knockout part of identify (paper §4.1, Fig. 3, Fig. 4): prompts, reference pool, curves, sanity rows.

For each task::

    held-out split (default): fresh X_r of problems identify never ranked on, X_c checked (eval_samples)
    in-sample (the first runs): X_r of the task ──► topped up with fresh X_r to ``knockout_samples`` prompts
    reference pool of X_c (pool.build_pool) ──► per-prompt means, own operand pair left out
    ──► key components by effect rank vs random non-key ones (≥ 20 orders), Wilson intervals
    ──► sanity rows: nothing out, all heads out, all MLPs out, X_c's own accuracy, majority floor,
        conditioned floor (the answer guessed from what the prompt carries, leave-one-out)

``knockout.csv`` rows: ``task, positions, kind, order, seed, k, accuracy, correct, n, ci_low, ci_high,
mean_source, ld, ld_lo, ld_hi, split, n_clusters`` (``ld``: the logit difference under the ablation with its
interval over problem clusters, :func:`arithmech.methods.ablation.curves.scored_rows`; ``split``: ``held-out`` — the
prompts share no problem cluster with the ranking ones, :mod:`arithmech.data.splits` — or ``in-sample``;
``n_clusters``: the distinct problems the prompts ask, which bound how independent the ``n`` prompts are); ``kind``
is ``head``, ``mlp`` or ``sanity`` (``order`` then names the row: see :data:`SANITY`).
:func:`arithmech.methods.ablation.tables.sanity_table` turns the sanity rows into the claim "the ablation removes the
information" (holds / does not hold).
"""

from __future__ import annotations

import math
import random
import sys
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import pandas as pd
import torch

from arithmech.core.checkpoints import frame_to_obj, obj_to_frame
from arithmech.core.models import BATCH_SIZE, geometry
from arithmech.core.result_files import FILES
from arithmech.data import pairs, splits
from arithmech.data import templates as templates_module
from arithmech.data.batches import answer_ids
from arithmech.data.draw import Draw
from arithmech.data.floors import problem_floor
from arithmech.evals.scoring import check_counterfactuals, filter_correct, greedy_exact, predict
from arithmech.methods.ablation.curves import LD, default_ks, knockout_curve, scored_rows, with_interval
from arithmech.methods.ablation.intervention import Forwards, MeanSource
from arithmech.methods.ablation.knockout import Ablation, counter_answers, group_key, mean_activations, mean_sources
from arithmech.methods.ablation.pool import pool_prompts
from arithmech.methods.ablation.pool_cache import cached_pool
from arithmech.methods.ablation.settings import Curve, KnockoutSettings, Prompts
from arithmech.methods.effects import key_heads, ranking

SANITY = ("nothing-out", "all-heads-out", "all-mlps-out", "x_c", "majority-floor", "conditioned-floor")
FLOORS = ("majority-floor", "conditioned-floor")  # a knockout "to the floor" means to the higher of the two
RANDOM_HEAD_KS = (8,)  # where a task has no key head, the other position settings study the top 8
# knockout.csv's columns: those every file has, declared once (arithmech.core.result_files), the logit difference
# (arithmech.methods.ablation.curves.scored_rows: files made before it lack them), then the two that knockout_tasks
# adds (a frame of one task's rows, task_knockout's, has all but these)
COLUMNS = [*FILES["knockout.csv"].required, *LD, "split", "n_clusters"]
MAX_DRAW = 40  # eval_samples draws at most MAX_DRAW * n pairs for n prompts
LAYER_MATCHED = "layer-matched"  # the order of random head sets with the studied heads' per-layer counts


class Studied(NamedTuple):
    """What one task's knockout compares: its heads ``(layer, head)`` and MLP layers by effect, most negative
    first (:func:`~arithmech.methods.effects.ranking`), and its key heads
    (:func:`~arithmech.methods.effects.key_heads`'s dict:
    ``{"heads": [{"layer", "head", ...}], "mlps": [{"layer", ...}]}``)."""

    heads: list
    mlps: list
    key: dict


@dataclass(frozen=True)
class Ranked:
    """What path patching gave the knockout: each task's X_r (ranking side), its templates (``None`` for ready-made
    samples), the effects that rank its components, the key-head rule's ``threshold``, the ``primary`` task
    (``"all"`` with several) and the tasks ``"all"`` pools (``None``: every task)."""

    samples: dict
    templates: dict
    effects: pd.DataFrame
    threshold: float
    primary: str
    pooled: Sequence[str] | None = None

    def studied(self, task: str) -> Studied:
        """``task``'s components by effect and its key heads (:class:`Studied`)."""
        return Studied(*ranking(self.effects, task), key_heads(self.effects, task, self.threshold))


def eval_samples(
    model, tok, templates: Sequence | None, base: Sequence[pairs.Sample], prompts: Prompts
) -> list[pairs.Sample]:
    """The knockout's prompts (``prompts``: :class:`~arithmech.methods.ablation.settings.Prompts`, how many, the
    seed, the draw, the split, the batches). ``heldout`` (identify's default split): ``n`` fresh pairs of ``templates``
    whose problem cluster is on the evaluation side (:func:`arithmech.data.splits.side`) and is no cluster of ``base``
    (the ranking X_r: never used, nor any problem they ask, whatever split made them) and that pass the X_r rules *and*
    the X_c check. Otherwise ``base`` (the task's X_r) topped up to ``n`` with fresh pairs of ``templates`` that the
    model answers right, drawn from a stream of their own: the first round draws twice what is missing, each later one
    what is missing over the share kept so far (times 1.25), until ``n`` are kept or ``MAX_DRAW * n`` pairs were drawn
    (right as for X_r: the answer token top-1 and the whole answer written by greedy decoding,
    :func:`arithmech.methods.prepare.prepare`) (a model that answers few prompts right, such as SmolLM2 on the last
    digit, still gets ``n`` when it can). Every prompt is distinct (a drawn prompt seen before is skipped, so the
    knockout's ``n`` counts different prompts); fewer than ``n`` come back when the templates run out of them.
    ``templates=None`` (ready-made samples): ``base``'s distinct prompts, ``n`` at most.

    >>> got = eval_samples(model, tok, tpls, xr, Prompts(n=256, seed=0, draw=Draw("last-digit", 0, 1), heldout=True,
    ...                                                  batch_size=64))     # up to 256 distinct Samples
    """
    n, seed, draw, heldout, batch_size = prompts.n, prompts.seed, prompts.draw, prompts.heldout, prompts.batch_size
    out = [] if heldout else list({s.clean: s for s in base}.values())[:n]  # distinct: a repeat is not more evidence
    tried = {s.clean for s in base}  # every prompt filtered or kept so far
    ranked = {splits.cluster(s) for s in base} if heldout else set()
    drawn = kept = r = 0
    while templates and len(out) < n and drawn < MAX_DRAW * n:
        missing = n - len(out)
        want = 2 * missing if drawn == 0 else math.ceil(1.25 * missing * drawn / max(kept, 1))
        want = min(want, MAX_DRAW * n - drawn)
        more, _ = pairs.make_pairs(
            tok, templates, n=want, seed=zlib.crc32(f"knockout-prompts:{seed}:{r}".encode()), draw=draw
        )
        if not more:
            break
        drawn, r = drawn + len(more), r + 1
        fresh = list({s.clean: s for s in more if s.clean not in tried}.values())
        tried |= {s.clean for s in fresh}
        if heldout:  # the evaluation side, and never a problem of ``base`` (however it was split)
            fresh = [s for s in fresh if splits.side(splits.cluster(s)) == "eval" and splits.cluster(s) not in ranked]
        ok = filter_correct(model, tok, fresh, batch_size)[0] if fresh else []
        ok = [s for s, e in zip(ok, greedy_exact(model, tok, [(s.bare, s.target) for s in ok], batch_size)) if e]
        if heldout and ok:
            ok = check_counterfactuals(model, tok, ok, batch_size)[0]
        kept += len(ok)
        out += ok[:missing]
    return out


def task_pool(model, tok, templates: Sequence, pool_size: int, seed: int, batch_size: int = BATCH_SIZE, *, draw: Draw):
    """The reference pool of ``templates``' families, or (no template known) ``None``."""
    tpls = [t for t in templates if getattr(t, "family", None)]
    return (
        cached_pool(model, tok, pool_prompts(tok, tpls, pool_size, seed, draw=draw), batch_size=batch_size)
        if tpls
        else None
    )


def sample_templates(samples: Sequence[pairs.Sample]) -> list:
    """The registered templates the samples were drawn from (none for free text / user samples)."""
    ids = dict.fromkeys(s.template for s in samples)
    return [templates_module.TEMPLATES[i] for i in ids if i in templates_module.TEMPLATES]


def sanity_rows(
    model,
    tok,
    samples: Sequence[pairs.Sample],
    means: MeanSource,
    forwards: Forwards,
    other: torch.Tensor | None = None,
) -> list[dict]:
    """The six rows every knockout table carries (``kind = "sanity"``, ``order`` in :data:`SANITY`):
    nothing out (the clean accuracy), every head out, every MLP out, the X_c prompt scored against
    the X_r answer token, the majority floor (always answering the most frequent answer token) and the
    conditioned floor (the draw population's guess from the operation, the carried digits and one operand, on
    these prompts: the ``prompts`` count of :func:`arithmech.data.floors.problem_floor`).
    ``forwards``: the knockouts' batching and positions; X_c runs in its batches; ``other``: the counterfactual
    answers the logit differences read (:func:`scored_rows`'s)."""
    geo = geometry(model)
    L, H = geo.n_layers, geo.n_heads
    abls = [Ablation(), Ablation.of(heads=[(l, h) for l in range(L) for h in range(H)]), Ablation.of(mlps=range(L))]
    ablated = scored_rows(model, tok, samples, means, abls, [{} for _ in abls], forwards, other)
    ok = ablated.correct.tolist()
    gold = answer_ids(tok, samples)
    xc = int((predict(model, tok, [s.corrupt for s in samples], forwards.batch_size)[:, 0] == gold).sum())
    floor = Counter(gold.tolist()).most_common(1)[0][1]
    src = mean_sources(tok, samples, means)
    n = len(samples)
    rows = [
        ("nothing-out", 0, ok[0], src),
        ("all-heads-out", L * H, ok[1], src),
        ("all-mlps-out", L, ok[2], src),
        ("x_c", 0, xc, "none"),
        ("majority-floor", 0, floor, "none"),
        ("conditioned-floor", 0, round(max(problem_floor(samples)["table"]["prompts"].values()) * n), "none"),
    ]
    ld = ablated[list(LD)].to_dict("records") + [dict.fromkeys(LD, float("nan"))] * 3  # no ablation: no LD
    return [
        with_interval({"kind": "sanity", "order": o, "seed": -1, "k": k, "mean_source": s}, c, n) | d
        for (o, k, c, s), d in zip(rows, ld)
    ]


def layer_matched_draws(
    chosen: Sequence, universe: Sequence, exclude: Sequence, n_random: int, seed: int
) -> list[list]:
    """``n_random`` random head sets with as many heads in each layer as ``chosen`` has, drawn from ``universe``
    minus ``chosen`` and ``exclude`` (the key heads), each sorted; ``[]`` where some layer has too few heads left.
    Seeded by ``seed`` and ``chosen``."""
    need = Counter(l for l, _ in chosen)
    out = set(map(tuple, chosen)) | set(map(tuple, exclude))
    pool = {l: [tuple(c) for c in universe if c[0] == l and tuple(c) not in out] for l in need}
    if any(len(pool[l]) < n for l, n in need.items()):
        return []
    rng = random.Random(f"layer-matched:{seed}:{sorted(map(tuple, chosen))}")
    return [sorted(c for l, n in sorted(need.items()) for c in rng.sample(pool[l], n)) for _ in range(n_random)]


def layer_matched_rows(
    model, tok, samples, means: MeanSource, curve: Curve, n_random: int, seed: int, forwards: Forwards
) -> pd.DataFrame:
    """Knockout rows (order :data:`LAYER_MATCHED`, ``seed`` = the draw) of :func:`layer_matched_draws` matched to
    the top ``k`` of ``curve.ranking`` for each ``k`` in ``curve.ks``, drawn from ``curve.universe`` outside them and
    ``curve.exclude`` — the random control whose heads sit in the same layers as the ones compared with it (the
    unmatched random rows draw from every layer). Heads only; ``curve.random_ks`` and ``exclude_top`` are not read.
    ``forwards``: :func:`~arithmech.methods.ablation.knockout.knockout_topk`'s batching and positions."""
    ranking, universe, exclude = curve.ranking, curve.universe, curve.exclude
    abls, rows = [], []
    for k in curve.ks:
        for s, d in enumerate(layer_matched_draws(ranking[:k], universe, exclude, n_random, seed)):
            abls.append(Ablation.of(heads=d))
            rows.append({"kind": "head", "order": LAYER_MATCHED, "seed": s, "k": k})
    if not abls:
        return pd.DataFrame(
            columns=["kind", "order", "seed", "k", "accuracy", "correct", "n", "ci_low", "ci_high", *LD]
        )
    return scored_rows(model, tok, samples, means, abls, rows, forwards, curve.counter)


def task_knockout(
    model,
    tok,
    samples: Sequence[pairs.Sample],
    means: MeanSource,
    task: str,
    studied: Studied,
    full: bool,
    settings: KnockoutSettings,
) -> pd.DataFrame:
    """One task's knockout rows (:data:`COLUMNS` but ``split`` and ``n_clusters``, which :func:`knockout_tasks` adds)
    at each of ``settings.position_settings``, knocking out on ``samples`` (the task's knockout prompts).

    ``studied``: the task's heads and MLPs by effect, most negative first, and its key heads (:class:`Studied`).
    ``full`` (the primary task):

    * at the first position setting, the whole Fig. 3 curve: effect rank on ``settings.ks``, heads and MLPs, and
      random orders at every ``k`` of the same curve (the band of Fig. 3 runs along the whole curve); the
      random draw at ``k`` never holds a key component nor any of the top ``k`` by effect rank (the ones the
      effect-rank point it is compared with knocks out), so a ``k`` with fewer than ``k`` components outside
      those (``k`` past about half of them) has no random row (:class:`~arithmech.methods.ablation.settings.Curve`'s
      ``exclude_top``). Cost: one more ablated END row per order and ``k``, batched on the cached prefix; and
      layer-matched random head sets (:func:`layer_matched_rows`) at the number of key heads and at
      ``RANDOM_HEAD_KS[0]``;
    * at the other settings, the studied heads (the key heads, or the top ``RANDOM_HEAD_KS[0]`` by effect
      rank where none is key) vs as many random heads outside them.

    Not ``full`` (the other tasks): their key heads vs as many random non-key heads, at every setting
    (nothing where a task has no key head). Every setting gets the sanity rows."""
    geo = geometry(model)
    key = studied[2]  # the key heads (studied: heads, MLPs, key heads)
    key_h = [(h["layer"], h["head"]) for h in key["heads"]]
    src = mean_sources(tok, samples, means)
    frames = []
    for i, pos in enumerate(settings.position_settings):
        forwards = Forwards(batch_size=settings.batch_size, positions=pos)
        other = counter_answers(model, tok, samples, means, forwards)  # X_c's answers, one intact pass for every row
        plan = [replace(c, counter=other) for c in _curves(studied, geo, settings.ks, full, full and i == 0)]
        for curve in plan:
            frames.append(
                knockout_curve(
                    model, tok, samples, means, curve, n_random=settings.n_random, seed=settings.seed, forwards=forwards
                ).assign(positions=pos, mean_source=src)
            )
        if full and i == 0:  # layer-matched random heads at the key heads' k and the claims' k
            lk = sorted({len(key_h), RANDOM_HEAD_KS[0]} & set(plan[0].random_ks or ()))
            lm = replace(plan[0], ks=lk)
            frames.append(
                layer_matched_rows(
                    model, tok, samples, means, lm, n_random=settings.n_random, seed=settings.seed, forwards=forwards
                ).assign(positions=pos, mean_source=src)
            )
        frames.append(pd.DataFrame(sanity_rows(model, tok, samples, means, forwards, other)).assign(positions=pos))
    return pd.concat(frames, ignore_index=True).assign(task=task)[COLUMNS[:-2]]


def _curves(studied: Studied, geo, ks, full: bool, whole: bool) -> list[Curve]:
    """What one position setting knocks out (:func:`task_knockout`): the ``whole`` Fig. 3 curves (heads and MLPs by
    effect rank on ``ks``, random orders at every ``k``); else, for the ``full`` task, its studied heads (the key
    heads, or the top ``RANDOM_HEAD_KS[0]``) vs as many random ones; else the task's key heads vs random ones."""
    L, H = geo.n_layers, geo.n_heads
    heads, mlps, key = studied
    key_h = [(h["layer"], h["head"]) for h in key["heads"]]
    key_m = [m["layer"] for m in key.get("mlps", [])]
    universe = [(l, h) for l in range(L) for h in range(H)]
    if whole:
        hk = sorted(set(ks or default_ks(len(universe))) | {len(key_h)})
        mk = default_ks(L)
        return [
            Curve("head", heads, universe, key_h, hk, [k for k in hk if k], True),
            Curve("mlp", mlps, list(range(L)), key_m, mk, [k for k in mk if k], True),
        ]
    if full:
        chosen = key_h or heads[: RANDOM_HEAD_KS[0]]  # the studied heads at the other settings
        return [Curve("head", chosen, universe, chosen, [len(chosen)], [len(chosen)], False)]
    return [Curve("head", key_h, universe, key_h, [len(key_h)], [len(key_h)] if key_h else [], False)]


def knockout_tasks(
    model, tok, ranked: Ranked, means: MeanSource, settings: KnockoutSettings, draw: Draw, ck=None, bar=None
):
    """Identify's knockout step: ``(knockout frame, prompts per task)``.

    ``ranked`` (:class:`Ranked`): each task's X_r, its templates, the effects that rank its components and its
    key heads. Each task's ``settings.samples`` prompts (:func:`eval_samples`, drawn with ``draw``): with
    ``settings.split="held-out"``, fresh X_r of problems never ranked on, X_c checked (ready-made samples, which
    have no templates to draw from, stay in-sample); else its X_r topped up; with several tasks, ``"all"``
    interleaves those of ``ranked.pooled`` (``None``: every task; identify leaves out a task that fails its control).
    Full curves for ``ranked.primary`` (every task with ``settings.curves_for="each"``), key vs random for the others.
    ``ck`` / ``bar``: checkpoints (each task's prompts and frame saved and reused) and a progress bar, optional.
    A task left with no prompt (a held-out side the model answers nothing of) has no rows: its knockout verdicts
    have nothing to read and are inconclusive, and the run goes on.

    >>> s = KnockoutSettings(samples=64, n_random=4, seed=0, ks=None, curves_for="primary", positions="end",
    ...                      split="held-out", pool_size=512, batch_size=64)
    >>> frame, prompts = knockout_tasks(model, tok, Ranked(xr, tpls, effects, -0.05, "addition"), means, s,
    ...                                 Draw("last-digit", 0, 1))
    """
    samples, templates, pooled = ranked.samples, ranked.templates, ranked.pooled
    knockout_samples = settings.samples
    held = {t: settings.split == "held-out" and templates.get(t) is not None for t in samples}
    evals = _knockout_prompts(model, tok, ranked, settings, draw, held, ck)
    held["all"] = all(held[t] for t in (samples if pooled is None else pooled))
    if len(samples) > 1:
        evals["all"] = pairs.interleave([evals[t] for t in (samples if pooled is None else pooled)])[:knockout_samples]
    frames = []
    for j, task in enumerate(evals):
        if not evals[task]:  # no prompt to knock out on (a weak model, a small split): no rows, said once
            print(
                f"identify: {task}: no knockout prompt ({'held-out' if held[task] else 'in-sample'}, up to "
                f"{knockout_samples} wanted), so its knockout has no rows",
                file=sys.stderr,
                flush=True,
            )
            if bar is not None:
                bar.advance(note=f"knockout {task}: no prompt")
            continue
        got = ck.load(f"knockout-{j}") if ck is not None else None
        if got is not None and got["task"] == task and "ld" in got["frame"]["columns"]:  # one made before ld: redone
            frames.append(obj_to_frame(got["frame"]))
        else:
            full = task == ranked.primary or settings.curves_for == "each"
            frames.append(
                task_knockout(model, tok, evals[task], means, task, ranked.studied(task), full, settings).assign(
                    split="held-out" if held[task] else "in-sample", n_clusters=splits.n_problems(evals[task])
                )
            )
            if ck is not None:
                ck.save(f"knockout-{j}", {"task": task, "frame": frame_to_obj(frames[-1])})
        if bar is not None:
            bar.advance(note=f"knockout {task}")
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)), evals


def _knockout_prompts(model, tok, ranked: Ranked, settings: KnockoutSettings, draw: Draw, held: dict, ck) -> dict:
    """Each task's knockout prompts (:func:`eval_samples`; held out where ``held`` says), checkpointed too:
    drawing held-out X_r is slow."""
    evals = {}
    for t, ss in ranked.samples.items():
        got = ck.load(f"knockout-prompts-{t}") if ck is not None else None
        if got is not None:
            evals[t] = [pairs.Sample.from_json(x) for x in got]
            continue
        prompts = Prompts(settings.samples, settings.seed, draw, held[t], settings.batch_size)
        evals[t] = eval_samples(model, tok, ranked.templates.get(t), ss, prompts)
        if ck is not None:
            ck.save(f"knockout-prompts-{t}", [s.to_json() for s in evals[t]])
    return evals


def prepare_means(
    model,
    tok,
    samples: dict,
    templates: Sequence,
    pool_size: int,
    seed: int,
    batch_size: int = BATCH_SIZE,
    *,
    draw: Draw,
) -> MeanSource:
    """The reference pool over every family of ``templates`` (the tasks' and the held-out family's);
    without any registered template (user samples), the samples' own X_c means (recorded as such)."""
    pool = task_pool(model, tok, templates, pool_size, seed, batch_size, draw=draw)
    if pool is not None:
        return pool
    every = [s for ss in samples.values() for s in ss]
    return mean_activations(model, tok, [s.corrupt for s in every], [group_key(s) for s in every], batch_size)


def describe_means(means: MeanSource) -> str:
    """One line for ``run.json``: which means the knockout used (:meth:`MeanSource.describe`)."""
    return means.describe()
