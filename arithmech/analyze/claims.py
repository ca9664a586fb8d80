"""Analyze's claims, for :mod:`arithmech.claims.decide`: whether the studied heads read the operands, whether any of
them reads the operator (two rules, each said on its own), and in which order heads and MLPs act
(``attention_roles.csv``, ``analyze.json``).

Each decider takes a :class:`~arithmech.claims.evidence.Context` and returns ``(here, holds)``; a missing file
raises :class:`~arithmech.claims.evidence.Missing` (the claim is inconclusive). The rules they decide are
:data:`ANALYZE`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from arithmech.claims.controls import controlled
from arithmech.claims.evidence import Context, Missing
from arithmech.claims.rule import Rule
from arithmech.core.names import components
from arithmech.data.answers import MIN_CLUSTERS
from arithmech.methods.attention import MIN_NONKEY

ROLES = ("operand", "operator")
N_BOOT_HEADS = 2000  # resamples of the other heads for the interval of their 95th percentile


def studied_heads(ctx: Context) -> tuple[list[tuple[int, int]], str]:
    """The heads the analyze claims are decided on, and where they come from: the paper's key heads of the primary
    task where there are any; else the share rule's (``key_heads.json``'s ``by_share``: the heads that carry the
    counterfactual's effect), said so; else none."""
    kh, task = ctx.key_heads(), ctx.primary()[0]
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


def role_verdicts(roles: pd.DataFrame, heads: list[tuple[int, int]], which: tuple[str, ...] = ROLES) -> pd.DataFrame:
    """Per studied head and role of ``which`` (:data:`ROLES` by default): its END attention mass without the first
    position (± 2 SE over prompts) against the other heads' 95th percentile with its interval
    (:func:`other_heads_p95`, seeded per role): ``reads`` True when the head's lower end lies above the interval's
    upper end, False when its upper end lies below the lower end, None in between or with fewer than MIN_NONKEY
    other heads."""
    df = roles[(roles.task == "all") & roles.role.isin(which)] if "task" in roles else roles[roles.role.isin(which)]
    key = pd.Series([(int(l), int(h)) in set(heads) for l, h in zip(df.layer, df["head"])], index=df.index)
    out = []
    for role in which:
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


ROLE_WORDS = {"operand": "the operands", "operator": "the operator"}


def role_reading(ctx: Context, role: str) -> tuple[str, tuple[int, int, int] | None, str]:
    """``(here, (yes, maybe, n), stale)`` of one role on the studied heads (:func:`studied_heads`): how many of the
    ``n`` heads read ``role`` more than the other heads (:func:`role_verdicts`), how many cannot be told, the
    sentence that says so with the other heads' interval and the prompts, and why analyze's files no longer decide
    (:func:`other_operations`, else ""). The counts are None where no head is studied."""
    roles = ctx.attention_roles()
    heads, source = studied_heads(ctx)
    if not heads:
        return f"{source}; nothing to analyze", None, ""
    missing = [f"{l}.{h}" for l, h in heads if not ((roles.layer == l) & (roles["head"] == h)).any()]
    if missing:
        raise Missing(f"attention_roles.csv has no row for head(s) {', '.join(missing)}")
    v = role_verdicts(roles, heads, (role,))
    reads = v.set_index("name").reads
    yes, maybe, n = int((reads == True).sum()), int(reads.isna().sum()), len(reads)  # noqa: E712
    first = v.iloc[0]
    n_prompts = int(roles.n.max()) if "n" in roles else 0
    ops = ctx.analyze_summary().get("operations", "all")  # an older file without the field: all
    of = "every operation" if ops == "all" else f"the operations that passed identify's control ({', '.join(ops)})"
    here = (
        f"on {source}: {yes} of {n} heads read {ROLE_WORDS[role]} more than the {int(first.n_other)} other heads "
        f"({components(reads[reads == True].index)}); {maybe} inconclusive; other heads' 95th percentile "  # noqa: E712
        f"{first.p95:.2f} [{first.p95_lo:.2f}, {first.p95_hi:.2f}]; n = {n_prompts} prompts of {of}"
    )
    return here, (yes, maybe, n), other_operations(ctx)


def reads_operands(ctx: Context):
    """Version 8: the operand half of the earlier attention-roles rule, on the heads that carry the effect
    (:func:`studied_heads`): holds iff at least half of them read the operands (:func:`role_verdicts`)."""
    here, counts, stale = role_reading(ctx, "operand")
    if counts is None or stale:
        return here + stale, None
    yes, maybe, n = counts
    return here, True if yes >= n / 2 else (False if yes + maybe < n / 2 else None)


def reads_operator(ctx: Context):
    """Version 1: the operator half, on the same heads: holds iff at least one of them reads the operator
    (:func:`role_verdicts`), does not hold iff none can."""
    here, counts, stale = role_reading(ctx, "operator")
    if counts is None or stale:
        return here + stale, None
    yes, maybe, _ = counts
    return here, True if yes >= 1 else (False if yes + maybe == 0 else None)


def other_operations(ctx: Context) -> str:
    """Why analyze's files no longer decide (else ""): analyze ran on the operations that passed identify's control
    then (``analyze.json``'s ``operations``), and the control recomputed under its current version now pools others
    (the control's version 5 made a task uncertain, say): re-run analyze. Files from before ``--operations``
    (every operation) are read as they were."""
    ops = ctx.analyze_summary().get("operations", "all")
    pooled = list(ctx.control().get("pooled") or [])
    if ops == "all" or not pooled or set(ops) == set(pooled):
        return ""
    return (
        f"; analyze ran on {', '.join(ops)}, and the control now pools {', '.join(pooled)} (re-run analyze "
        "--operations pooled)"
    )


def knots_text(k: dict) -> str:
    """``"21 [19, 23] – 24 [22, 25] – 25 [24, 27]"``: each knot of a curve with its interval."""
    return " – ".join(f"{x} [{lo:.0f}, {hi:.0f}]" for x, lo, hi in zip(k["knots"], k["lo"], k["hi"]))


def specific_text(sp: dict) -> str:
    """The answer- and operand-specific stages of ``analyze.json``'s ``specific_stages`` in one line: each curve's
    knots with their intervals, and the interval of the answer inflection minus the operands'."""
    d = sp["difference"]
    return (
        f"operand-specific {knots_text(sp['operands'])}, answer-specific {knots_text(sp['answer'])}; answer − operands "
        f"inflection {d['value']:+d} layers [{d['lo']:+.0f}, {d['hi']:+.0f}] (95% over {sp['clusters']} problem "
        f"clusters, {sp['n_boot']} resamples)"
    )


def stages(ctx: Context):
    """Version 5: the inflections of the answer- and operand-specific curves, each minus its matched baseline, and the
    interval of their difference over problem clusters (``analyze.json``'s ``specific_stages``)."""
    sp = ctx.analyze_summary().get("specific_stages")
    if not sp:
        raise Missing("analyze.json has no answer-specific stages (a run before rule version 5): re-run analyze")
    d, here = sp["difference"], specific_text(sp)
    stale = other_operations(ctx)
    if stale:
        return here + stale, None
    if sp["clusters"] < MIN_CLUSTERS:
        return here + f"; fewer than {MIN_CLUSTERS} problem clusters", None
    return here, True if d["lo"] >= 0 else False if d["hi"] < 0 else None


ANALYZE: tuple[Rule, ...] = (
    Rule(
        "attention-roles",
        "The key heads read the operands more than the other heads",
        "heads 13.11 and 12.22 read the operands {A} and {B} (Fig. 5; its operator heads: the next claim)",
        "decided on the heads that carry the effect: the paper's key heads, or where its rule finds none the share "
        "rule's key heads (said so); a head reads the operands when its END attention mass on them (first position "
        "excluded, rows renormalised) minus two standard errors lies above the upper end of the 95% interval of "
        "the other heads' 95th percentile (the other heads resampled), and does not when its mass plus two "
        "standard errors lies below the lower end; holds iff at least half of the analysed heads read the "
        "operands; does not hold iff fewer than half could (counting the inconclusive ones too); inconclusive "
        "otherwise, and without key heads under either rule; measured on the prompts of the operations that pass "
        "identify's control, where the heads were ranked",
        version=10,
        decider=reads_operands,
        gate=controlled,
    ),
    Rule(
        "attention-reads-operator",
        "Some key heads read the operator more than the other heads",
        "heads 14.2 and 11.8 read the operator ('+', '-', 'plus', 'div'; Fig. 5, Fig. 16)",
        "decided on the same heads as the operand claim (the paper's key heads, or where its rule finds none the "
        "share rule's, said so); a head reads the operator when its END attention mass on the operator tokens "
        "(first position excluded, rows renormalised) minus two standard errors lies above the upper end of the "
        "95% interval of the other heads' 95th percentile (the other heads resampled), and does not when its mass "
        "plus two standard errors lies below the lower end; holds iff at least one analysed head reads the "
        "operator (the paper names two operator heads beside its operand heads and gives no share); does not hold "
        "iff none could (every analysed head does not); inconclusive otherwise, and without key heads under either "
        "rule; measured on the prompts of the operations that pass identify's control, where the heads were ranked",
        version=3,
        decider=reads_operator,
        gate=controlled,
    ),
    Rule(
        "stages",
        "Heads collect operands, then MLPs write the answer",
        "start–inflection–end 13-18-28 for both",
        "on answer-specific curves: the MLP writes' cosine with the answer's W_U row minus their mean cosine with "
        "the other number tokens written alike, and the MLP inputs' mean cosine with the operands' rows minus their "
        "mean cosine with the other number tokens, each averaged over the prompts at END; start–inflection–end of "
        "each mean curve as App. C fits them; holds iff the 95% interval over problem clusters (1000 resamples, "
        "the knots refitted each time) of the answer curve's inflection minus the operand curve's lies at or above 0 "
        "(the answer is written at or after the operands arrive), does not hold iff it lies wholly below 0, "
        "inconclusive otherwise or below 20 problem clusters; measured on the prompts of the operations that pass "
        "identify's control",
        version=7,
        decider=stages,
        gate=controlled,
    ),
)
"""What the key heads read and in which order heads and MLPs act."""
