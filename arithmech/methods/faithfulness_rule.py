"""The rule of the claim ``circuit-faithful`` (version 9) on ``faithfulness.csv``, and the random band it reads.

Split out of :mod:`arithmech.methods.faithfulness` (which measures; this module decides). Everything here reads a
frame of :data:`arithmech.methods.faithfulness.COLUMNS` and nothing else, so it runs on a file alone.

What a candidate's row carries (written by :func:`arithmech.methods.faithfulness.circuit_rows`), per direction:

* ``recovery`` [``recovery_lo``, ``recovery_hi``]: the mean over the used prompts of each prompt's recovery clipped
  to [0, 1], its interval at :data:`RULE_LEVEL`;
* ``recovery_raw`` [``recovery_raw_lo``, ``recovery_raw_hi``]: the same mean **unclipped**, and ``over_one``: the
  share of the used prompts whose unclipped recovery exceeds 1 (clipping reads "more than the whole effect" as the
  whole effect; a circuit that over-recovers would look perfectly faithful on the clipped mean alone);
* ``n_used`` of ``n_prompts`` prompts with a positive effect to recover, asking ``n_used_clusters`` problem clusters
  (the measure rests on those prompts only);
* ``level``: the intervals' level (the rule's :data:`RULE_LEVEL`).

The rule (:func:`faithful_verdict`), version 9. Candidates: the top n at END for n = 1 … :data:`K_MAX` and the
cross-position circuit, :data:`CANDIDATES` in all; every interval the rule reads is at level 1 − 0.05 /
:data:`CANDIDATES` (Bonferroni over the candidates: when every interval covers, no candidate is decided wrongly,
so "holds" — some candidate faithful — and "does not hold" — every candidate fails — are each wrong with
probability at most 5%). A candidate **decides** only if in both directions at least :data:`MIN_USED` of its prompts
are used, they ask at least :data:`MIN_CLUSTERS` problem clusters, and its random circuits number at least
:data:`MIN_DRAWS`; otherwise it is undecided, and says why. A
deciding candidate is **faithful** iff in both :data:`DIRECTIONS`:

* its clipped interval lies at or above ``target`` (80%),
* its clipped lower end lies above the **largest** of its random circuits' recoveries (≥ 20 draws: a circuit
  exchangeable with them tops all 20 with chance 1/21 < 5%; the 95th percentile of 20 draws, which version 6 read,
  is interpolated near the second largest and moves with one draw), and
* its unclipped interval lies at or below :data:`OVER` (120%): it is shown not to over-recover, so clipping alone
  cannot make it faithful (version 7 asked only that the interval reach down to 120%, which an interval covering
  an over-recovery of 150% does).

It **fails** iff in some direction its clipped interval lies entirely below ``target``, or its clipped upper end is
no higher than its random circuits' 95th percentile, or its unclipped interval lies entirely above :data:`OVER` (it
recovers more than the whole effect: not the model's mechanism). Else undecided.

>>> r = faithful_verdict(frame, "all"); r["holds"], [c["status"] for c in r["candidates"]]
"""

from __future__ import annotations

import pandas as pd

from arithmech.data.answers import MIN_CLUSTERS

RANDOM = {"top": "random", "operands": "random-layer"}  # a candidate circuit's order -> its random circuits'
INTERVAL = {
    "share": ("lo", "hi"),
    "recovery": ("recovery_lo", "recovery_hi"),
    "recovery_raw": ("recovery_raw_lo", "recovery_raw_hi"),
}
MIN_DRAWS = 20  # random circuits a candidate needs before it can decide (the largest of 20: p = 1/21)
BAND = (0.05, 0.95)  # the random band shown: these quantiles of the random draws' values
TARGET = 0.8  # a faithful candidate's clipped recovery lies at or above this
OVER = 1.2  # ... and its unclipped mean is not shown to lie above this (1 + (1 − TARGET))
K_MAX = 10  # END candidates: the top n for n <= K_MAX; plus the cross-position circuit
CANDIDATES = K_MAX + 1
RULE_LEVEL = 1 - 0.05 / CANDIDATES  # every interval the rule reads (Bonferroni over the candidates)
MIN_USED = 0.5  # fewer than this share of the prompts used (a positive effect to recover): cannot decide
DIRECTIONS = (("noising", "mean"), ("denoising", "x_r"))  # the two runs the rule reads
NEEDS = ("recovery_raw", "recovery_raw_lo", "recovery_raw_hi", "over_one", "n_used_clusters", "level", "positions")


def band(frame: pd.DataFrame, q: tuple[float, float] = BAND, value: str = "share") -> pd.DataFrame:
    """The random band: per ``(task, method, ablation, positions, n)`` the ``q`` quantiles (``band_lo``,
    ``band_hi``), the median (``band_mid``) and the largest (``band_max``) of the random draws' ``value``
    (``share`` or ``recovery``), with the number of draws; END draws (order ``random``) and layer-matched
    cross-position draws (``random-layer``)."""
    r = frame[frame["order"].isin(RANDOM.values())].groupby(["task", "method", "ablation", "positions", "n"])[value]
    return pd.DataFrame(
        {
            "band_lo": r.quantile(q[0]),
            "band_mid": r.median(),
            "band_hi": r.quantile(q[1]),
            "band_max": r.max(),
            "draws": r.size(),
        }
    ).reset_index()


def summary(frame: pd.DataFrame, value: str = "share") -> pd.DataFrame:
    """Per candidate circuit (order ``top`` at END, ``operands`` across positions) and ``(task, method, ablation,
    positions, n)``: its ``value`` (``share`` or ``recovery``) as ``value``, ``lo``, ``hi``, beside its random band;
    the row's other columns (``recovery_raw``, ``n_used`` …) kept where the file has them."""
    keys = ["task", "method", "ablation", "positions", "n"]
    lo, hi = INTERVAL[value]
    extra = [
        c
        for c in (
            "recovery_raw",
            "recovery_raw_lo",
            "recovery_raw_hi",
            "over_one",
            "n_used",
            "n_prompts",
            "n_used_clusters",
            "level",
        )
        if c in frame and c not in (value, lo, hi)
    ]
    top = frame[frame["order"].isin(RANDOM)][keys + ["order", value, lo, hi, "components"] + extra]
    top = top.rename(columns={value: "value", lo: "lo", hi: "hi"})
    return top.merge(band(frame, value=value), on=keys, how="left")


def _direction(r) -> dict:
    """One direction of a candidate, from its :func:`summary` row."""
    return {
        "value": float(r.value),
        "lo": float(r.lo),
        "hi": float(r.hi),
        "band_hi": float(r.band_hi),
        "band_max": float(r.band_max),
        "draws": 0 if pd.isna(r.draws) else int(r.draws),
        "raw": float(r.recovery_raw),
        "raw_lo": float(r.recovery_raw_lo),
        "raw_hi": float(r.recovery_raw_hi),
        "over_one": float(r.over_one),
        "n_used": int(r.n_used),
        "n_prompts": int(r.n_prompts),
        "n_used_clusters": int(r.n_used_clusters),
    }


def gate(d: dict) -> str | None:
    """Why one direction cannot decide (``None``: it can): too few prompts used, too few problem clusters among
    them, or too few random circuits to compare with."""
    if d["n_used"] < MIN_USED * d["n_prompts"]:
        return f"{d['n_used']} of {d['n_prompts']} prompts used (fewer than {MIN_USED:.0%})"
    if d["n_used_clusters"] < MIN_CLUSTERS:
        return f"{d['n_used_clusters']} problem clusters among the used prompts (fewer than {MIN_CLUSTERS})"
    if d["draws"] < MIN_DRAWS:
        return f"{d['draws']} random circuits (fewer than {MIN_DRAWS})"
    return None


def status(d: list[dict], target: float = TARGET) -> tuple[bool | None, str]:
    """``(status, why)`` of a candidate from its directions ``d`` (True faithful, False fails, None undecided)."""
    if len(d) < len(DIRECTIONS):
        return None, "a direction is missing"
    if why := [g for g in map(gate, d) if g]:
        return None, "cannot decide: " + "; ".join(dict.fromkeys(why))
    if all(x["lo"] >= target and x["lo"] > x["band_max"] and x["raw_hi"] <= OVER for x in d):
        return True, "faithful"
    fails = [
        w
        for x in d
        for w, bad in (
            ("below the target", x["hi"] < target),
            ("no better than random", x["hi"] <= x["band_hi"]),
            ("over-recovers", x["raw_lo"] > OVER),
        )
        if bad
    ]
    return (False, "fails: " + ", ".join(dict.fromkeys(fails))) if fails else (None, "undecided")


def faithful_verdict(frame: pd.DataFrame, task: str, target: float = TARGET, k_max: int = K_MAX) -> dict:
    """The rule of the module docstring (``circuit-faithful``, version 9; history in
    :mod:`arithmech.claims.changelog`). **Holds** iff some candidate is faithful; **does not hold** iff every
    candidate fails, each of them measured (the top n for every ``n <= k_max`` and the cross-position circuit: a
    file of ``--n-max`` below ``k_max`` cannot say "does not hold"); inconclusive otherwise, and for a file
    without the version-7 columns (:data:`NEEDS`) or whose intervals are not at :data:`RULE_LEVEL` (``"stale"``
    names why).

    Returns ``{"holds", "candidates": [{order, positions, n, components, status, why, noising: {...}, denoising:
    {...}}], "best", "stale"}``; ``best`` is the smallest faithful candidate, else the one whose lower end (the
    smaller of the two directions') is largest."""
    stale = [c for c in ("recovery", *NEEDS) if c not in frame]
    if not stale and not ((frame.level - RULE_LEVEL).abs() < 1e-6).all():  # the CSV keeps ~8 digits
        stale = [f"intervals at level {sorted(set(frame.level.round(4)))}, the rule reads {RULE_LEVEL:.4f}"]
    if stale:
        return {"holds": None, "candidates": [], "best": None, "stale": stale}
    s = summary(frame, "recovery")
    s = s[(s.task == task) & (s.n <= k_max) & pd.Series([d in DIRECTIONS for d in zip(s.method, s.ablation)], s.index)]
    out = []
    for (order, pos, n), g in s.groupby(["order", "positions", "n"], sort=True):
        cand = {"order": order, "positions": pos, "n": int(n), "components": g.components.iloc[0]}
        by = {m: r for m, r in zip(g.method, g.itertuples())}
        cand.update({m: _direction(by[m]) for m, _ in DIRECTIONS if m in by})
        d = [cand[m] for m, _ in DIRECTIONS if m in cand]
        cand["status"], cand["why"] = status(d, target)
        cand["worst_lo"] = min((x["lo"] for x in d), default=float("nan"))
        out.append(cand)
    if not out:
        return {"holds": None, "candidates": [], "best": None, "stale": []}
    good = [c for c in out if c["status"] is True]
    best = min(good, key=lambda c: c["n"]) if good else max(out, key=lambda c: (c["worst_lo"], -c["n"]))
    tops = {c["n"] for c in out if c["order"] == "top"}
    every = tops >= set(range(1, k_max + 1)) and any(c["order"] == "operands" for c in out)  # no candidate unmeasured
    holds = True if good else (False if every and all(c["status"] is False for c in out) else None)
    return {"holds": holds, "candidates": out, "best": best, "target": target, "k_max": k_max, "stale": []}


__all__ = [
    "faithful_verdict",
    "band",
    "summary",
    "status",
    "gate",
    "RANDOM",
    "INTERVAL",
    "BAND",
    "TARGET",
    "OVER",
    "K_MAX",
    "CANDIDATES",
    "RULE_LEVEL",
    "MIN_CLUSTERS",
    "MIN_USED",
    "DIRECTIONS",
    "NEEDS",
]
