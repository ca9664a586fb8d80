"""The SmolLM2 appendix's knockout (:func:`lean_knockout`): Fig. 3 on a coarse grid of ``k``, with controls.

Same machinery as identify's (:mod:`arithmech.methods.knockout_run`): reference-pool means, random
orders of non-key components only, Wilson intervals and the sanity rows, at END and at every position.
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from arithmech.data import pairs as D

HEAD_KS = (0, 2, 4, 8, 16, 32, 64)                  # knockout grid of the appendix (plus "all heads")
MLP_KS = (0, 1, 2, 4, 8)                            # (plus "all MLPs")


def lean_knockout(model, tok, res, knockout_samples: int = 256, n_random: int = 20, seed: int = 0,
                  positions: Sequence[str] = ("end",), pool_size: int = 512, top: int = 10,
                  heldout: str = "fig10") -> pd.DataFrame:
    """Fig. 3 curves for the task ``all`` (samples of every task, interleaved, topped up with fresh X_r
    to ``knockout_samples``) on the grids :data:`HEAD_KS` / :data:`MLP_KS` plus "everything", with the
    sanity rows, at each of ``positions``. Means: the reference pool of every family of the tasks and of
    ``heldout`` (``pool_size`` X_c each; ``res.means`` is set to it for :func:`top_transfer`). Random
    orders (``n_random``) avoid the ``top`` heads by effect rank (no SmolLM2 head passes −5%) and the key
    MLPs, at ``k`` = 8 heads (the claim's) and 1, 4 MLPs."""
    from arithmech.methods.identify import key_heads, ranking
    from arithmech.methods.knockout import knockout_curve, mean_sources
    from arithmech.methods.knockout_run import COLUMNS, eval_samples, sample_templates, sanity_rows, task_pool
    every = [s for ss in res.tasks.values() for s in ss]
    variant = res.params.get("answer_token", "first")
    res.means = task_pool(model, tok, sample_templates(every) + D.select_templates(heldout), pool_size, seed,
                          answer_token=variant)
    evals = [eval_samples(model, tok, sample_templates(ss), ss, knockout_samples, seed, answer_token=variant)
             for ss in res.tasks.values()]
    mixed = D.interleave(evals)[:knockout_samples]
    primary = "all" if len(res.tasks) > 1 else next(iter(res.tasks))
    heads, mlps = ranking(res.effects, primary)
    key_m = [m["layer"] for m in key_heads(res.effects, primary)["mlps"]]
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    universe = [(l, h) for l in range(L) for h in range(H)]
    src = mean_sources(tok, mixed, res.means)
    frames = []
    for i, pos in enumerate(positions):                # curves at the first setting, the k = 8 point at the others
        kw = dict(n_random=n_random, seed=seed, positions=pos)
        plan = [("head", heads, list(HEAD_KS) + [L * H] if i == 0 else [8], universe, heads[:top], [8])]
        plan += [("mlp", mlps, list(MLP_KS) + [L], list(range(L)), key_m, [1, 4])] if i == 0 else []
        frames += [knockout_curve(model, tok, mixed, res.means, rank, ks, uni, kind, exclude=ex, random_ks=rk,
                                  **kw).assign(positions=pos, mean_source=src) for kind, rank, ks, uni, ex, rk in plan]
        frames.append(pd.DataFrame(sanity_rows(model, tok, mixed, res.means, pos)).assign(positions=pos))
    return pd.concat(frames, ignore_index=True).assign(task=primary)[COLUMNS]
