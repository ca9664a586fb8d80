"""Table 1's learning-rate grids: which rates each arm runs, when a grid is *bracketed*, and which
rates get extra seeds. Every rule here reads **validation** scores only; the test items decide the verdicts
(:mod:`arithmech.table1.verdicts`), never which runs exist.

* **grids** (:data:`GRIDS`) — full SFT has its own; the precise arms (key, share, the random controls) share
  one grid, so every precise comparison is at matched rates.
* **bracketed** (:func:`bracket_side`) — an arm's grid is bracketed when both of its ends are past the useful
  range: at the lowest rate the validation math gain over base is at most half the arm's best gain (too low:
  little learned), and at the highest rate it is too (too high: the skill, or the model, collapses). An
  unbracketed end is extended by the grid's own ratio (:func:`extension`), up to ``max_extend`` times per arm;
  the precise grid is extended when any precise arm (key, share, or a random arm's first draw) needs it.
* **frontier rates** (:func:`frontier_rates`) — the rates on an arm's validation trade-off frontier (mean
  validation math accuracy up, mean validation text loss down: no other rate of the arm is at least as good on
  both and better on one) get seeds up to ``frontier_seeds``.
* **replicated rates** (:func:`replicated`) — with ``--no-replicate-ends``, a bracketed grid's two end rates
  keep their first run (they show the bracket) and get no further seeds, draws or frontier seeds: the rules read a
  point from 3 runs, so they decide on the interior rates, where an arm learns without collapsing. A cut of grid
  points to fit the machine, recorded in ``table1.json``; an unbracketed grid is never cut.
* the **single-rate choice** of the first runs (:data:`RULE`, :func:`choose`) is still computed and shown beside
  the frontier, as the choice the earlier verdicts hung on.
* the **confirmation's rates** (:func:`choose_rates`, :func:`pilot_rate`) — chosen by the protocol's rules
  (:mod:`arithmech.table1.protocol`) on the exploration's validation carry alone (:func:`exploration`: its runs by
  grid point).
"""

from __future__ import annotations

from collections.abc import Sequence

from arithmech.table1.result import Table1Result

PRECISE = ("precise-key", "precise-share", "precise-random", "precise-random-any")
RANDOM = ("precise-random", "precise-random-any")
ARMS = ("full",) + PRECISE
_P = {"toy": (1e-3, 3e-3, 1e-2), "planted": (1e-3, 3e-3, 1e-2), "cpu": (3e-4, 1e-3, 3e-3), "paper": (3e-4, 1e-3, 3e-3)}
_F = {"toy": (3e-4, 1e-3, 3e-3), "planted": (3e-4, 1e-3, 3e-3), "cpu": (3e-5, 1e-4, 3e-4), "paper": (3e-5, 1e-4, 3e-4)}
GRIDS = {s: {"full": _F[s], **{a: _P[s] for a in PRECISE}} for s in _P}
RULE = "highest validation math accuracy; among rates within 0.01 of it, the lowest validation math loss"
BRACKET = 0.5
BRACKET_RULE = (
    f"an end of an arm's grid is bracketed when its mean validation math gain over base is at most "
    f"{BRACKET} x the arm's best (seed 0, or a random arm's first draw); an unbracketed end is extended "
    "by the grid's ratio"
)


def grid_of(arm: str) -> str:
    """The grid ``arm`` runs on (:data:`GRIDS`, ``table1.json``'s ``replicated``): full SFT's own, ``"full"``, or the
    one the precise arms share, ``"precise"``."""
    return "full" if arm == "full" else "precise"


def lr_tag(lr: float) -> str:
    return f"{lr:.0e}"


def val_math(val: dict, suite) -> float:
    """Validation math accuracy: the suite's validation math items pooled (exact match)."""
    its = [x for k in suite.math if k in val for x in val[k]["items"]]
    return sum(its) / len(its)


def choose(rows: list[dict]) -> float:
    """:data:`RULE` over grid ``rows`` (``{"lr", "val_math", "val_nll"}``): the single-rate choice."""
    best = max(r["val_math"] for r in rows)
    return min((r for r in rows if r["val_math"] >= best - 0.01), key=lambda r: (r["val_nll"], r["lr"]))["lr"]


def extension(grid: Sequence[float], side: str) -> float | None:
    """One grid ratio beyond the ``side`` (``"low"`` / ``"high"``) end of the sorted ``grid``, rounded to one
    significant digit; ``None`` when it would leave (0, 1) or is already there."""
    g = sorted(grid)
    lr = float(f"{(g[0] ** 2 / g[1] if side == 'low' else g[-1] ** 2 / g[-2]):.0e}")
    return lr if 0 < lr < 1 and lr not in g else None


def means_by_rate(rows: Sequence[dict], key: str = "val_math") -> dict[float, float]:
    """Rate → the mean of ``key`` over ``rows`` at that rate."""
    by: dict[float, list[float]] = {}
    for r in rows:
        by.setdefault(r["lr"], []).append(r[key])
    return {lr: sum(v) / len(v) for lr, v in sorted(by.items())}


def bracket_side(rows: Sequence[dict], base: float) -> str | None:
    """The end of the grid to extend (``"low"``, then ``"high"``), or ``None`` when both ends are bracketed
    (module docstring). ``rows``: the first runs of every rate (``{"lr", "val_math"}``); ``base``: the base
    model's validation math accuracy."""
    m = means_by_rate(rows)
    best = max(m.values()) - base
    if best <= 0:  # nothing learned anywhere: the grid is too low
        return "high"
    lrs = sorted(m)
    if m[lrs[0]] - base > BRACKET * best:
        return "low"
    if m[lrs[-1]] - base > BRACKET * best:
        return "high"
    return None


def frontier_rates(rows: Sequence[dict]) -> list[float]:
    """The rates on the validation frontier of ``rows`` (``{"lr", "val_math", "val_loss"}``): no other rate's
    mean is at least as high in math and as low in text loss, and strictly better in one."""
    m, loss = means_by_rate(rows), means_by_rate(rows, "val_loss")
    out = []
    for lr in m:
        dominated = any(m[o] >= m[lr] and loss[o] <= loss[lr] and (m[o] > m[lr] or loss[o] < loss[lr]) for o in m)
        if not dominated:
            out.append(lr)
    return out


def replicated(grid: Sequence[float], bracketed: bool, ends: bool) -> list[float]:
    """The rates of the sorted ``grid`` that get runs beyond the first (module docstring): all of them, or without
    the two ends where ``ends`` is False and the grid is ``bracketed`` (and has an interior to keep)."""
    g = sorted(grid)
    return g if ends or not bracketed or len(g) < 3 else g[1:-1]


def exploration(t: Table1Result) -> dict[tuple[str, float], list[dict]]:
    """Every exploratory run of the arms run ``t`` (each arm's ``grid_rows``), by ``(arm, rate)``."""
    out: dict[tuple[str, float], list[dict]] = {}
    for arm, a in t.plan["arms"].items():
        for row in a["grid_rows"]:
            out.setdefault((arm, row["lr"]), []).append(t.record(row["tag"]))
    return out


def _val(runs: list[dict]) -> float:
    return sum(r["parameters"]["validation"]["carry"]["value"] for r in runs) / len(runs)


def choose_rates(runs: dict[tuple[str, float], list[dict]], min_runs: int = 3) -> dict:
    """The confirmation's rates by the protocol's rules, from validation carry alone (replicated rates: at least
    ``min_runs`` runs): precise-key's best rate, full's rate of equal gain, and full's best (for the power
    calculation only)."""
    val = {k: _val(v) for k, v in runs.items() if len(v) >= min_runs}
    key = max((v, lr) for (a, lr), v in val.items() if a == "precise-key")[1]
    target = val[("precise-key", key)]
    equal = min((abs(v - target), lr) for (a, lr), v in val.items() if a == "full")[1]
    return {
        "key": key,
        "equal-gain": equal,
        "validation_carry": {f"{a}@{lr:g}": round(v, 4) for (a, lr), v in sorted(val.items())},
        "full": max((v, lr) for (a, lr), v in val.items() if a == "full")[1],  # only for the power calculation
    }


def pilot_rate(val_by_rate: dict[float, float]) -> float:
    """A pilot's rate: the highest validation carry; a tie goes to the lower rate."""
    return max(val_by_rate.items(), key=lambda kv: (kv[1], -kv[0]))[0]
