"""The per-task control of identify: can the task's answers be guessed without the calculation, and is there
enough of it to decide anything?

:func:`task_control` is written into ``key_heads.json`` and ``run.json`` (``control``) by identify, and
recomputed from ``prompts.jsonl`` by the claims (:meth:`arithmech.claims.evidence.Context.control`), so that
results made under an older control are decided under this one without re-running the model.

Version 2: the floor is :func:`arithmech.data.floors.problem_floor` — the answer guessed from the
operation, the carried digits and one operand by the draw population's most probable answer, over distinct
problems — instead of the leave-one-*prompt*-out conditioned floor (version 1, which let a problem's copies in
other templates vote for its own answer). A task with fewer than :data:`~arithmech.data.answers.MIN_CLUSTERS`
distinct problems is *insufficient* and treated as one that fails.

Version 3: the floor is an estimate from a few dozen problems, so a task
**passes** only when the upper end of its 95% interval lies below :data:`~arithmech.identify.config.CONTROL_FLOOR`:
the Wilson interval of the deciding reading with the task's distinct problems as the trials (as if every prompt of
a problem were guessed right or wrong together, the clusters of :func:`arithmech.claims.evidence.cluster_interval`).
An interval that reaches the bound is *uncertain* and treated as failing (version 2 let zero-shot addition pass at
48 % [31 %, 65 %] over 31 problems: 2 points under the bound, with a third of the interval above it).

Version 4: each of the floor's three readings (:data:`~arithmech.data.floors.EVALUATIONS`)
is a weighted mean over problems — the draw probabilities over the population, 1 for each of X_r's distinct
problems, each problem's number of copies over the prompts — so its interval is the Wilson interval of its highest
grouping with **Kish's effective number of problems** ``(Σw)² / Σw²`` of those weights as the trials
(:func:`arithmech.data.floors.effective_trials`; equal weights: the number of problems, as in version 3). The
floor is the highest reading, so its interval is ``[the highest lower end, the highest upper end]`` over the
three readings, and a task passes only when **no** reading's upper end reaches the bound (version 3 gave every
reading X_r's number of distinct problems as its trials: a prompt count dominated by a few problems copied many
times was read as if it were that many independent problems).

Version 5 (from a hostile reading of version 4): ``[the highest lower end,
the highest upper end]`` over readings each at 95 % is not a 95 % interval of their maximum, and each reading is
itself the highest of three groupings. Now the ``population`` reading, exact over the enumerated draw population,
enters as a point, and every grouping of the two sampled readings (6 estimates) gets its Wilson interval at level
1 − 0.05/6, so the floor's interval covers the floor whenever all cover at once (probability ≥ 95 %)
(:func:`reading_intervals`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from arithmech.core.stats import bonferroni_z, wilson_interval
from arithmech.data.answers import MIN_CLUSTERS
from arithmech.data.floors import problem_floor
from arithmech.identify.config import CONTROL_FLOOR

VERSION = 5


def sampled_estimates(f: dict) -> int:
    """How many estimates of :func:`~arithmech.data.floors.problem_floor`'s result ``f`` carry sampling error: every
    grouping of every reading but the exact ``population`` one."""
    return sum(len(t) for on, t in f["table"].items() if on != "population")


def reading_intervals(f: dict, m: int | None = None) -> dict[str, list[float]]:
    """Per reading of :func:`~arithmech.data.floors.problem_floor`'s result ``f``: ``[low, high]`` of its highest
    grouping's accuracy, simultaneous with every other reading's (version 5). The ``population`` reading is exact
    (the draw population is enumerated: a point); every grouping of the sampled readings (``problems``, ``prompts``)
    gets its Wilson interval with the reading's effective number of problems (``f["n_eff"]``) as the trials at
    level 1 − 0.05 / m, m the number of those estimates (Bonferroni: with all covering at once, each reading's
    highest grouping lies between the highest lower and the highest upper end, and so does the floor). ``m``: the
    size of a larger family these estimates belong to (the ablation rule's, :mod:`arithmech.claims.controls`)."""
    z = bonferroni_z(m or sampled_estimates(f))
    out = {}
    for on, t in f["table"].items():
        n_eff = f["n_eff"].get(on, float("nan"))
        if on == "population":
            out[on] = [max(t.values())] * 2
        elif n_eff == n_eff and n_eff > 0:
            ends = [wilson_interval(a * n_eff, n_eff, z) for a in t.values()]
            out[on] = [max(lo for lo, _ in ends), max(hi for _, hi in ends)]
        else:
            out[on] = [float("nan")] * 2
    return out


def floor_entry(samples: Sequence) -> dict:
    """One task's floors: ``{"majority", "conditioned" (the problem floor), "interval" (its simultaneous 95% interval,
    version 5: the highest lower and upper ends over the readings), "upper_on" (the reading whose upper end is
    highest), "n_eff" (the deciding reading's effective number of problems), "readings" ({on: [accuracy, n_eff, low,
    high]}), "by", "on", "n", "problems", "loo" (the leave-one-problem-out lower bound), "table" and "n_eff_by" (every
    grouping's accuracy and every reading's effective problems, for :func:`floor_at`)}``."""
    f = problem_floor(samples)
    top = max(Counter(s.answer for s in samples).values()) if samples else 0
    loo = max((v for t in f["loo"].values() for v in t.values()), default=float("nan"))
    ci = reading_intervals(f) if f["problems"] else {}
    up = max(ci, key=lambda on: ci[on][1]) if ci else ""
    lo, hi = (max(c[0] for c in ci.values()), ci[up][1]) if ci else (float("nan"),) * 2
    return {
        "majority": top / len(samples) if samples else float("nan"),
        "conditioned": f["accuracy"],
        "interval": [lo, hi],
        "upper_on": up,
        "n_eff": f["n_eff"].get(f["on"], float("nan")),
        "readings": {on: [max(f["table"][on].values()), f["n_eff"][on], *ci[on]] for on in ci},
        "by": f["by"],
        "on": f["on"],
        "n": f["n"],
        "problems": f["problems"],
        "loo": loo,
        "table": f["table"],
        "n_eff_by": f["n_eff"],
    }


def floor_at(entry: dict, m: int) -> tuple[float, float, float]:
    """A :func:`floor_entry`'s floor and its interval with its estimates in a family of ``m`` (each sampled grouping
    at 1 − 0.05 / m): ``(floor, highest lower end, highest upper end)``."""
    ci = reading_intervals({"table": entry["table"], "n_eff": entry["n_eff_by"]}, m)
    return entry["conditioned"], max(c[0] for c in ci.values()), max(c[1] for c in ci.values())


def evidence_status(samples: Sequence) -> str:
    """``"ok"`` where ``samples`` hold at least :data:`MIN_CLUSTERS` distinct problems (operation, operand pair),
    else ``"insufficient: n X_r from p problems < MIN_CLUSTERS"`` — what a table prints in its status column
    instead of "ok" for heads found on a handful of prompts (App. D's exponentiation: 4)."""
    p = len({(s.op, s.a, s.b) for s in samples})
    return (
        "ok"
        if p >= MIN_CLUSTERS
        else f"insufficient: {len(samples)} X_r from {p} problem{'s' * (p != 1)} < {MIN_CLUSTERS}"
    )


def task_control(samples: dict[str, list]) -> dict:
    """Each task's control on its X_r: ``{"version", "rule", "floors": {task: floor_entry}, "failed": {task:
    why}, "insufficient": [tasks], "pooled": the tasks "all" pools}``. A task fails when its problem floor is
    >= :data:`CONTROL_FLOOR` or it has fewer than :data:`MIN_CLUSTERS` problems; where every task fails, "all"
    pools them all and is itself marked failed."""
    floors, failed, insufficient = {}, {}, []
    for t, ss in samples.items():
        f = floors[t] = floor_entry(ss)
        if f["problems"] < MIN_CLUSTERS:
            insufficient.append(t)
            failed[t] = (
                f"insufficient: {f['n']} prompt{'s' * (f['n'] != 1)} from {f['problems']} "
                f"problem{'s' * (f['problems'] != 1)} < {MIN_CLUSTERS}"
            )
        elif f["interval"][1] >= CONTROL_FLOOR:
            lo, hi = f["interval"]
            why = (
                f">= {CONTROL_FLOOR:.0%}"
                if f["conditioned"] >= CONTROL_FLOOR
                else f"< {CONTROL_FLOOR:.0%}, but its interval reaches it (uncertain)"
            )
            r = f["readings"][f["upper_on"]]
            upper = (
                ""
                if f["upper_on"] == f["on"]
                else f"; upper end from the {f['upper_on']}: {r[0]:.0%} over {r[1]:.1f} effective problems"
            )
            failed[t] = (
                f"floor over distinct problems {f['conditioned']:.0%} [{lo:.0%}, {hi:.0%}] over {f['problems']} "
                f"problems {why} (answer guessed from {f['by']}, counted over the {f['on']}: "
                f"{f['n_eff']:.1f} effective problems{upper})"
            )
    pooled = [t for t in samples if t not in failed]
    if not pooled:
        pooled = list(samples)
        if len(samples) > 1:
            failed["all"] = "every task fails its control; all pools them all"
    return {
        "version": VERSION,
        "rule": (
            f"a task fails when its floor over distinct problems on X_r (data.floors.problem_floor: the draw "
            f"population's guess from the operation, the carried digits and one operand) could be >= "
            f"{CONTROL_FLOOR} (the upper end of some reading's simultaneous interval reaches it: the population "
            f"reading exact, every grouping of the others a Wilson interval at 1 - 0.05/6 with Kish's effective "
            f"number of the problems it weighs as the trials), and is insufficient with fewer than {MIN_CLUSTERS} "
            "distinct problems (steps.config): its verdicts are inconclusive and it is left out of the pooled task all"
        ),
        "floors": floors,
        "failed": failed,
        "insufficient": insufficient,
        "pooled": pooled,
    }


def recomputed(key_heads: dict, samples: Sequence) -> dict:
    """Identify's control recomputed under this version from its kept prompts ``samples`` (``prompts.jsonl``), so
    that results made under an older control are read under this one (the claims' :meth:`Context.control
    <arithmech.claims.evidence.Context.control>`, analyze's and beyond's prompts): the tasks are ``key_heads``'s
    (its ``control.floors``, else its ``task``), each task's prompts those of that operation. Where a task names no
    operation of the prompts (a template-pair file), the control written by the run is kept (``recomputed`` False)."""
    stored = key_heads.get("control") or {}
    tasks = list(stored.get("floors") or [key_heads.get("task")])
    by = {t: [s for s in samples if s.op == t] for t in tasks}
    if not samples or not all(by.values()):
        return {
            **stored,
            "recomputed": False,
            "pooled": stored.get("pooled", tasks),
            "failed": stored.get("failed", {}),
        }
    return {**task_control(by), "recomputed": True, "stored_pooled": stored.get("pooled", tasks)}
