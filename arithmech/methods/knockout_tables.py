"""Knockout results as the book's tables: key heads out vs as many random heads, END vs every position,
and the sanity rows that say whether the ablation removes anything.

``knockout_summary`` and ``sanity_table`` read ``knockout.csv`` (a frame with :data:`COLUMNS
<arithmech.methods.knockout_run.COLUMNS>`), or an :class:`arithmech.steps.identify.IdentifyResult`'s
``knockout``; :func:`positions_table` re-runs only the position setting the run does not have.
"""
from __future__ import annotations

import pandas as pd

from arithmech.methods.ablation import POSITIONS
from arithmech.methods.knockout_run import FLOORS, KnockoutSettings, Studied, task_knockout

SANITY_COLUMNS = {"nothing-out": "nothing out", "all-heads-out": "all heads out", "all-mlps-out": "all MLPs out",
                  "x_c": "X_c prompt (X_r answer)", "majority-floor": "majority floor",
                  "conditioned-floor": "conditioned floor"}


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


def floor_of(by: pd.DataFrame) -> float:
    """"The floor" of one task's sanity rows (indexed by ``order``): the higher of the majority floor and the
    conditioned floor (:data:`~arithmech.methods.knockout_run.FLOORS`; a file without the latter: the former)."""
    return max(float(by.loc[o, "accuracy"]) for o in FLOORS if o in by.index)


def sanity_table(res, control: dict | None = None) -> pd.DataFrame:
    """One row per task and position setting: the sanity accuracies with their Wilson intervals
    and the rule decided on them (written before any run):

    * ``heads_out_above_floor``: the interval of "all heads out" lies above the floor — the higher of the
      majority floor and the conditioned floor (``ci_low > floor``; :func:`floor_of`) — then the ablation
      **does not remove the information** the heads carry (``removes_information`` is False); the interval
      touching the floor: it does (True);
    * a task that fails its control (``control["failed"]``, key_heads.json's; :data:`arithmech.steps.config.
      CONTROL_FLOOR`): its answer is guessable from what the prompt carries, so ``removes_information`` is
      None (inconclusive) and ``control`` says why.

    ``control``: key_heads.json's ``control`` (taken from ``res.key_heads`` when ``res`` is a run).
    """
    ko = _frame(res)
    if control is None and not isinstance(res, pd.DataFrame):
        control = res.key_heads.get("control")
    failed = (control or {}).get("failed", {})
    s = ko[ko.kind == "sanity"]
    rows = []
    for (task, pos), d in s.groupby(["task", "positions"], sort=False):
        by = d.set_index("order")
        row = {"task": task, "positions": pos, "n": int(by.n.iloc[0]),
               "mean_source": str(by.loc["nothing-out", "mean_source"])}
        for o, name in SANITY_COLUMNS.items():
            got = o in by.index                      # conditioned-floor: absent from files made before it
            row[name] = float(by.loc[o, "accuracy"]) if got else float("nan")
            row[f"{name} ci"] = (float(by.loc[o, "ci_low"]), float(by.loc[o, "ci_high"])) if got else (float("nan"),) * 2
        row["floor"] = floor_of(by)
        above = bool(float(by.loc["all-heads-out", "ci_low"]) > row["floor"])
        row["heads_out_above_floor"] = above
        row["removes_information"] = None if task in failed else not above
        row["control"] = f"fails: {failed[task]}" if task in failed else "passes"
        rows.append(row)
    return pd.DataFrame(rows)


def sanity_readable(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`sanity_table` as one reader's table (what the chapters show instead of a sentence per row): per task
    and position setting, the prompts, each sanity accuracy with its 95% Wilson interval, the floor (the higher of
    the majority and the conditioned floor) and the rule's outcome in words — "removes it" (the interval of all
    heads out reaches the floor), "does not" (it lies above), "inconclusive" (the task fails its control)."""
    pct = lambda v, ci: f"{v:.1%} [{ci[0]:.1%}, {ci[1]:.1%}]" if v == v else "not measured"
    out = []
    for _, r in table.iterrows():
        row = {"task": r["task"], "positions": "END" if r["positions"] == "end" else "every position",
               "prompts": int(r["n"])}
        for name in ("nothing out", "all heads out", "all MLPs out", "X_c prompt (X_r answer)"):
            row[f"{name} (95% CI)"] = pct(r[name], r[f"{name} ci"])
        row["floor"] = f"{r['floor']:.1%}"
        ri = r["removes_information"]
        row["all heads out removes what they carry"] = ("inconclusive (" + r["control"] + ")" if ri is None
                                                        else "yes: reaches the floor" if ri else "no: above the floor")
        out.append(row)
    return pd.DataFrame(out).set_index(["task", "positions"])


def positions_table(res, model, tok, batch_size: int = 64) -> pd.DataFrame:
    """The key heads of the primary task vs as many random non-key heads, knocked out at END (where
    path patching measured them) and at every position, on the run's own knockout prompts and means.

    Position settings the run already has come from its ``knockout.csv`` rows; a missing one is computed
    (:func:`arithmech.methods.knockout_run.task_knockout`). Rows as :func:`knockout_summary`'s."""
    task = res.key_heads["task"]
    own = knockout_summary(res)
    own = own[own.task == task] if not own.empty else own
    missing = [p for p in POSITIONS if own.empty or p not in set(own.positions)]
    if missing and not res.evals.get(task):
        raise ValueError(f"{task} has no knockout prompt to run the position settings {missing} on "
                         "(the held-out draw found none): raise --n-samples or use --knockout-split in-sample")
    if missing:
        kh = res.key_heads                                   # the primary task's; its heads ranked by effect
        ranked = [(h["layer"], h["head"]) for h in kh["heads"]]
        p = res.params
        settings = KnockoutSettings(samples=p["knockout_samples"], n_random=p["n_random"], seed=p["seed"],
                                    ks=tuple(p["ks"]) if p["ks"] else None, curves_for=p["curves_for"],
                                    positions="both" if len(missing) == 2 else missing[0],
                                    split=p["knockout_split"], pool_size=p["pool_size"], batch_size=batch_size)
        d = task_knockout(model, tok, res.evals[task], res.means, task, Studied(ranked, [], kh), False, settings)
        more = knockout_summary(d, res.key_heads)
        own = pd.concat([own, more[more.task == task]], ignore_index=True)
    return own.drop(columns="task").set_index("positions").loc[list(POSITIONS)].reset_index()
