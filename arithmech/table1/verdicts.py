"""Table 1's single-rate rules and their verdicts computed from the results files, and the collapse gate.

**Superseded for the claims by** :mod:`arithmech.table1.curves`: the claims of
:mod:`arithmech.table1.claims` are decided over every rate of each arm's grid. The rules below read one chosen rate
per arm; they are kept to show what they decided (and where a chosen rate flips them), and :func:`arm_table`,
:func:`deciding`, :func:`pool`, :func:`collapsed` serve both.

Every comparison is a **hierarchical paired bootstrap** (:func:`arithmech.core.stats.hierarchical_bootstrap`,
95%, 2,000 resamples): each resample draws each arm's runs at its chosen learning rate with replacement (its
seeds; for ``precise-random`` its draws) and one set of test items shared by both arms, so the interval
carries training's run-to-run variance as well as item sampling (item-only intervals let a
verdict flip between two rebuilds). With one run per arm it is the paired item bootstrap. Seed-to-seed
spread is also shown (``seed_sd``). Losses (``lower_is_better``) are negated first, so "higher is better"
everywhere.

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

**Which general measures decide** (:func:`deciding`): a measure with a ``chance`` level decides only where
the *base* model's 95% interval lies clear of it (above chance for an accuracy, below it for a loss); the
others are shown, never used by a rule. The ``cpu`` suite's primary general measure ``cloze`` is the
deciding cloze sets' items **pooled** (each item once, every set its own items).

**Collapse gate** (:func:`collapsed`): a run *collapsed* on a general measure when its own 95 %
interval (Wilson over its items; for a loss, Student t over its chunks) lies wholly below half of the base
model's margin over chance (``hi < chance + 0.5 · (base − chance)``; for a loss, wholly above the line half-way
to chance). The gate before (:func:`collapsed_point`) read the point estimate and fired on sampling noise.
Tables and charts report such a run as collapsed, not as a point estimate.
"""

from __future__ import annotations

import pandas as pd

from arithmech.core.stats import crossed_interval, hierarchical_bootstrap, t_interval, wilson_interval
from arithmech.table1.result import Table1Result

MARGIN = 0.05
COLLAPSE = 0.5
RULES = (
    ("precise SFT learns the skill", "precise-key", "base", "math", "above0"),
    ("precise matches full", "precise-key", "full", "math", "within"),
    ("the selection matters", "precise-key", "precise-random", "math", "above0_or_below_m"),
    ("precise keeps general skills", "precise-key", "base", "general", "above_minus_m"),
    ("precise forgets less than full", "precise-key", "full", "general", "above0"),
)


def arm_runs(t: Table1Result) -> dict[str, list[dict]]:
    """Arm → the records of its runs at the chosen learning rate (``base``: its one record); an arm whose plan
    names no chosen runs (the whole-grid runner decides over whole curves) is left out."""
    out = {"base": [t.base]}
    for arm, a in t.plan["arms"].items():
        tags = a.get("runs") or [r["tag"] for r in a.get("grid_rows") or [] if r["lr"] == a.get("chosen_lr")]
        if tags and arm not in ("base", "base-shots"):
            out[arm] = [t.record(tag) for tag in tags]
    return out


def deciding(base: dict, names) -> list[str]:
    """The measures of ``names`` that may decide a rule: those without a ``chance`` level, and those whose
    base interval lies clear of it (module docstring)."""
    out = []
    for m in names:
        r = base.get(m)
        if r is None:
            continue
        ch, ci = r.get("chance"), r.get("ci")
        if ch is None or (ci is not None and (ci[1] < ch if r["metric"].startswith("nats") else ci[0] > ch)):
            out.append(m)
    return out


def pool(t: Table1Result) -> list[str] | None:
    """The cloze sets pooled into the ``cpu`` suite's ``cloze`` measure: the deciding ones (None for a suite whose
    primary general measure is not ``cloze``)."""
    suite = t.suite
    if suite.primary_general != "cloze":
        return None
    base = t.base["results"]
    return [m for m in deciding(base, suite.general) if m in base and base[m].get("metric", "").endswith("cloze)")]


def per_run(runs: list[dict], measure: str, sign: float = 1.0, pooled: list[str] | None = None) -> list[list[float]]:
    """Per run, its per-item scores (times ``sign``; ``cloze``: the ``pooled`` sets' items one after the other)."""
    return [items([r], measure, sign, pooled) for r in runs]


def items(runs: list[dict], measure: str, sign: float = 1.0, pooled: list[str] | None = None) -> list[float]:
    """Per test item, its score averaged over ``runs`` (times ``sign``); ``cloze``: the items of the
    ``pooled`` sets, one after the other."""
    if measure == "cloze":
        assert pooled is not None, "the cloze measure needs its pooled sets"
        return [x for m in pooled for x in items(runs, m, sign)]
    per = [r["results"][measure]["items"] for r in runs]
    return [sign * sum(x) / len(x) for x in zip(*per)]


def value(run: dict, measure: str, pooled: list[str] | None = None) -> float:
    """A run's value on ``measure`` (``cloze``: the mean over the pooled sets' items)."""
    its = items([run], measure, 1.0, pooled)
    return sum(its) / len(its)


def collapsed_point(run: dict, base: dict, measure: str, pooled: list[str] | None = None) -> bool:
    """The earlier collapse gate, on point estimates: the run keeps less than half of base's margin over
    chance. Kept to show what it did (it fired on sampling noise: PIQA 56.5 % against 63.5 % on 200 items)."""
    ch = _chance(base, measure, pooled)
    if ch is None:
        return False
    v, b = value(run, measure, pooled), value(base, measure, pooled)
    loss = measure != "cloze" and base["results"][measure]["metric"].startswith("nats")
    return ((ch - v) if loss else (v - ch)) < COLLAPSE * ((ch - b) if loss else (b - ch))


def _chance(base: dict, measure: str, pooled: list[str] | None):
    if measure == "cloze":
        assert pooled is not None, "the cloze measure needs its pooled sets"
        return sum(base["results"][m]["chance"] * base["results"][m]["n"] for m in pooled) / sum(
            base["results"][m]["n"] for m in pooled
        )
    return base["results"][measure].get("chance")


def run_interval(run: dict, measure: str, pooled: list[str] | None = None) -> tuple[float, float]:
    """A run's own 95 % interval on ``measure``: Wilson over its items for an accuracy (``cloze``: the pooled sets'
    items together), Student t over its chunks for a loss, else the interval its record holds."""
    its = items([run], measure, 1.0, pooled)
    metric = "accuracy" if measure == "cloze" else str(run["results"][measure].get("metric", ""))
    if metric.startswith("accuracy") and all(x in (0, 1) for x in its):
        return wilson_interval(round(sum(its)), len(its))
    if len(its) >= 2:
        return t_interval(its)[1:]
    ci = run["results"][measure].get("ci")
    return tuple(ci) if ci else (value(run, measure, pooled),) * 2


def collapsed(run: dict, base: dict, measure: str, pooled: list[str] | None = None) -> bool:
    """The collapse gate (module docstring) of one run on one general measure: the run's own 95 %
    interval lies wholly below half of base's margin over chance (for a loss: wholly above it)."""
    ch = _chance(base, measure, pooled)
    if ch is None:
        return False
    b = value(base, measure, pooled)
    lo, hi = run_interval(run, measure, pooled)
    loss = measure != "cloze" and base["results"][measure]["metric"].startswith("nats")
    line = ch - COLLAPSE * (ch - b) if loss else ch + COLLAPSE * (b - ch)
    return lo > line if loss else hi < line


def level_interval(items: list[list[float]], accuracy: bool) -> tuple[float | None, float | None]:
    """The 95 % interval of an arm's mean score from its runs' per-item scores (runs × items, every run on the same
    test items). Several runs: the interval over runs and items (:func:`arithmech.core.stats.crossed_interval`, the
    rules' estimator, here at 95 % where the rules read it at 1 − 0.05/N; the runs share their items, so pooling
    them as if independent would be too narrow); for an accuracy it is never narrower than the Wilson interval of
    the mean over one run's items, nor outside [0, 1] (the crossed interval is built from variances, which vanish
    where every run scores 0 or 1). Runs scored on different numbers of items: none (nothing to cross). One run,
    as :func:`run_interval`: Wilson over its items (accuracies), Student t over its chunks (a loss)."""
    if len(items) > 1:
        n = len(items[0])
        if any(len(r) != n for r in items):
            return None, None
        lo, hi = crossed_interval(items)[1:]
        if not accuracy:
            return lo, hi
        wlo, whi = wilson_interval(sum(map(sum, items)) / len(items), n)
        return max(0.0, min(lo, wlo)), min(1.0, max(hi, whi))
    if accuracy:
        return wilson_interval(round(sum(items[0])), len(items[0]))
    return t_interval(items[0])[1:] if len(items[0]) >= 2 else (None, None)


def arm_table(t: Table1Result) -> pd.DataFrame:
    """One row per arm × measure: mean over the arm's runs, the seed-to-seed standard deviation, items
    ``n``, runs, the mean's 95 % interval (:func:`level_interval`) and the change from base with its
    hierarchical bootstrap interval (runs and items resampled)."""
    p, S = t.plan, t.suite
    runs = arm_runs(t)
    base = runs["base"][0]["results"]
    rows = []
    for arm, rs in runs.items():
        for m in base:
            vals = [r["results"][m]["value"] for r in rs]
            mean = sum(vals) / len(vals)
            sd = (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 if len(vals) > 1 else None
            acc = str(base[m].get("metric", "")).startswith("accuracy")  # exact match, or cloze acc_norm
            n = len(base[m]["items"])
            lo, hi = level_interval([r["results"][m]["items"] for r in rs], acc)
            d = lo_d = hi_d = None
            if arm != "base":
                d, lo_d, hi_d = hierarchical_bootstrap(per_run(runs["base"], m), per_run(rs, m))
            # the collapse gate reads a run against base's margin over chance: not base itself, not a measure whose
            # base interval touches chance (it has no margin to lose and decides nothing)
            gate = arm != "base" and m in S.general and base[m].get("chance") is not None and m in deciding(base, [m])
            rows.append(
                {
                    "arm": arm,
                    "measure": m,
                    "value": mean,
                    "seed_sd": sd,
                    "n_items": n,
                    "runs": len(rs),
                    "chance": base[m].get("chance"),
                    "decides": m in deciding(base, [m]),
                    "collapsed_runs": sum(collapsed(r, runs["base"][0], m) for r in rs) if gate else 0,
                    "ci_low": lo,
                    "ci_high": hi,
                    "delta": d,
                    "delta_ci_low": lo_d,
                    "delta_ci_high": hi_d,
                    "lr": None if arm == "base" else p["arms"][arm].get("chosen_lr"),
                }
            )
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


def verdicts(t: Table1Result) -> pd.DataFrame:
    """Each rule of :data:`RULES` with its measure, estimate, 95% interval and verdict."""
    S = t.suite
    runs = arm_runs(t)
    pooled = pool(t)
    rows: list[dict[str, object]] = []
    for claim, a, b, which, kind in RULES:
        m = S.primary_math if which == "math" else S.primary_general
        sign = -1.0 if m in S.lower_is_better else 1.0
        if a not in runs or b not in runs:
            rows.append(
                {
                    "claim": claim,
                    "comparison": f"{a} − {b}",
                    "measure": m,
                    "estimate": None,
                    "ci_low": None,
                    "ci_high": None,
                    "verdict": "not run",
                }
            )
            continue
        d, lo, hi = hierarchical_bootstrap(per_run(runs[b], m, sign, pooled), per_run(runs[a], m, sign, pooled))
        name = (
            m
            + (" (negated)" if sign < 0 else "")
            + (f" ({', '.join(pooled)})" if m == "cloze" and pooled is not None else "")
        )
        gone = [
            x
            for x in (a, b)
            if x != "base" and which == "general" and any(collapsed(r, runs["base"][0], m, pooled) for r in runs[x])
        ]
        rows.append(
            {
                "claim": claim,
                "comparison": f"{a} − {b}",
                "measure": name,
                "estimate": d,
                "ci_low": lo,
                "ci_high": hi,
                "verdict": rule_verdict(kind, lo, hi, MARGIN),
                "collapsed": ", ".join(gone),
            }
        )
    return pd.DataFrame(rows)


def tradeoff_frame(t: Table1Result) -> pd.DataFrame:
    """One row per fine-tuned run of the plan (grid runs included): arm, seed, learning rate, whether it
    is at the chosen rate, and its change from base on the primary math and general measures."""
    S, base, pooled = t.suite, t.base, pool(t)
    g = S.primary_general
    rows = []
    for arm, a in t.plan["arms"].items():
        chosen = a.get("runs") or []
        for tag in dict.fromkeys([r["tag"] for r in a["grid_rows"]] + chosen):
            r = t.record(tag)
            pr = r["parameters"]
            rows.append(
                {
                    "arm": arm,
                    "seed": r["seed"],
                    "lr": pr["lr"],
                    "chosen": tag in chosen,
                    "run": tag,
                    "math_gain": value(r, S.primary_math) - value(base, S.primary_math),
                    "general_change": value(r, g, pooled) - value(base, g, pooled),
                    "collapsed": collapsed(r, base, g, pooled),
                    "math": S.primary_math,
                    "general": g,
                }
            )
    return pd.DataFrame(rows)
