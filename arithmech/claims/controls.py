"""The controls' deciders for :mod:`arithmech.claims.rules`: the answer-token floor, whether mean ablation removes
the task (two-sided, issue #41), and the wrapper that makes the identify claims inconclusive where their task fails
its control or holds too few problems (the control recomputed from ``prompts.jsonl``:
:meth:`arithmech.claims.evidence.Context.control`).
"""
from __future__ import annotations

from typing import Callable

import pandas as pd

from arithmech.claims.evidence import Context, Missing, cluster_interval, end_rows
from arithmech.core.stats import wilson_interval
from arithmech.methods.knockout_tables import floor_of
from arithmech.steps.config import MIN_PROBLEMS


def answer_token_floor(ctx: Context):
    t = ctx.read("answer_tokens.csv")
    t = t[(t.template == "all") & (t.n > 0)]
    if t.empty:
        raise Missing("answer_tokens.csv has no kept prompts")
    worst = t.loc[t.top_share.idxmax()]
    k, n = int(round(worst.top_share * worst.n)), int(worst.n)
    lo, hi = wilson_interval(k, n)
    here = (f"largest share: {worst.top_token!r} on {k}/{n} = {k / n:.0%} [{lo:.0%}, {hi:.0%}] of task "
            f"{worst.task}'s kept prompts ({worst.answer_token} token)")
    return here, True if hi < 1 / 3 else (False if lo > 1 / 3 else None)


def _ablation_floor(ctx: Context, task: str, s: pd.DataFrame) -> tuple[float, str]:
    """The floor the every-head-out accuracy is read against: the higher of the knockout prompts' majority floor
    and the task's floor over distinct problems (the control's, recomputed from prompts.jsonl); a control not
    recomputed (a template-pair file): the file's own floors (:func:`floor_of`)."""
    c = ctx.control()
    f = (c.get("floors") or {}).get(task) if c.get("recomputed") else None
    if task == "all" and c.get("recomputed"):
        f = {"conditioned": max(c["floors"][t]["conditioned"] for t in c["pooled"])}
    if f is None:
        return floor_of(s), "the higher of the majority and the conditioned floor"
    return (max(float(s.loc["majority-floor", "accuracy"]), f["conditioned"]),
            "the higher of the majority floor and the floor over distinct problems")


def ablation_removes(ctx: Context):
    """Two-sided (version 3): the ablated accuracy should fall to what a model without the task's information
    scores — between a uniform guess among the task's answer tokens (a model that still writes an answer but
    knows nothing) and the floor (the best such guess). Above the floor it removes too little; wholly below the
    uniform guess it removes more than the task (over-ablation: the ablated model is pushed off its answers)."""
    ko = end_rows(ctx)
    s = ko[ko.kind == "sanity"] if "kind" in ko else ko.iloc[:0]
    if s.empty:
        raise Missing("knockout.csv has no sanity rows (re-run identify)")
    task, s = s.task.iloc[0], s.set_index("order")             # the primary task's rows (_end_rows)
    heads, (floor, which) = s.loc["all-heads-out"], _ablation_floor(ctx, task, s)
    lo, hi, what = cluster_interval(heads)
    tokens = {p.answer for p in ctx.samples()}
    chance = 1 / len(tokens) if tokens else 0.0
    here = (f"every head out: {heads.accuracy:.0%} [{lo:.0%}, {hi:.0%}] ({what}) vs floor {floor:.0%} "
            f"({which}) and a uniform guess among {len(tokens)} answer tokens {chance:.0%}; n = {int(heads.n)} prompts")
    why = _uncontrolled(ctx, task)
    m = getattr(heads, "n_clusters", None)
    if not why and m is not None and m == m and int(m) < MIN_PROBLEMS:
        why = f"; insufficient: {int(m)} problem clusters < {MIN_PROBLEMS}"
    if why:
        return here + why, None
    if lo > floor:
        return here + "; removes too little (above the floor)", False
    if hi < chance:
        return here + "; over-ablation (below a uniform guess)", False
    return here, True


def controlled(decide: Callable[[Context], tuple[str, bool | None]]) -> Callable[[Context], tuple[str, bool | None]]:
    """``decide``, made inconclusive where identify's primary task (``key_heads.json``'s ``task``) fails its
    control (:data:`~arithmech.steps.config.CONTROL_FLOOR`: its answer is guessable from what the prompt carries)."""
    def decider(ctx: Context):
        here, holds = decide(ctx)
        why = _uncontrolled(ctx, ctx.primary()[0])
        return (here + why, None) if why else (here, holds)
    return decider


def _uncontrolled(ctx: Context, task: str) -> str:
    """Why ``task``'s verdicts cannot be decided under the control (recomputed from prompts.jsonl:
    :meth:`~arithmech.claims.evidence.Context.control`), else ""."""
    task_, mixed = ctx.primary()
    if mixed:
        return f"; {mixed}"
    c = ctx.control()
    failed = c.get("failed", {})
    if task in failed:
        return f"; task {task} fails its control: {failed[task]}"
    if task != task_ and task_ in failed:
        return f"; task {task_} fails its control: {failed[task_]}"
    return ""
