"""The circuits wing's claim, for :mod:`arithmech.claims.decide`: whether the top components recover the
counterfactual's effect on their own (``faithfulness.csv``), decided by
:func:`arithmech.methods.faithfulness_rule.faithful_verdict`. The decider takes a
:class:`~arithmech.claims.evidence.Context` and returns ``(here, holds)``; a missing file raises
:class:`~arithmech.claims.evidence.Missing` (the claim is inconclusive). The rule it decides is
:data:`CIRCUIT_FAITHFUL`.
"""

from __future__ import annotations

from arithmech.claims.controls import controlled
from arithmech.claims.evidence import Context, Missing
from arithmech.claims.rule import Rule
from arithmech.methods.faithfulness_rule import CANDIDATES, RULE_LEVEL, faithful_verdict


def _direction(c: dict, m: str) -> str:
    d = c.get(m)
    return (
        f"{m} {d['value']:.0%} [{d['lo']:.0%}, {d['hi']:.0%}] (unclipped {d['raw']:.0%} [{d['raw_lo']:.0%}, "
        f"{d['raw_hi']:.0%}], {d['over_one']:.0%} of prompts above 1; {d['n_used']} of {d['n_prompts']} prompts "
        f"used, {d['n_used_clusters']} problem clusters) vs random max {d['band_max']:.0%}, 95th percentile "
        f"{d['band_hi']:.0%}"
        if d
        else f"no {m}"
    )


RERUN = "python -m arithmech faithfulness --overwrite (with the file's parameters, run.json's steps.faithfulness)"


def circuit_faithful(ctx: Context):
    """Version 7: the clipped and unclipped recovery in both directions, END top-n and the
    cross-position circuit, intervals Bonferroni-adjusted over the candidates
    (:func:`arithmech.methods.faithfulness_rule.faithful_verdict`)."""
    f = ctx.faithfulness()
    task = ctx.primary()[0]  # the task the identify claims are decided on
    if not (f.task == task).any():
        raise Missing(f"faithfulness.csv has no rows of task {task}")
    r = faithful_verdict(f, task)
    if r["stale"]:
        raise Missing(
            f"faithfulness.csv was written before rule version 7 (missing: {', '.join(r['stale'])}; the "
            f"unclipped recovery and intervals at {RULE_LEVEL:.2%} cannot be recomputed from it): re-run " + RERUN
        )
    if r["best"] is None:
        raise Missing("faithfulness.csv has no noising (mean) or denoising rows")
    where = lambda c: (
        f"cross-position circuit ({c['components']})"
        if c["order"] == "operands"
        else f"top {c['n']} at END ({c['components']})"
    )
    cands = r["candidates"]
    n_ok, n_fail = sum(c["status"] is True for c in cands), sum(c["status"] is False for c in cands)
    gated = [c for c in cands if c["why"].startswith("cannot decide")]
    cross = [c for c in cands if c["order"] == "operands"]
    b = r["best"]
    here = (
        f"{where(b)}: {b['why']}; {_direction(b, 'noising')}; {_direction(b, 'denoising')}. {n_ok} of "
        f"{len(cands)} candidates faithful, {n_fail} fail, {len(gated)} cannot decide"
        + (f" ({gated[0]['why'][len('cannot decide: ') :]})" if gated else "")
    )
    if cross and cross[0] is not b:
        c = cross[0]
        here += f"; {where(c)}: {c['why']}; {_direction(c, 'noising')}; {_direction(c, 'denoising')}"
    elif not cross:
        here += "; no cross-position circuit in the file"
    return (
        here + f"; intervals at {RULE_LEVEL:.2%} (Bonferroni over {CANDIDATES} candidates); {int(f.n_prompts.iloc[0])} "
        f"evaluation prompts, {int(f.n_clusters.min())} problem clusters"
    ), r["holds"]


CIRCUIT_FAITHFUL = Rule(
    "circuit-faithful",
    "A small circuit keeps the answer when every other component is ablated and brings "
    "it back when patched into the counterfactual (beyond the paper)",
    "not measured in the paper (it knocks out heads; it does not run the circuit alone)",
    "a per-prompt recovery on evaluation-side prompts, (LD(run) − LD(baseline)) / (LD(X_r) − LD(baseline)), "
    "LD = logit(answer) − logit(X_c's answer), prompts whose own effect is not positive left out and counted; "
    "its mean over the used prompts clipped to [0, 1] and unclipped, each with a cluster-bootstrap interval at "
    "1 − 0.05/11 (Bonferroni over the 11 candidates), in both directions: noising (X_r, every other component "
    "ablated with reference-pool means; baseline: all ablated) and denoising (X_c with the circuit patched in "
    "from X_r; baseline: X_c). Candidates: the top-n components by effect rank at END for n ≤ 10, against ≥ 20 "
    "random circuits of n components outside the top n at END; and the cross-position circuit (the ≤ 5 heads "
    "attending most to the operands, above every head's 95th percentile, at the A, B, operator and END "
    "positions, plus the ≤ 5 first key heads at END; its noising ablates every other head at those positions, "
    "MLPs recomputed: its full effect is, as at END, the effect of the tokens before END, all of which reaches "
    "END through END's heads), against ≥ 20 random circuits of heads of the same layers at the same positions. "
    "A candidate decides only if in both directions at least half of its prompts are used, they ask at "
    "least 20 problem clusters and it has at least 20 random circuits. A deciding candidate is faithful iff in "
    "both directions its clipped interval lies at or above 80% and above the largest of its random circuits, "
    "and its unclipped interval lies at or below 120% (clipping alone cannot make it faithful); it fails iff in "
    "some direction its clipped interval lies entirely below 80% or reaches no higher than its random circuits' "
    "95th percentile, or its unclipped interval lies entirely above 120% (it over-recovers). Holds iff some "
    "candidate is faithful; does not hold iff every candidate, each of them measured, fails; inconclusive "
    "otherwise, or where faithfulness.csv is missing or lacks the unclipped recovery or intervals at the rule's "
    "level",
    version=12,
    decider=circuit_faithful,
    gate=controlled,
)
"""Beyond the paper, decided by :func:`arithmech.methods.faithfulness_rule.faithful_verdict` (bounded and unclipped,
both directions, across positions, adjusted over the candidates)."""
