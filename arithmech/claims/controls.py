"""The controls' deciders for :mod:`arithmech.claims.decide`: the answer-token floor, whether mean ablation removes
the task (two-sided), and the wrapper that makes the identify claims inconclusive where their task fails
its control or holds too few problems (the control recomputed from ``prompts.jsonl``:
:meth:`arithmech.claims.evidence.Context.control`). The two controls' rules are :data:`CONTROLS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pandas as pd

from arithmech.claims.evidence import Context, Missing, cluster_interval, end_rows
from arithmech.claims.rule import Rule
from arithmech.core.stats import bonferroni_z, wilson_interval
from arithmech.data.answers import MIN_CLUSTERS
from arithmech.data.floors import not_passed, status
from arithmech.data.pairs import interleave
from arithmech.identify.config import CONTROL_FLOOR
from arithmech.methods.ablation.run import FLOORS, LAYER_MATCHED
from arithmech.steps.control import floor_at, sampled_estimates


def answer_token_floor(ctx: Context):
    t = ctx.answer_tokens()
    t = t[(t.template == "all") & (t.n > 0)]
    if t.empty:
        raise Missing("answer_tokens.csv has no kept prompts")
    worst = t.loc[t.top_share.idxmax()]
    k, n = int(round(worst.top_share * worst.n)), int(worst.n)
    lo, hi = wilson_interval(k, n)
    here = (
        f"largest share: {worst.top_token!r} on {k}/{n} = {k / n:.0%} [{lo:.0%}, {hi:.0%}] of task "
        f"{worst.task}'s kept prompts ({worst.answer_token} token)"
    )
    return here, True if hi < 1 / 3 else (False if lo > 1 / 3 else None)


def _ablation_floor(ctx: Context, task: str, s: pd.DataFrame) -> tuple[float, tuple[float, float], str]:
    """The floor the every-head-out accuracy is read against, with a simultaneous 95% interval (version 8): the higher
    of the knockout prompts' majority floor (Wilson over its problem clusters where the file counts them,
    :func:`cluster_interval`) and the floor over distinct problems (the control's, recomputed from prompts.jsonl:
    :func:`arithmech.steps.control.floor_at`). Every sampled estimate behind them — the majority row, each grouping
    of each task's sampled readings — is at level 1 − 0.05 / m for their number m, so with all covering the floor
    lies between the highest lower and the highest upper end (version 7 read [the highest lower end, the highest
    upper end] of 95% intervals, which is not a 95% interval of their maximum). Task ``all``: the floor over
    distinct problems of the pooled prompts is the mixture ``Σ w_t floor_t`` (the guess knows the operation, so it
    is each task's own), ``w_t`` each pooled task's share of the ``all`` knockout prompts (round-robin over the
    tasks' knockout prompts, :func:`shares`), its interval ``Σ w_t [low_t, high_t]`` (version 7: the highest task's
    floor, which overstates a mixture's). A control not recomputed (a template-pair file): the file's own floor rows
    (:func:`floor_of`), each with its interval."""
    c = ctx.control()
    rec = bool(c.get("recomputed"))
    tasks = (list(c["pooled"]) if task == "all" else [task]) if rec else []
    rows = ["majority-floor"] if rec else [o for o in FLOORS if o in s.index]
    m = len(rows) + sum(sampled_estimates(c["floors"][t]) for t in tasks)
    z = bonferroni_z(m)
    ests: list[tuple[float, ...]] = [(float(s.loc[o, "accuracy"]), *cluster_interval(s.loc[o], z)[:2]) for o in rows]
    if tasks:
        w = shares(ctx, tasks) if task == "all" else {task: 1.0}
        per = {t: floor_at(c["floors"][t], m) for t in tasks}
        ests.append(tuple(sum(w[t] * per[t][i] for t in tasks) for i in range(3)))
    which = (
        "the higher of the majority and the conditioned floor"
        if not rec
        else "the higher of the majority floor and the floor over distinct problems"
        + (" (the pooled tasks' mixture)" if task == "all" else "")
    )
    return max(e[0] for e in ests), (max(e[1] for e in ests), max(e[2] for e in ests)), which


def shares(ctx: Context, tasks: list[str]) -> dict[str, float]:
    """Each pooled task's share of the ``all`` knockout prompts: identify interleaves the tasks' knockout prompts
    round-robin and keeps the first ``n`` (the ``all`` rows' n); each task's count is its own sanity rows' n."""
    ko = ctx.knockout()
    ko = ko[(ko.kind == "sanity") & (ko.order == "nothing-out")]
    if "positions" in ko:
        ko = ko[ko.positions == ko.positions.iloc[0]]
    n = {t: int(ko[ko.task == t].n.iloc[0]) if (ko.task == t).any() else 0 for t in tasks}
    total = int(ko[ko.task == "all"].n.iloc[0]) if (ko.task == "all").any() else sum(n.values())
    took = Counter(interleave([[t] * n[t] for t in tasks])[:total])  # identify's own round-robin
    got = sum(took.values())
    return {t: took[t] / got if got else 1 / len(tasks) for t in tasks}


def ablation_removes(ctx: Context):
    """Two-sided against the floor's interval (version 5): the ablated accuracy should fall to what a model without
    the task's information scores — between a uniform guess among the task's answer tokens (a model that still
    writes an answer but knows nothing) and the floor (the best such guess). It removes too little only where its
    whole interval lies above the floor's upper end (the floor is itself an estimate, from a few dozen problems);
    wholly below the uniform guess it removes more than the task (over-ablation: the ablated model is pushed off its
    answers); it reaches the floor where its interval lies at or below the floor's upper end and reaches up to the
    uniform guess (version 7; version 6 said so wherever the two intervals overlapped, an interval straddling the
    floor's upper end included); an interval straddling the floor's upper end is inconclusive."""
    ko = end_rows(ctx)
    s = ko[ko.kind == "sanity"] if "kind" in ko else ko.iloc[:0]
    if s.empty:
        raise Missing("knockout.csv has no sanity rows (re-run identify)")
    task, s = s.task.iloc[0], s.set_index("order")  # the primary task's rows (_end_rows)
    heads, (floor, (flo, fhi), which) = s.loc["all-heads-out"], _ablation_floor(ctx, task, s)
    lo, hi, what = cluster_interval(heads)
    tokens = {p.answer for p in ctx.samples()}
    chance = 1 / len(tokens) if tokens else 0.0
    here = (
        f"every head out: {heads.accuracy:.0%} [{lo:.0%}, {hi:.0%}] ({what}) vs floor {floor:.0%} [{flo:.0%}, "
        f"{fhi:.0%}] ({which}) and a uniform guess among {len(tokens)} answer tokens {chance:.0%}; n = "
        f"{int(heads.n)} prompts"
    )
    why = _uncontrolled(ctx, task)
    m = getattr(heads, "n_clusters", None)
    if not why and m is not None and m == m and int(m) < MIN_CLUSTERS:
        why = f"; insufficient: {int(m)} problem clusters < {MIN_CLUSTERS}"
    if why:
        return here + why, None
    if lo > fhi:
        return here + "; removes too little (above the floor's interval)", False
    if hi < chance:
        return here + "; over-ablation (below a uniform guess)", False
    if hi > fhi:
        return here + "; straddles the floor's upper end (cannot say it reaches the floor)", None
    return here, True


def layer_matched(ctx: Context, k: int, key, here: str, holds: bool | None) -> tuple[str, bool | None]:
    """knockout-key-vs-random's second control (version 9): the top ``k``'s accuracy (the row ``key``)
    against random head sets with as many heads in each layer (knockout.csv's layer-matched rows at ``k``), by the
    same test as the unmatched draws (below the lowest draw; its interval, over the problem clusters, below their
    5th percentile; does not hold: at or above the lowest draw with its interval's lower end at or above their 5th
    percentile, version 11); the claim holds only where both hold, does not where either does not. A file without
    layer-matched rows (made before them): "not run", and the unmatched verdict ``holds`` stands."""
    ko = end_rows(ctx)
    lm = ko[(ko.kind == "head") & (ko.k == k) & (ko.order == LAYER_MATCHED)] if len(ko) else ko
    if lm.empty:
        return here + "; layer-matched random heads: not run", holds
    acc, p5 = float(key.accuracy), float(lm.accuracy.quantile(0.05))
    lo, hi = cluster_interval(key)[:2] if "ci_high" in key else (acc, acc)
    own = (False if lo >= p5 else None) if acc >= lm.accuracy.min() else (True if hi < p5 else None)
    here += (
        f"; layer-matched random heads: mean {lm.accuracy.mean():.0%} (lowest {lm.accuracy.min():.0%}, 5th "
        f"percentile {p5:.0%}, {len(lm)} draws)"
    )
    return here, False if False in (holds, own) else (True if holds is True and own is True else None)


def controlled(decide: Callable[[Context], tuple[str, bool | None]]) -> Callable[[Context], tuple[str, bool | None]]:
    """``decide``, made inconclusive where identify's primary task (``key_heads.json``'s ``task``) fails its
    control (:data:`~arithmech.identify.config.CONTROL_FLOOR`: its answer is guessable from what the prompt carries)."""

    def decider(ctx: Context):
        here, holds = decide(ctx)
        why = _uncontrolled(ctx, ctx.primary()[0])
        return (here + why, None) if why else (here, holds)

    return decider


def _uncontrolled(ctx: Context, task: str) -> str:
    """Why ``task``'s verdicts cannot be decided under the control (recomputed from prompts.jsonl:
    :meth:`~arithmech.claims.evidence.Context.control`), else "": the task, or the primary one, does not pass it
    (fails, is undecided or insufficient: :func:`arithmech.data.floors.not_passed`)."""
    task_, mixed = ctx.primary()
    if mixed:
        return f"; {mixed}"
    c = ctx.control()
    out = not_passed(c)
    for t in dict.fromkeys((task, task_)):
        if t in out:
            word = "fails its control" if status(c, t) == "fails" else "does not pass its control"
            return f"; task {t} {word}: {out[t]}"
    return ""


CONTROLS: tuple[Rule, ...] = (
    Rule(
        "answer-token-floor",
        "No single answer token covers the task (control)",
        "not reported (the paper's {C} is the answer's first token)",
        "on the kept prompts of each task, the share of the most frequent answer token — the accuracy of always "
        "answering it — has its Wilson interval below 1/3 (holds), above 1/3 (does not hold), else inconclusive",
        version=1,
        decider=answer_token_floor,
    ),
    Rule(
        "ablation-removes-information",
        "Mean ablation of every head removes the task (control)",
        "mean ablation over counterfactual data (§4.1)",
        "holds iff, at END, the Wilson interval of the accuracy with every head mean-ablated lies at or below the "
        "upper end of the floor's simultaneous 95% interval — the floor is the higher of the majority floor "
        "(always answering the most frequent answer token; Wilson over the knockout prompts' problem clusters) and "
        "the floor over distinct problems (the draw population's most probable answer token given the operation, "
        "the carried digits and one operand; the control's; task all: the pooled tasks' mixture by their share of "
        "the prompts), every sampled estimate at 1 − 0.05/m for their number m, its interval [the higher lower "
        "end, the higher upper end] — and reaches up to a uniform guess among the task's answer tokens; does not "
        "hold iff it lies entirely above the floor's upper end (removes too little) or entirely below the uniform "
        "guess (over-ablation: more than the task removed); inconclusive where it straddles the floor's upper end; the "
        "ablated interval is over the problem clusters where knockout.csv counts them (as if each problem's prompts "
        "were one trial); inconclusive for a task that does not pass its control (the simultaneous 95% interval of "
        f"its floor over problem clusters on X_r reaches {CONTROL_FLOOR}: it fails where its X_r readings' interval "
        "lies at or above it, is undecided otherwise) or has fewer than "
        f"{MIN_CLUSTERS} problem clusters, and with fewer than {MIN_CLUSTERS} problem clusters among the knockout "
        "prompts",
        version=11,
        decider=ablation_removes,
    ),
)
"""Not claims of the paper, but conditions without which its claims cannot be read."""
