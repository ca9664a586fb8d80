"""Knockout results as the book's tables: key heads out vs as many random heads, END vs every position,
and the sanity rows that say whether the ablation removes anything.

``knockout_summary`` and ``sanity_table`` read ``knockout.csv`` (a frame with :data:`COLUMNS
<arithmech.methods.ablation.run.COLUMNS>`), or an :class:`arithmech.identify.run.IdentifyResult`'s
``knockout``; :func:`positions_table` re-runs only the position setting the run does not have.
"""

from __future__ import annotations

import pandas as pd

from arithmech.core.stats import wilson_interval
from arithmech.data.floors import shown
from arithmech.methods.ablation.intervention import POSITIONS
from arithmech.methods.ablation.run import FLOORS, LAYER_MATCHED, Studied, task_knockout
from arithmech.methods.ablation.settings import KnockoutSettings

SANITY_COLUMNS = {
    "nothing-out": "nothing out",
    "all-heads-out": "all heads out",
    "all-mlps-out": "all MLPs out",
    "x_c": "X_c prompt (X_r answer)",
    "majority-floor": "majority floor",
    "conditioned-floor": "conditioned floor",
}


def _frame(res_or_frame) -> pd.DataFrame:
    return res_or_frame if isinstance(res_or_frame, pd.DataFrame) else res_or_frame.knockout


def key_vs_random(d: pd.DataFrame) -> dict:
    """One knockout point (head rows of a single ``k`` and positions): the effect-rank accuracy with
    its Wilson interval and the random-rank mean, spread and 5–95% quantiles over the orders, and the same of the
    layer-matched random draws (:data:`~arithmech.methods.ablation.run.LAYER_MATCHED`; NaN and 0 draws where the
    run made none: files made before them, or a position setting other than the first)."""
    key = d[d.order == "effect-rank"].iloc[0]
    rnd = d[d.order == "random-rank"].accuracy
    q = rnd.quantile([0.05, 0.95]).tolist() if len(rnd) else [float("nan")] * 2
    lm = d[d.order == LAYER_MATCHED].accuracy
    return {
        "key_heads": int(key.k),
        "accuracy_key_heads_out": float(key.accuracy),
        "ci_low": float(key.ci_low),
        "ci_high": float(key.ci_high),
        "accuracy_random_out_mean": float(rnd.mean()),
        "accuracy_random_out_std": float(rnd.std(ddof=0)),
        "accuracy_random_out_q05": q[0],
        "accuracy_random_out_q95": q[1],
        "random_orders": int(len(rnd)),
        "accuracy_layer_matched_mean": float(lm.mean()) if len(lm) else float("nan"),
        "accuracy_layer_matched_q05": float(lm.quantile(0.05)) if len(lm) else float("nan"),
        "layer_matched_orders": int(len(lm)),
        "n": int(key.n),
    }


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
    """ "The floor" of one task's sanity rows (indexed by ``order``): the higher of the majority floor and the
    conditioned floor (:data:`~arithmech.methods.ablation.run.FLOORS`)."""
    return max(float(by.loc[o, "accuracy"]) for o in FLOORS)


def row_interval(row) -> tuple[float, float]:
    """A knockout row's 95% interval: the Wilson interval with its problem clusters as the trials where the row
    counts them (``n_clusters``; as :func:`arithmech.claims.evidence.cluster_interval`), else the file's own over
    prompts."""
    m = row.get("n_clusters", float("nan")) if hasattr(row, "get") else float("nan")
    if m == m and m is not None and int(m) > 0:
        return wilson_interval(float(row["accuracy"]) * int(m), int(m))
    return float(row["ci_low"]), float(row["ci_high"])


def floor_interval(by: pd.DataFrame) -> tuple[float, float]:
    """The 95% interval of :func:`floor_of` (the higher of two estimates): the higher lower end and the higher upper
    end of the floor rows' :func:`row_interval`."""
    cis = [row_interval(by.loc[o]) for o in FLOORS]
    return max(c[0] for c in cis), max(c[1] for c in cis)


def uniform_guess(samples) -> float:
    """The accuracy of a uniform guess among the answer tokens of ``samples`` (``1 / distinct answer tokens``):
    what a model that still writes an answer but knows nothing scores; NaN for no sample."""
    tokens = {s.answer for s in samples}
    return 1 / len(tokens) if tokens else float("nan")


def sanity_table(res, control: dict | None = None, chance: float | None = None) -> pd.DataFrame:
    """One row per task and position setting: the sanity accuracies with their 95% intervals (Wilson over the
    problem clusters where the file counts them, :func:`row_interval`), the run's floor — the higher of the majority
    floor and the conditioned floor (:func:`floor_of`), with the interval :func:`floor_interval` — the uniform guess
    ``chance``, and ``control``: "passes", "fails: <why>", or why it is undecided or insufficient
    (:func:`arithmech.data.floors.shown`).

    The numbers only: whether every head out removes what the heads carry is the claim
    ``ablation-removes-information`` (:func:`arithmech.claims.controls.ablation_removes`), decided against the floor
    over distinct problems, which the run's floor here may differ from (it counts repeated problems).

    ``control``: key_heads.json's ``control`` (taken from ``res.key_heads`` when ``res`` is a run). ``chance``: the
    uniform guess (:func:`uniform_guess` of the run's samples when ``res`` is a run; NaN for a bare frame without it).
    """
    ko = _frame(res)
    if control is None and not isinstance(res, pd.DataFrame):
        control = res.key_heads.get("control")
    if chance is None:
        chance = (
            float("nan")
            if isinstance(res, pd.DataFrame)
            else uniform_guess([s for ss in res.tasks.values() for s in ss])
        )
    control = control or {}
    s = ko[ko.kind == "sanity"]
    rows = []
    for (task, pos), d in s.groupby(["task", "positions"], sort=False):
        by = d.drop_duplicates("order").set_index("order")
        if missing := [o for o in SANITY_COLUMNS if o not in by.index]:
            raise ValueError(
                f"knockout.csv has no {', '.join(missing)} row of task {task} at {pos} (made before it was measured): "
                "re-run python -m arithmech identify --overwrite"
            )
        m = by["n_clusters"].iloc[0] if "n_clusters" in by else float("nan")
        row = {
            "task": task,
            "positions": pos,
            "n": int(by.n.iloc[0]),
            "mean_source": str(by.loc["nothing-out", "mean_source"]),
            "intervals": f"Wilson over {int(m)} problem clusters" if m == m else "Wilson over prompts",
        }
        for o, name in SANITY_COLUMNS.items():
            row[name] = float(by.loc[o, "accuracy"])
            row[f"{name} ci"] = row_interval(by.loc[o])
        row["floor"], row["floor ci"], row["uniform guess"] = floor_of(by), floor_interval(by), chance
        row["control"] = shown(control, task)
        rows.append(row)
    return pd.DataFrame(rows)


# what the pages say under the sanity table: the claim decides, not the table
DECIDED_BY = (
    "Whether every head out removes what the heads carry is the claim *Mean ablation of every head removes the task* "
    "in the claims table, decided against the higher of the majority floor and the floor over distinct problems "
    "(each problem once), which can differ from the run's floor shown here."
)


def sanity_readable(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`sanity_table` as one reader's table (what the chapters show instead of a sentence per row): per task
    and position setting, the prompts, each sanity accuracy with its 95% interval (over the problem clusters where
    the file counts them: :func:`sanity_intervals` says which, under the table, so it stays one column wide), the
    run's floor with its interval, the uniform guess and whether the task passes its control. No verdict: the claim
    ``ablation-removes-information`` decides (:func:`sanity_table`), and a second column deciding by an older rule
    against another floor would contradict it (it did: "yes" beside the claim's "inconclusive")."""
    pct = lambda v, ci: f"{v:.0%} [{ci[0]:.0%}, {ci[1]:.0%}]" if v == v else "not measured"
    out = []
    for _, r in table.iterrows():
        row = {
            "task": r["task"],
            "positions": "END" if r["positions"] == "end" else "every position",
            "prompts": int(r["n"]),
        }
        for name in ("nothing out", "all heads out", "all MLPs out", "X_c prompt (X_r answer)"):
            row[f"{name} (95% CI)"] = pct(r[name], r[f"{name} ci"])
        row["run's floor (95% CI)"] = pct(r["floor"], r["floor ci"])
        g = r.get("uniform guess", float("nan"))
        row["uniform guess"] = f"{g:.1%}" if g == g else "not given"
        row["control"] = r["control"]
        out.append(row)
    return pd.DataFrame(out).set_index(["task", "positions"])


def sanity_intervals(table: pd.DataFrame) -> str:
    """What the intervals of :func:`sanity_readable` are over, for the line under it: e.g. "Wilson over 25 problem
    clusters" (each problem's prompts one trial) or "Wilson over prompts"."""
    col = table["intervals"] if "intervals" in table else pd.Series(["Wilson over prompts"])
    return "; ".join(dict.fromkeys(col.astype(str)))


def sanity_note(table: pd.DataFrame) -> str:
    """The line every page prints under :func:`sanity_readable`: what its 95% intervals are over, where the means
    came from, and that the claim decides (:data:`DECIDED_BY`)."""
    means = "; ".join(sorted(set(table.mean_source)))
    return f"95% intervals: {sanity_intervals(table)}. Means: {means}. {DECIDED_BY}"


def positions_table(res, model, tok, batch_size: int = 64) -> pd.DataFrame:
    """The key heads of the primary task vs as many random non-key heads, knocked out at END (where
    path patching measured them) and at every position, on the run's own knockout prompts and means.

    Position settings the run already has come from its ``knockout.csv`` rows; a missing one is computed
    (:func:`arithmech.methods.ablation.run.task_knockout`). Rows as :func:`knockout_summary`'s."""
    task = res.key_heads["task"]
    own = knockout_summary(res)
    own = own[own.task == task] if not own.empty else own
    missing = [p for p in POSITIONS if own.empty or p not in set(own.positions)]
    if missing and not res.evals.get(task):
        raise ValueError(
            f"{task} has no knockout prompt to run the position settings {missing} on "
            "(the held-out draw found none): raise --n-samples or use --knockout-split in-sample"
        )
    if missing:
        kh = res.key_heads  # the primary task's; its heads ranked by effect
        ranked = [(h["layer"], h["head"]) for h in kh["heads"]]
        p = res.params
        settings = KnockoutSettings(
            samples=p["knockout_samples"],
            n_random=p["n_random"],
            seed=p["seed"],
            ks=tuple(p["ks"]) if p["ks"] else None,
            curves_for=p["curves_for"],
            positions="both" if len(missing) == 2 else missing[0],
            split=p["knockout_split"],
            pool_size=p["pool_size"],
            batch_size=batch_size,
        )
        d = task_knockout(model, tok, res.evals[task], res.means, task, Studied(ranked, [], kh), False, settings)
        more = knockout_summary(d, res.key_heads)
        own = pd.concat([own, more[more.task == task]], ignore_index=True)
    return own.drop(columns="task").set_index("positions").loc[list(POSITIONS)].reset_index()
