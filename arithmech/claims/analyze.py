"""The deciders of the claims about what the components do, for :mod:`arithmech.claims.rules`: which roles the
studied heads read and in which order heads and MLPs act (``analyze.json``, ``attention_baseline.csv``), and
whether the top components recover the counterfactual's effect on their own (``faithfulness.csv``).

Each decider takes a :class:`~arithmech.claims.evidence.Context` and returns ``(here, holds)``; a missing file
raises :class:`~arithmech.claims.evidence.Missing` (the claim is inconclusive).
"""
from __future__ import annotations

from arithmech.claims.evidence import Context, Missing
from arithmech.core.names import components, stages as stage_layers
from arithmech.methods.faithfulness import smallest_faithful


def attention_roles(ctx: Context):
    b = ctx.read("attention_baseline.csv")
    b = b[(b.measure == "mass") & (b.view == "without first") & b.role.isin(["operand", "operator"])]
    if b.empty:
        raise Missing("attention_baseline.csv has no operand/operator rows")
    best = b.groupby("name").verdict.agg(lambda v: "holds" if (v == "holds").any() else
                                         "inconclusive" if (v == "inconclusive").any() else "does not hold")
    yes, maybe, n = int((best == "holds").sum()), int((best == "inconclusive").sum()), len(best)
    names = components(best[best == "holds"].index)
    here = (f"{yes} of {n} heads read operands or the operator more than the {int(b.n_nonkey.max())} other heads "
            f"({names}); {maybe} inconclusive; n = {int(b.n.max())} prompts")
    source = ctx.read("analyze.json").get("heads_from", "key heads")
    if source != "key heads":                                    # no key head to test: the claim is about them
        return f"no key head to test; measured on the {source.replace(' (no key head)', '')}: {here}", None
    return here, True if yes >= n / 2 else (False if yes + maybe < n / 2 else None)


def stages(ctx: Context):
    st = ctx.read("analyze.json").get("stages") or {}
    if "answer" not in st or "operands" not in st:
        raise Missing("analyze.json has no stages")
    return f"operands {stage_layers(st['operands'])}, answer {stage_layers(st['answer'])}", st["answer"][1] >= st["operands"][1]


def circuit_faithful(ctx: Context):
    f = ctx.read("faithfulness.csv")
    task = "all" if (f.task == "all").any() else f.task.iloc[0]
    r = smallest_faithful(f, task)
    if r["n"] is None:
        raise Missing("faithfulness.csv has no noising rows with mean ablation")
    n_p = int(f.n_prompts.iloc[0])
    return (f"top {r['n']} ({r['components']}): {r['share']:.0%} [{r['lo']:.0%}, {r['hi']:.0%}] of the effect; random "
            f"band's 95th percentile {r['band_hi']:.0%}; {n_p} evaluation prompts"), r["holds"]
