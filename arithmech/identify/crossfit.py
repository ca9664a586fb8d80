"""The ``crossfit`` step (``python -m arithmech crossfit``), after identify: the knockout of the top 8 heads
cross-fitted over identify's ranking-side problem clusters (:mod:`arithmech.methods.ablation.crossfit`), so that a
folder whose held-out side has too few problems still gets a knockout on problems its heads were not ranked on.

Reads identify's ``effects_clusters.csv`` (each head's mean effect per cluster: the folds' rankings), ``prompts.jsonl``
(the ranked task's X_r: the knocked-out prompts), ``key_heads.json`` (the heads no draw takes) and ``run.json`` (the
reference pool's templates, size and seed, rebuilt as identify built it: the same means as its knockout); writes
``knockout_crossfit.csv``, which the knockout rules read (:mod:`arithmech.identify.knockout_claims`).

>>> python -m arithmech crossfit --model smollm2-135m --results results/smollm2-135m/addition
"""

from __future__ import annotations

import time
import warnings

import torch

from arithmech.core import provenance, results
from arithmech.core.models import load_model
from arithmech.data import pairs, splits
from arithmech.identify.config import CrossFit as Config
from arithmech.identify.result import recorded_setting
from arithmech.methods.ablation import crossfit as method
from arithmech.methods.ablation.crossfit import DRAWS, FOLDS, K
from arithmech.methods.ablation.intervention import Forwards
from arithmech.methods.ablation.pool import pool_prompts
from arithmech.methods.ablation.pool_cache import cached_pool
from arithmech.methods.prepare import task_templates


def label(s) -> str:
    """A sample's cluster as effects_clusters.csv writes it (``addition:3:7``)."""
    return ":".join(map(str, splits.cluster(s)))


def inputs(folder) -> tuple:
    """``(task, clusters, samples, labels, key heads, identify's settings)``, checked before any model loads: the
    ranked task's rows of effects_clusters.csv, its X_r of prompts.jsonl (every one in a cluster of that file) and
    at least :data:`FOLDS` clusters."""
    p = recorded_setting(folder)
    task = p["ranked_task"]
    clusters = results.read(folder, "effects_clusters.csv")
    clusters = clusters[clusters.task == task].reset_index(drop=True)
    if len(clusters) < FOLDS:
        raise ValueError(
            f"effects_clusters.csv has {len(clusters)} problem clusters of {task}: at least {FOLDS} to cross-fit"
        )
    known = set(clusters.cluster)
    samples = [s for s in pairs.samples(folder) if label(s) in known]
    if len(samples) != int(clusters.n.sum()):
        raise ValueError(
            f"prompts.jsonl has {len(samples)} prompts of effects_clusters.csv's clusters, which count "
            f"{int(clusters.n.sum())}: the two files are not one identify run; re-run python -m arithmech identify"
        )
    kh = results.read(folder, "key_heads.json")
    key = [(h["layer"], h["head"]) for h in kh.get("heads", [])]
    return task, clusters, samples, [label(s) for s in samples], key, p


def run(config: Config):
    """The step end to end (module docstring); returns the pooled result
    (:class:`~arithmech.methods.ablation.crossfit.CrossFit`) of what it wrote."""
    c = config
    folder = results.model_folder(c.results, c.model_name)
    results.check_writable(folder, "crossfit", c.overwrite)
    task, clusters, samples, labels, key, p = inputs(folder)  # before the model loads
    t0 = time.time()
    torch.manual_seed(c.seed)
    folds = method.plan(clusters, key, K, DRAWS, c.seed)
    model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = [t for t_ in p["tasks"] for t in task_templates(t_)[1]]
        every += pairs.select_templates(p["heldout"]) if p.get("transfer", True) else []  # identify's pool, as built
        means = cached_pool(
            model, tok, pool_prompts(tok, every, p["pool_size"], p["seed"], draw=p["draw"]), batch_size=c.batch_size
        )
        frame = method.run(model, tok, samples, labels, means, folds, task, Forwards(batch_size=c.batch_size))
    record = {
        "parameters": {
            "model": c.model_name,
            "seed": c.seed,
            "device": c.device,
            "dtype": c.dtype,
            "batch_size": c.batch_size,
        },
        "task": task,
        "folds": [{"held": list(f.held), "top": [method.head_name(h) for h in f.top]} for f in folds],
        "means": means.describe(),
        "pool_digest": getattr(means, "digest", None),
        "wall_s": round(time.time() - t0, 2),
        "torch_threads": torch.get_num_threads(),
        "versions": provenance.versions(),
        "peak_memory": provenance.peak_memory(),
    }
    results.write_step(folder, "crossfit", {"knockout_crossfit.csv": frame}, record, model_name=c.model_name)
    f = results.read(folder, "knockout_crossfit.csv")
    return method.pooled(f[f.task == task])


def summary(cf) -> str:
    """One line: the pooled top k, and its paired difference from each kind of draw (top k minus the draws' mean by
    held-out cluster, the interval resampling clusters within folds), on accuracy (points) and logit difference."""

    def diff(p, scale: float, spec: str) -> str:
        if p is None:
            return "not run"
        return f"{scale * p.diff.value:{spec}} [{scale * p.diff.lo:{spec}}, {scale * p.diff.hi:{spec}}]"

    return (
        f"crossfit: {cf.n} prompts, {cf.clusters} clusters, {len(cf.tops)} folds; top {cf.k} out: accuracy "
        f"{cf.top_acc.value:.0%} (intact {cf.intact_acc:.0%}), minus random "
        f"{diff(cf.random_acc_diff, 100, '+.0f')} points, minus layer-matched "
        f"{diff(cf.matched_acc_diff, 100, '+.0f')} points; logit difference {cf.top_ld.value:+.2f} (intact "
        f"{cf.intact_ld:+.2f}), minus random {diff(cf.random_ld_diff, 1, '+.2f')}, minus layer-matched "
        f"{diff(cf.matched_ld_diff, 1, '+.2f')}"
    )
