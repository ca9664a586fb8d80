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

Version 6 (issue 63, from a hostile reading of version 5: K = 4 subtraction failed at 21 % [20, 51] with every
reading about 20 %, its upper end from 17.2 effective problems): the control is three-valued on that interval, the
floor realised on X_r with its simultaneous 95 % interval over problem clusters (:func:`verdict`). A task
**passes** where the whole interval lies below :data:`~arithmech.identify.config.CONTROL_FLOOR`, **fails** where it
lies wholly at or above it (its answers are guessable), and is **undecided** where it straddles the bound: the rules
that need a control treat it as not passed (:func:`arithmech.data.floors.not_passed`), but it is reported as
"undecided on N problems", with how many more problems would decide it if its readings held
(:func:`problems_to_decide`), never as failing.
Below :data:`~arithmech.data.answers.MIN_CLUSTERS` distinct problems a task stays *insufficient* (the one threshold).

Version 7 (from a hostile reading of version 6, findings 1, 5 and 11): the interval said it was "over problem clusters"
but counted distinct *ordered* problems, so 3 + 5 and 5 + 3 were two trials, while every other rule and
:data:`~arithmech.data.answers.MIN_CLUSTERS` count the unordered cluster :func:`arithmech.data.splits.cluster`
``(operation, smaller operand, larger operand)``. Now the guess is still made per ordered problem (the guesser
conditions on one operand), but the **trials are problem clusters**: a cluster's problems (the ``problems`` reading)
and its prompts (the ``prompts`` reading) are weighed as one unit, right or wrong together, and each reading's Kish
effective number is over the clusters' weights (:func:`arithmech.data.floors.effective_trials`); a task is
insufficient below ``MIN_CLUSTERS`` clusters; :func:`problems_to_decide` grows the clusters. A task **fails** only
where the interval of its **X_r readings** (``problems`` and ``prompts``, without the draw population's exact point)
lies at or above the bound: where only the population's point reaches it while the X_r readings straddle it, the
task is **undecided** (its reason says the draw population alone would guess half); the population's point stays in
the pass bar (a task passes only where it too lies below). An undecided task's "the draw has N more" counts the
problem clusters left on the ranking side of identify's split only (:func:`arithmech.data.splits.side` ``"rank"``):
the evaluation side's can never be X_r.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from arithmech.core.stats import bonferroni_z, wilson_interval
from arithmech.data.answers import MIN_CLUSTERS
from arithmech.data.floors import population, problem_floor
from arithmech.data.splits import cluster, problem_cluster, side
from arithmech.identify.config import CONTROL_FLOOR

VERSION = 7
MAX_MORE = 100_000  # problems_to_decide: the most problem clusters it looks for before saying none decides it


def sampled_estimates(f: dict) -> int:
    """How many estimates of :func:`~arithmech.data.floors.problem_floor`'s result ``f`` carry sampling error: every
    grouping of every reading but the exact ``population`` one."""
    return sum(len(t) for on, t in f["table"].items() if on != "population")


def reading_intervals(f: dict, m: int | None = None) -> dict[str, list[float]]:
    """Per reading of :func:`~arithmech.data.floors.problem_floor`'s result ``f``: ``[low, high]`` of its highest
    grouping's accuracy, simultaneous with every other reading's (version 5). The ``population`` reading is exact
    (the draw population is enumerated: a point); every grouping of the sampled readings (``problems``, ``prompts``)
    gets its Wilson interval with the reading's effective number of problem clusters (``f["n_eff"]``) as the trials at
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
    version 5: the highest lower and upper ends over the readings, the population's point included), "xr_interval"
    (version 7: the same over the X_r readings only, ``problems`` and ``prompts``), "upper_on" (the reading whose upper
    end is highest), "n_eff" (the deciding reading's effective number of problem clusters), "readings" ({on:
    [accuracy, n_eff, low, high]}), "by", "on", "n", "problems" (distinct ordered problems), "clusters" (distinct
    problem clusters: the trials), "loo" (the leave-one-problem-out lower bound), "table" and "n_eff_by" (every
    grouping's accuracy and every reading's effective clusters, for :func:`floor_at`), "rank_clusters" (the ranking
    side's drawable clusters and the kept ones)}``."""
    f = problem_floor(samples)
    top = max(Counter(s.answer for s in samples).values()) if samples else 0
    loo = max((v for t in f["loo"].values() for v in t.values()), default=float("nan"))
    ci = reading_intervals(f) if f["problems"] else {}
    up = max(ci, key=lambda on: ci[on][1]) if ci else ""
    lo, hi = (max(c[0] for c in ci.values()), ci[up][1]) if ci else (float("nan"),) * 2
    xr = [c for on, c in ci.items() if on != "population"]
    xr_lo, xr_hi = (max(c[0] for c in xr), max(c[1] for c in xr)) if xr else (float("nan"),) * 2
    return {
        "majority": top / len(samples) if samples else float("nan"),
        "conditioned": f["accuracy"],
        "interval": [lo, hi],
        "xr_interval": [xr_lo, xr_hi],
        "upper_on": up,
        "n_eff": f["n_eff"].get(f["on"], float("nan")),
        "readings": {on: [max(f["table"][on].values()), f["n_eff"][on], *ci[on]] for on in ci},
        "by": f["by"],
        "on": f["on"],
        "n": f["n"],
        "problems": f["problems"],
        "clusters": f["clusters"],
        "loo": loo,
        "table": f["table"],
        "n_eff_by": f["n_eff"],
        "rank_clusters": len({cluster(s) for s in samples} | _drawable(samples)),
    }


def _drawable(samples: Sequence) -> set:
    """The problem clusters on the ranking side of identify's split (:func:`arithmech.data.splits.side` ``"rank"``)
    that the draw of ``samples`` can give (the draw population's, weight above 0): the only clusters X_r can hold."""
    if not samples:
        return set()
    return {c for c in {problem_cluster(p) for p, w in population(samples)[0].items() if w > 0} if side(c) == "rank"}


def floor_at(entry: dict, m: int) -> tuple[float, float, float]:
    """A :func:`floor_entry`'s floor and its interval with its estimates in a family of ``m`` (each sampled grouping
    at 1 − 0.05 / m): ``(floor, highest lower end, highest upper end)``."""
    ci = reading_intervals({"table": entry["table"], "n_eff": entry["n_eff_by"]}, m)
    return entry["conditioned"], max(c[0] for c in ci.values()), max(c[1] for c in ci.values())


def verdict(lo: float, hi: float, bound: float = CONTROL_FLOOR) -> str:
    """The control on a floor's interval (version 6; version 7 reads ``lo`` from the X_r readings only, ``hi`` with the
    population's point): ``"passes"`` where ``hi < bound``, ``"fails"`` where ``lo >= bound`` (guessable), else
    ``"undecided"`` (the interval straddles the bound; NaN ends: undecided)."""
    return "passes" if hi < bound else "fails" if lo >= bound else "undecided"


def _clusters(entry: dict) -> int:
    """A :func:`floor_entry`'s number of problem clusters (an entry from before version 7: its problems)."""
    return entry.get("clusters", entry.get("problems", 0))


def _scaled(entry: dict, more: int) -> tuple[float, float]:
    """What :func:`verdict` reads of a :func:`floor_entry` were its problem clusters ``more`` more, drawn alike: every
    sampled reading's effective clusters scaled by ``(clusters + more) / clusters``, its accuracies and the family
    size kept; ``(the X_r readings' highest lower end, the highest upper end with the population's point)``."""
    p = _clusters(entry)
    n_eff = {on: n if on == "population" else n * (p + more) / p for on, n in entry["n_eff_by"].items()}
    m = sum(len(t) for on, t in entry["table"].items() if on != "population")
    ci = reading_intervals({"table": entry["table"], "n_eff": n_eff}, m)
    return max(c[0] for on, c in ci.items() if on != "population"), max(c[1] for c in ci.values())


def problems_to_decide(entry: dict, bound: float = CONTROL_FLOOR, limit: int = MAX_MORE) -> int | None:
    """How many more problem clusters would decide an undecided :func:`floor_entry` (0 where it is decided): the
    fewest ``k`` for which :func:`verdict` of :func:`_scaled` ``(entry, k)`` is not ``"undecided"`` — its readings'
    accuracies held, each sampled reading's effective clusters grown in proportion. Both ends move monotonically
    with ``k`` (a Wilson interval narrows round a fixed accuracy), so ``k`` is found by doubling then bisection.
    ``None`` where ``limit`` more do not decide it (a reading at the bound itself never does, nor a population point
    at or above it while the X_r readings lie below)."""
    decided = lambda k: verdict(*_scaled(entry, k), bound) != "undecided"
    if not _clusters(entry) or decided(0):
        return 0
    hi = 1
    while not decided(hi):
        if hi >= limit:
            return None
        hi = min(2 * hi, limit)
    lo = hi // 2  # not decided at lo (or lo = 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if decided(mid) else (mid, hi)
    return hi


def evidence_status(samples: Sequence) -> str:
    """``"ok"`` where ``samples`` hold at least :data:`MIN_CLUSTERS` problem clusters (operation, unordered operand
    pair: :func:`arithmech.data.splits.cluster`), else ``"insufficient: n X_r from p problems < MIN_CLUSTERS"`` (p
    clusters) — what a table prints in its status column instead of "ok" for heads found on a handful of prompts
    (App. D's exponentiation: 4)."""
    p = len({cluster(s) for s in samples})
    return (
        "ok"
        if p >= MIN_CLUSTERS
        else f"insufficient: {len(samples)} X_r from {p} problem{'s' * (p != 1)} < {MIN_CLUSTERS}"
    )


def _reason(f: dict) -> str:
    """The floor, its interval and what decided it, as a task's control prints them."""
    lo, hi = f["interval"]
    r = f["readings"][f["upper_on"]]
    upper = (
        ""
        if f["upper_on"] == f["on"]
        else f"; upper end from the {f['upper_on']}: {r[0]:.0%} over {r[1]:.1f} effective clusters"
    )
    return (
        f"floor over distinct problems {f['conditioned']:.0%} [{lo:.0%}, {hi:.0%}] over {_clusters(f)} problem "
        f"clusters ({f['problems']} ordered problems; answer guessed from {f['by']}, counted over the {f['on']}: "
        f"{f['n_eff']:.1f} effective clusters{upper})"
    )


def _undecided(f: dict) -> str:
    """Why a task is undecided (version 7), with how many more problem clusters would decide it (and, where the
    ranking side's draw has fewer left, how many it has), and where the draw population's point alone reaches the
    bound, that the population alone would guess half."""
    k, left = problems_to_decide(f), f["rank_clusters"] - _clusters(f)
    more = (
        "no number of problem clusters decides it at these readings"
        if k is None
        else f"about {k} more problem cluster{'s' * (k != 1)} would decide it if its readings held"
        + (f" (the ranking side's draw has {left} more cluster{'s' * (left != 1)})" if k > left else "")
    )
    pop = f["readings"].get("population", [float("nan")])[0]
    alone = (
        f"; the draw population alone would guess half ({pop:.0%}), while its X_r readings' interval "
        f"[{f['xr_interval'][0]:.0%}, {f['xr_interval'][1]:.0%}] does not lie at or above {CONTROL_FLOOR:.0%}"
        if pop >= CONTROL_FLOOR
        else ""
    )
    return f"undecided on {_clusters(f)} problem clusters: {_reason(f)}, across {CONTROL_FLOOR:.0%}{alone}; {more}"


def task_control(samples: dict[str, list]) -> dict:
    """Each task's control on its X_r (version 7): ``{"version", "rule", "floors": {task: floor_entry}, "status":
    {task: one of STATUSES}, "failed": {task: why} (fails or insufficient), "undecided": {task: why},
    "insufficient": [tasks], "pooled": the tasks "all" pools}``. A task passes where its floor's interval lies below
    :data:`CONTROL_FLOOR`, fails where its X_r readings' interval lies at or above it, is undecided otherwise
    (:func:`verdict`), and is insufficient with fewer than :data:`MIN_CLUSTERS` problem clusters; "all" pools the
    tasks that pass, and where none does, pools them all and does not pass itself (fails where every task fails or is
    insufficient)."""
    floors, state, failed, undecided, insufficient = {}, {}, {}, {}, []
    for t, ss in samples.items():
        f = floors[t] = floor_entry(ss)
        if f["clusters"] < MIN_CLUSTERS:
            insufficient.append(t)
            state[t] = "insufficient"
            failed[t] = (
                f"insufficient: {f['n']} prompt{'s' * (f['n'] != 1)} from {f['clusters']} "
                f"problem cluster{'s' * (f['clusters'] != 1)} < {MIN_CLUSTERS}"
            )
            continue
        state[t] = verdict(f["xr_interval"][0], f["interval"][1])
        if state[t] == "fails":
            lo, hi = f["xr_interval"]
            failed[t] = (
                f"{_reason(f)}: its X_r readings' interval [{lo:.0%}, {hi:.0%}] lies at or above {CONTROL_FLOOR:.0%}"
            )
        elif state[t] == "undecided":
            undecided[t] = _undecided(f)
    pooled = [t for t in samples if state[t] == "passes"]
    if not pooled:
        pooled = list(samples)
        if len(samples) > 1:
            every = all(state[t] in ("fails", "insufficient") for t in samples)
            state["all"] = "fails" if every else "undecided"
            (failed if every else undecided)["all"] = (
                f"no task passes its control ({', '.join(f'{t} {state[t]}' for t in samples)}); all pools them all"
            )
    return {
        "version": VERSION,
        "rule": (
            f"a task passes when the simultaneous 95% interval of its floor over problem clusters on X_r "
            f"(data.floors.problem_floor: the draw population's guess from the operation, the carried digits and one "
            f"operand, per ordered problem; the population reading an exact point, every grouping of the X_r readings "
            f"a Wilson interval at 1 - 0.05/6 with Kish's effective number of the problem clusters it weighs as the "
            f"trials, a cluster's problems and prompts weighed as one unit) lies below {CONTROL_FLOOR}, fails when "
            f"the interval of its X_r readings lies at or above it, is undecided otherwise (it straddles the bound, or "
            f"only the draw population's point reaches it; not passed, with how many more problem clusters would "
            f"decide it), and is insufficient with fewer than {MIN_CLUSTERS} problem clusters "
            "(data.answers.MIN_CLUSTERS); a task that does not pass has its verdicts inconclusive and is left out of "
            "the pooled task all"
        ),
        "floors": floors,
        "status": state,
        "failed": failed,
        "undecided": undecided,
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
            "undecided": stored.get("undecided", {}),
        }
    return {**task_control(by), "recomputed": True, "stored_pooled": stored.get("pooled", tasks)}
