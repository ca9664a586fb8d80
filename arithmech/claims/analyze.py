"""The deciders of the claims about what the components do, for :mod:`arithmech.claims.rules`: which roles the
studied heads read and in which order heads and MLPs act (``analyze.json``, ``attention_baseline.csv``), and
whether the top components recover the counterfactual's effect on their own (``faithfulness.csv``).

Each decider takes a :class:`~arithmech.claims.evidence.Context` and returns ``(here, holds)``; a missing file
raises :class:`~arithmech.claims.evidence.Missing` (the claim is inconclusive).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from arithmech.claims.evidence import Context, Missing
from arithmech.core.names import components
from arithmech.core.names import stages as stage_layers
from arithmech.methods.attention import MIN_NONKEY
from arithmech.methods.faithfulness_rule import CANDIDATES, RULE_LEVEL, faithful_verdict

ROLES = ("operand", "operator")
N_BOOT_HEADS = 2000  # resamples of the other heads for the interval of their 95th percentile


def studied_heads(ctx: Context) -> tuple[list[tuple[int, int]], str]:
    """The heads the analyze claims are decided on, and where they come from: the paper's key heads of the primary
    task where there are any; else the share rule's (``key_heads.json``'s ``by_share``: the heads that carry the
    counterfactual's effect, issue #41), said so; else none."""
    kh, task = ctx.read("key_heads.json"), ctx.primary()[0]
    pick = lambda block: block.get("heads", []) if task == kh.get("task") else block.get("per_task", {}).get(task, [])
    paper = pick(kh) if task == kh.get("task") else kh.get("per_task", {}).get(task, [])
    if paper:
        return [(int(h["layer"]), int(h["head"])) for h in paper], "key heads"
    share = pick(kh.get("by_share") or {})
    if share:
        return (
            [(int(h["layer"]), int(h["head"])) for h in share],
            "the LD-ratio rule's key heads (key_heads.json's by_share; the paper's rule finds none)",
        )
    return [], "no key head under either rule"


def other_heads_p95(values: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """The 95th percentile of the other heads' values and its 95% interval, resampling the heads
    (:data:`N_BOOT_HEADS` resamples, seeded): a head is read against the whole interval, not one number."""
    rng = np.random.default_rng(seed)
    boot = np.percentile(rng.choice(values, size=(N_BOOT_HEADS, len(values)), replace=True), 95, axis=1)
    return float(np.percentile(values, 95)), float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))


def role_verdicts(roles: pd.DataFrame, heads: list[tuple[int, int]]) -> pd.DataFrame:
    """Per studied head and role of :data:`ROLES`: its END attention mass without the first position (± 2 SE over
    prompts) against the other heads' 95th percentile with its interval (:func:`other_heads_p95`): ``reads`` True
    when the head's lower end lies above the interval's upper end, False when its upper end lies below the lower
    end, None in between or with fewer than MIN_NONKEY other heads."""
    df = roles[(roles.task == "all") & roles.role.isin(ROLES)] if "task" in roles else roles[roles.role.isin(ROLES)]
    key = pd.Series([(int(l), int(h)) in set(heads) for l, h in zip(df.layer, df["head"])], index=df.index)
    out = []
    for role in ROLES:
        sel = df[(df.role == role)]
        base = sel.loc[~key[sel.index], "mass_nofirst"].to_numpy(float)
        base = base[np.isfinite(base)]
        p95, lo, hi = other_heads_p95(base) if len(base) else (np.nan,) * 3
        at = sel.set_index(["layer", "head"])
        for l, h in heads:
            v, se = float(at.loc[(l, h), "mass_nofirst"]), float(at.loc[(l, h), "se_nofirst"])
            reads = None if len(base) < MIN_NONKEY else True if v - 2 * se > hi else False if v + 2 * se < lo else None
            out.append(
                {
                    "name": f"{l}.{h}",
                    "role": role,
                    "value": v,
                    "se": se,
                    "p95": p95,
                    "p95_lo": lo,
                    "p95_hi": hi,
                    "n_other": len(base),
                    "reads": reads,
                }
            )
    return pd.DataFrame(out)


def attention_roles(ctx: Context):
    """Version 4 (issue #41): decided on the heads that carry the effect (:func:`studied_heads`), each head's
    attention against the other heads' 95th percentile with its interval (:func:`role_verdicts`), read from
    attention_roles.csv (every head's END attention by role)."""
    roles = ctx.read("attention_roles.csv")
    heads, source = studied_heads(ctx)
    if not heads:
        return f"{source}; nothing to analyze", None
    missing = [f"{l}.{h}" for l, h in heads if not ((roles.layer == l) & (roles["head"] == h)).any()]
    if missing:
        raise Missing(f"attention_roles.csv has no row for head(s) {', '.join(missing)}")
    v = role_verdicts(roles, heads)
    by = v.groupby("name", sort=False).reads.agg(
        lambda r: True if (r == True).any() else None if r.isna().any() else False
    )  # noqa: E712
    yes, maybe, n = int((by == True).sum()), int(by.isna().sum()), len(by)  # noqa: E712
    p95 = v.groupby("role").first()
    names = components(by[by == True].index)  # noqa: E712
    n_prompts = int(roles.n.max()) if "n" in roles else 0
    ops = ctx.read("analyze.json").get("operations", "all")  # a file before issue #41 item 5: all
    of = "every operation" if ops == "all" else f"the operations that passed identify's control ({', '.join(ops)})"
    here = (
        f"on {source}: {yes} of {n} heads read operands or the operator more than the {int(v.n_other.max())} "
        f"other heads ({names}); {maybe} inconclusive; other heads' 95th percentile: operand "
        f"{p95.loc['operand', 'p95']:.2f} [{p95.loc['operand', 'p95_lo']:.2f}, {p95.loc['operand', 'p95_hi']:.2f}], "
        f"operator {p95.loc['operator', 'p95']:.2f} [{p95.loc['operator', 'p95_lo']:.2f}, "
        f"{p95.loc['operator', 'p95_hi']:.2f}]; n = {n_prompts} prompts of {of}"
    )
    stale = other_operations(ctx)
    return (here + stale, None) if stale else (here, True if yes >= n / 2 else (False if yes + maybe < n / 2 else None))


def other_operations(ctx: Context) -> str:
    """Why analyze's files no longer decide (else ""): analyze ran on the operations that passed identify's control
    then (``analyze.json``'s ``operations``), and the control recomputed under its current version now pools others
    (the control's version 5 made a task uncertain, say): re-run analyze. Files from before ``--operations``
    (every operation) are read as they were."""
    ops = ctx.read("analyze.json").get("operations", "all")
    pooled = list(ctx.control().get("pooled") or [])
    if ops == "all" or not pooled or set(ops) == set(pooled):
        return ""
    return (
        f"; analyze ran on {', '.join(ops)}, and the control now pools {', '.join(pooled)} (re-run analyze "
        "--operations pooled)"
    )


def stages(ctx: Context):
    st = ctx.read("analyze.json").get("stages") or {}
    if "answer" not in st or "operands" not in st:
        raise Missing("analyze.json has no stages")
    here = f"operands {stage_layers(st['operands'])}, answer {stage_layers(st['answer'])}"
    stale = other_operations(ctx)
    return (here + stale, None) if stale else (here, st["answer"][1] >= st["operands"][1])


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
    """Version 7 (issue #41 item 4): the clipped and unclipped recovery in both directions, END top-n and the
    cross-position circuit, intervals Bonferroni-adjusted over the candidates
    (:func:`arithmech.methods.faithfulness_rule.faithful_verdict`)."""
    f = ctx.read("faithfulness.csv")
    task = ctx.primary()[0]  # the task the identify claims are decided on (issue #41)
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
