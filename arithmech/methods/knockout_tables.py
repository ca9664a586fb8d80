"""Knockout results as the book's tables: key heads out vs as many random heads, END vs every position.

Both read an :class:`arithmech.methods.identify.IdentifyResult` (``res``: its knockout curves,
samples, means and parameters); :func:`positions_table` re-runs only the points it does not have.
"""
from __future__ import annotations

import pandas as pd

from arithmech.data.pairs import interleave
from arithmech.methods.knockout import POSITIONS, knockout_curve


def knockout_summary(res) -> pd.DataFrame:
    """Per task: accuracy after knocking out its key heads (effect rank, ``k`` = number of key heads)
    and after knocking out ``k`` random heads (mean and standard deviation over the seeds)."""
    rows = []
    per = res.key_heads.get("per_task") or {res.key_heads["task"]: res.key_heads["heads"]}
    per = {**per, res.key_heads["task"]: res.key_heads["heads"]}
    for task, heads in per.items():
        d = res.knockout[(res.knockout.task == task) & (res.knockout.kind == "head") & (res.knockout.k == len(heads))]
        if not d.empty:
            rows.append({"task": task, **_key_vs_random(d)})
    return pd.DataFrame(rows)


def _key_vs_random(d: pd.DataFrame) -> dict:
    """One knockout point (rows of a single ``k``): the effect-rank accuracy and the random-rank
    mean and spread over seeds."""
    rnd = d[d.order == "random-rank"].accuracy
    return {"key_heads": int(d.k.iloc[0]), "accuracy_key_heads_out": float(d[d.order == "effect-rank"].accuracy.iloc[0]),
            "accuracy_random_out_mean": float(rnd.mean()), "accuracy_random_out_std": float(rnd.std(ddof=0)),
            "n": int(d.n.iloc[0])}


def positions_table(res, model, tok, batch_size: int = 64) -> pd.DataFrame:
    """The key heads of the primary task vs as many random heads (``n_random`` seeded draws), knocked
    out at END (the default, where path patching measured them) and at every position.

    The run's own positions come from its knockout curve (:func:`knockout_summary`); the other is
    computed on the same samples with the same random orders.
    Rows ``positions, key_heads, accuracy_key_heads_out, accuracy_random_out_mean, _std, n``."""
    task = res.key_heads["task"]
    heads = [(h["layer"], h["head"]) for h in res.key_heads["heads"]]
    own = knockout_summary(res)
    own = own[own.task == task].drop(columns="task") if not own.empty else own
    ss = (res.tasks[task] if task in res.tasks else interleave(res.tasks.values()))[:res.params["knockout_samples"]]
    cfg = model.config
    universe = [(l, h) for l in range(cfg.num_hidden_layers) for h in range(cfg.num_attention_heads)]
    rows = []
    for positions in POSITIONS:
        if positions == res.params["knockout_positions"] and not own.empty:
            rows.append({"positions": positions, **own.iloc[0].to_dict()})
            continue
        d = knockout_curve(model, tok, ss, res.means, heads, [len(heads)], universe, "head", res.params["n_random"],
                           res.params["seed"], batch_size=batch_size, positions=positions)
        rows.append({"positions": positions, **_key_vs_random(d)})
    return pd.DataFrame(rows)
