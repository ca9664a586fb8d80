"""Table 1's rules, stated before the run, and their verdicts computed from the results files.

Every comparison is a **paired bootstrap over the test items** (:func:`arithmech.core.stats.paired_bootstrap`,
95%, 2,000 resamples): each item's score is first averaged over an arm's runs at its chosen learning
rate (its seeds; for ``precise-random`` its draws), then the difference of two arms is resampled item by
item. The interval thus covers item sampling; seed-to-seed spread is shown beside it (``seed_sd``), not
folded in. Losses (``lower_is_better``) are negated first, so "higher is better" everywhere.

The rules (:data:`RULES`; ``m`` = the margin, 5 points of accuracy or 0.05 nats of loss):

1. **precise SFT learns the skill** — precise-key − base on the suite's primary math measure:
   holds iff the interval lies above 0; does not hold iff it lies at or below 0; else inconclusive.
2. **precise matches full** — precise-key − full on the primary math measure: holds iff the interval
   lies within ±m; does not hold iff it lies wholly outside ±m; else inconclusive.
3. **the selection matters** — precise-key − precise-random on the primary math measure: holds iff the
   interval lies above 0; does not hold iff its upper end is below +m (no advantage of m or more);
   else inconclusive.
4. **precise keeps general skills** — precise-key − base on the primary general measure: holds iff the
   interval's lower end is above −m; does not hold iff its upper end is below −m; else inconclusive.
5. **precise forgets less than full** — precise-key − full on the primary general measure: holds iff
   the interval lies above 0; does not hold iff it lies at or below 0; else inconclusive.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from arithmech.core import records, results
from arithmech.core.stats import paired_bootstrap, wilson_interval
from arithmech.evals.suites import get_suite

MARGIN = 0.05
RULES = (
    ("precise SFT learns the skill", "precise-key", "base", "math", "above0"),
    ("precise matches full", "precise-key", "full", "math", "within"),
    ("the selection matters", "precise-key", "precise-random", "math", "above0_or_below_m"),
    ("precise keeps general skills", "precise-key", "base", "general", "above_minus_m"),
    ("precise forgets less than full", "precise-key", "full", "general", "above0"),
)


def plan(folder: str | Path) -> dict:
    """``finetune/table1.json`` of a model's results folder (:func:`arithmech.steps.table1.run_arms`)."""
    return results.read(folder, "finetune/table1.json")


def _record(folder, tag: str) -> dict:
    mode, _, rest = tag.partition("-")
    return records.read_finetune(folder, mode, rest or None)


def arm_runs(folder: str | Path, p: dict | None = None) -> dict[str, list[dict]]:
    """Arm → the records of its runs at the chosen learning rate (``base``: its one record)."""
    p = p or plan(folder)
    out = {"base": [records.read_finetune(folder, "base")]}
    for arm, a in p["arms"].items():
        out[arm] = [_record(folder, t) for t in a["runs"]]
    return out


def items(runs: list[dict], measure: str, sign: float = 1.0) -> list[float]:
    """Per test item, its score averaged over ``runs`` (times ``sign``)."""
    per = [r["results"][measure]["items"] for r in runs]
    return [sign * sum(x) / len(x) for x in zip(*per)]


def arm_table(folder: str | Path) -> pd.DataFrame:
    """One row per arm × measure: mean over the arm's runs, the seed-to-seed standard deviation, items
    ``n``, runs, the Wilson interval of the pooled items (accuracies) and the change from base with its
    paired-bootstrap interval (items averaged over runs)."""
    p = plan(folder)
    runs = arm_runs(folder, p)
    base = runs["base"][0]["results"]
    rows = []
    for arm, rs in runs.items():
        for m in base:
            vals = [r["results"][m]["value"] for r in rs]
            mean = sum(vals) / len(vals)
            sd = (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 if len(vals) > 1 else None
            acc = base[m].get("metric") == "accuracy"
            k = sum(sum(r["results"][m]["items"]) for r in rs)
            n = len(base[m]["items"])
            lo, hi = wilson_interval(round(k), n * len(rs)) if acc else (None, None)
            d = lo_d = hi_d = None
            if arm != "base":
                d, lo_d, hi_d = paired_bootstrap(items([runs["base"][0]], m), items(rs, m))
            rows.append({"arm": arm, "measure": m, "value": mean, "seed_sd": sd, "n_items": n, "runs": len(rs),
                         "ci_low": lo, "ci_high": hi, "delta": d, "delta_ci_low": lo_d, "delta_ci_high": hi_d,
                         "lr": None if arm == "base" else p["arms"][arm]["chosen_lr"]})
    return pd.DataFrame(rows)


def rule_verdict(kind: str, lo: float, hi: float, m: float) -> str:
    """``holds`` / ``does not hold`` / ``inconclusive`` for an interval ``[lo, hi]`` under rule ``kind``
    of :data:`RULES` with margin ``m`` (module docstring)."""
    if kind == "above0":
        return "holds" if lo > 0 else ("does not hold" if hi <= 0 else "inconclusive")
    if kind == "within":
        return "holds" if -m <= lo and hi <= m else ("does not hold" if lo > m or hi < -m else "inconclusive")
    if kind == "above0_or_below_m":
        return "holds" if lo > 0 else ("does not hold" if hi < m else "inconclusive")
    if kind == "above_minus_m":
        return "holds" if lo > -m else ("does not hold" if hi < -m else "inconclusive")
    raise ValueError(kind)


def verdicts(folder: str | Path) -> pd.DataFrame:
    """Each rule of :data:`RULES` with its measure, estimate, 95% interval and verdict."""
    p = plan(folder)
    S = get_suite(p["suite"])
    runs = arm_runs(folder, p)
    rows = []
    for claim, a, b, which, kind in RULES:
        m = S.primary_math if which == "math" else S.primary_general
        sign = -1.0 if m in S.lower_is_better else 1.0
        if a not in runs or b not in runs:
            rows.append({"claim": claim, "comparison": f"{a} − {b}", "measure": m, "estimate": None,
                         "ci_low": None, "ci_high": None, "verdict": "not run"})
            continue
        d, lo, hi = paired_bootstrap(items(runs[b], m, sign), items(runs[a], m, sign))
        rows.append({"claim": claim, "comparison": f"{a} − {b}", "measure": m + (" (negated)" if sign < 0 else ""),
                     "estimate": d, "ci_low": lo, "ci_high": hi, "verdict": rule_verdict(kind, lo, hi, MARGIN)})
    return pd.DataFrame(rows)


def tradeoff_frame(folder: str | Path) -> pd.DataFrame:
    """One row per fine-tuned run of the plan (grid runs included): arm, seed, learning rate, whether it
    is at the chosen rate, and its change from base on the primary math and general measures."""
    p = plan(folder)
    S = get_suite(p["suite"])
    base = records.read_finetune(folder, "base")["results"]
    rows = []
    for arm, a in p["arms"].items():
        tags = dict.fromkeys([r["tag"] for r in a["grid_rows"]] + a["runs"])
        for t in tags:
            r = _record(folder, t)
            pr = r["parameters"]
            rows.append({"arm": arm, "seed": r["seed"], "lr": pr["lr"], "chosen": t in a["runs"], "run": t,
                         "math_gain": r["results"][S.primary_math]["value"] - base[S.primary_math]["value"],
                         "general_change": r["results"][S.primary_general]["value"] - base[S.primary_general]["value"],
                         "math": S.primary_math, "general": S.primary_general})
    return pd.DataFrame(rows)
