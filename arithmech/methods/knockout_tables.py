"""Knockout results as the book's tables: key heads out vs as many random heads, END vs every position,
and the sanity rows that say whether the ablation removes anything.

``knockout_summary`` and ``sanity_table`` read ``knockout.csv`` (a frame with :data:`COLUMNS
<arithmech.methods.knockout_run.COLUMNS>`), or an :class:`arithmech.steps.identify.IdentifyResult`'s
``knockout``; :func:`positions_table` re-runs only the position setting the run does not have.
"""
from __future__ import annotations

import pandas as pd

from arithmech.methods.knockout import POSITIONS
from arithmech.methods.knockout_run import task_knockout

SANITY_COLUMNS = {"nothing-out": "nothing out", "all-heads-out": "all heads out", "all-mlps-out": "all MLPs out",
                  "x_c": "X_c prompt (X_r answer)", "majority-floor": "majority floor"}


def _frame(res_or_frame) -> pd.DataFrame:
    return res_or_frame if isinstance(res_or_frame, pd.DataFrame) else res_or_frame.knockout


def key_vs_random(d: pd.DataFrame) -> dict:
    """One knockout point (head rows of a single ``k`` and positions): the effect-rank accuracy with
    its Wilson interval and the random-rank mean, spread and 5–95% quantiles over the orders."""
    key = d[d.order == "effect-rank"].iloc[0]
    rnd = d[d.order == "random-rank"].accuracy
    q = rnd.quantile([0.05, 0.95]).tolist() if len(rnd) else [float("nan")] * 2
    return {"key_heads": int(key.k), "accuracy_key_heads_out": float(key.accuracy),
            "ci_low": float(key.ci_low), "ci_high": float(key.ci_high),
            "accuracy_random_out_mean": float(rnd.mean()), "accuracy_random_out_std": float(rnd.std(ddof=0)),
            "accuracy_random_out_q05": q[0], "accuracy_random_out_q95": q[1], "random_orders": int(len(rnd)),
            "n": int(key.n)}


def knockout_summary(res, key_heads: dict | None = None) -> pd.DataFrame:
    """Per task and position setting: accuracy after knocking out its key heads (effect rank, ``k`` =
    number of key heads) and after knocking out ``k`` random non-key heads.

    ``res``: an ``IdentifyResult`` (its ``key_heads``) or the ``knockout.csv`` frame with ``key_heads``
    (``key_heads.json``)."""
    ko, kh = _frame(res), key_heads if key_heads is not None else res.key_heads
    per = {**(kh.get("per_task") or {}), kh["task"]: kh["heads"]}
    rows = []
    for task, heads in per.items():
        for pos in dict.fromkeys(ko.positions):
            d = ko[(ko.task == task) & (ko.kind == "head") & (ko.k == len(heads)) & (ko.positions == pos)]
            if not d.empty and (d.order == "effect-rank").any():
                rows.append({"task": task, "positions": pos, **key_vs_random(d)})
    return pd.DataFrame(rows)


def sanity_table(res) -> pd.DataFrame:
    """One row per task and position setting: the five sanity accuracies with their Wilson intervals
    and the rule decided on them (written before any run):

    * ``heads_out_above_floor``: the interval of "all heads out" lies above the majority floor
      (``ci_low > floor``) — then the ablation **does not remove the information** the heads carry
      (``removes_information`` is False); the interval touching the floor: it does (True);
    * ``nothing_out_is_clean``: nothing out scores what the model scores with no hook at all.
    """
    ko = _frame(res)
    s = ko[ko.kind == "sanity"]
    rows = []
    for (task, pos), d in s.groupby(["task", "positions"], sort=False):
        by = d.set_index("order")
        row = {"task": task, "positions": pos, "n": int(by.n.iloc[0]),
               "mean_source": str(by.loc["nothing-out", "mean_source"])}
        for o, name in SANITY_COLUMNS.items():
            row[name] = float(by.loc[o, "accuracy"])
            row[f"{name} ci"] = (float(by.loc[o, "ci_low"]), float(by.loc[o, "ci_high"]))
        above = float(by.loc["all-heads-out", "ci_low"]) > float(by.loc["majority-floor", "accuracy"])
        row["heads_out_above_floor"] = above
        row["removes_information"] = not above
        rows.append(row)
    return pd.DataFrame(rows)


def sanity_sentence(row) -> str:
    """The chapter's sentence for one row of :func:`sanity_table`, computed, not typed."""
    lo, hi = row["all heads out ci"]
    head = (f"With every head mean-ablated ({row['positions']}), accuracy is {row['all heads out']:.1%} "
            f"(95% CI {lo:.1%}–{hi:.1%}, n = {row['n']}) against a majority floor of {row['majority floor']:.1%}: ")
    return head + ("the interval lies above the floor, so this ablation does **not** remove the information "
                   "the heads carry." if row["heads_out_above_floor"] else
                   "the interval reaches the floor, so the ablation removes what the heads carry.")


def positions_table(res, model, tok, batch_size: int = 64) -> pd.DataFrame:
    """The key heads of the primary task vs as many random non-key heads, knocked out at END (where
    path patching measured them) and at every position, on the run's own knockout prompts and means.

    Position settings the run already has come from its ``knockout.csv`` rows; a missing one is computed
    (:func:`arithmech.methods.knockout_run.task_knockout`). Rows as :func:`knockout_summary`'s."""
    task = res.key_heads["task"]
    own = knockout_summary(res)
    own = own[own.task == task] if not own.empty else own
    missing = [p for p in POSITIONS if own.empty or p not in set(own.positions)]
    if missing:
        kh = res.key_heads                                   # the primary task's; its heads ranked by effect
        ranked = [(h["layer"], h["head"]) for h in kh["heads"]]
        d = task_knockout(model, tok, res.evals[task], res.means, (ranked, []), task, kh, False, missing,
                          res.params["n_random"], res.params["seed"], batch_size=batch_size)
        more = knockout_summary(d, res.key_heads)
        own = pd.concat([own, more[more.task == task]], ignore_index=True)
    return own.drop(columns="task").set_index("positions").loc[list(POSITIONS)].reset_index()
