"""Two identify runs of one model side by side — zero-shot and few-shot prompts — read from their Results.

Each run is a :class:`~arithmech.claims.evidence.Context` (its folder's step Results, each file read once, built by
the caller): every number here comes from its identify files (``run.json``'s record, ``key_heads.json``,
``knockout.csv``) and every verdict from the claims table (:func:`arithmech.claims.decide.claims`) decided on the same
Context, by the same rules for both runs; nothing is recomputed but the control, from ``prompts.jsonl``. No function
here reads a file. :func:`yield_rows` gives the prompts each run could patch and their floors, :func:`circuit_rows`
the key heads and the top-k knockout against its random band, :func:`verdict_rows` the claims.

>>> runs = {"zero-shot": Context(folder / "zero-shot"), "4-shot": Context(folder)}
>>> yield_rows(runs); circuit_rows(runs); verdict_rows(runs)
"""

from __future__ import annotations

import pandas as pd

from arithmech.claims.decide import claims
from arithmech.claims.evidence import Context, cluster_interval
from arithmech.core.names import components
from arithmech.core.stats import wilson_interval
from arithmech.data.floors import not_passed, shown
from arithmech.identify.claims import K
from arithmech.report.views.table_display import verdict

CLAIMS = (
    "key-heads-exist",
    "key-heads-exist-share",
    "few-heads",
    "middle-layers",
    "knockout-key-vs-random",
    "knockout-ld-key-vs-random",
    "knockout-random-flat",
    "mlps-late",
    "transfer",
    "answer-token-floor",
    "ablation-removes-information",
)
"""The claims an identify run alone decides (the others need analyze, stability or fine-tuning)."""
ANALYZE_CLAIMS = ("logit-diff-ranking", "attention-roles", "attention-reads-operator", "stages", "circuit-faithful")
"""The claims that need analyze's or faithfulness' files beside identify's (or decide on a ranking of both rules)."""


def _pct(x: float) -> str:
    return "—" if x != x else f"{x:.0%}"


def yield_rows(runs: dict[str, Context]) -> pd.DataFrame:
    """Per operation and run: pairs drawn, X_r kept (with the Wilson interval of the kept share; all of them are
    patched), the distinct X_r the effects and key heads are ranked on (``prompts.jsonl``: with the held-out split,
    the ranking side's; a prompt drawn twice is kept twice), the majority floor, the conditioned floor the run
    wrote (version 1: each prompt guessed from the others, its copies included) and the floor over distinct
    problems (:mod:`arithmech.data.floors`), and whether the task passes its control — recomputed under the
    current rule (:meth:`arithmech.claims.evidence.Context.control`), as the claims decide it."""
    rows = []
    for label, ctx in runs.items():
        rec = ctx.run()
        stored = ctx.key_heads().get("control", {})
        control = ctx.control()  # recomputed under the current rule
        distinct: dict[str, set] = {}
        for p in ctx.prompts():
            distinct.setdefault(p["op"], set()).add(p["clean"])
        for task, s in rec["samples"].items():
            f, v1 = control.get("floors", {}).get(task, {}), stored.get("floors", {}).get(task, {})
            lo, hi = wilson_interval(s["n_kept"], s["n_drawn"])
            rows.append(
                {
                    "operation": task,
                    "prompts": label,
                    "drawn": s["n_drawn"],
                    "kept X_r": f"{s['n_kept']} ({_pct(s['n_kept'] / s['n_drawn'])}, 95% {_pct(lo)}–{_pct(hi)})",
                    "distinct X_r ranked on": len(distinct.get(task, ())) if task in distinct else "–",
                    "majority floor": _pct(f.get("majority", float("nan"))),
                    "conditioned floor as run (each prompt from the others)": _pct(v1.get("conditioned", float("nan"))),
                    "floor over distinct problems": _pct(f.get("conditioned", float("nan")))
                    + (f" ({f['by']}, over the {f['on']})" if f.get("on") else ""),
                    "control": shown(control, task) if f or task in not_passed(control) else "not recorded",
                }
            )
    return pd.DataFrame(rows).sort_values(["operation", "prompts"], kind="stable").reset_index(drop=True)


def _heads(kh: dict) -> str:
    """The key heads of a key_heads.json block, with the rule's threshold (the whole 95% interval below it)."""
    return (
        components(h["name"] for h in kh.get("heads", []))
        + f" (whole 95% interval below {kh.get('threshold', float('nan')):+.0%})"
    )


def _knocked(row) -> str:
    """A knockout row's accuracy with the claims' interval: Wilson over its problem clusters where the file counts
    them (:func:`arithmech.claims.evidence.cluster_interval`), else the file's own over prompts."""
    lo, hi, what = cluster_interval(row)
    return f"{_pct(float(row.accuracy))} (95% {_pct(lo)}–{_pct(hi)}, {what})"


def circuit_rows(runs: dict[str, Context], k: int = K) -> pd.DataFrame:
    """Per run: the pooled tasks, the key heads under the paper's rule and under the share rule, the top ``k``
    heads by effect, and accuracy with the top ``k`` heads knocked out at END against the random band
    (5–95% of the random draws of ``k`` heads outside them), the intact accuracy, the prompts (the pooled task's
    n, and each pooled task's own knockout prompts it was drawn from: 0 where the held-out draw found none) and
    which split they came from (a file without the column was made in sample)."""
    rows = []
    for label, ctx in runs.items():
        kh = ctx.key_heads()
        eff = ctx.all_effects()
        task = kh.get("task", "all")
        top = eff[(eff.task == task) & (eff["head"] != "mlp")].nsmallest(k, "effect")
        every = ctx.knockout()
        ko = (
            every[(every.task == task) & (every.positions == "end")]
            if "positions" in every
            else every[every.task == task]
        )
        d = ko[(ko.kind == "head") & (ko.k == k)]
        key, rnd = d[d.order == "effect-rank"], d[d.order == "random-rank"]
        intact = ko[(ko.kind == "sanity") & (ko.order == "nothing-out")]
        pooled = kh.get("control", {}).get("pooled", [task])
        each = {
            t: int(every[(every.task == t) & (every.kind == "sanity")].n.max()) if (every.task == t).any() else 0
            for t in pooled
        }  # a task the held-out draw found nothing for: 0
        rows.append(
            {
                "prompts": label,
                "pooled tasks": ", ".join(pooled),
                "claims decided on": ctx.primary()[0],
                "key heads: relative change of the answer logit": _heads(kh),
                "key heads: LD ratio to the counterfactual's effect": _heads(kh["by_share"])
                if "by_share" in kh
                else "not measured",
                f"top {k} by effect": components(zip(top.layer, top["head"])),
                "intact": _pct(float(intact.accuracy.iloc[0])) if len(intact) else "—",
                f"top {k} out": _knocked(key.iloc[0]) if len(key) else "—",
                f"{k} random out (5–95%)": (
                    f"{_pct(rnd.accuracy.quantile(0.05))}–{_pct(rnd.accuracy.quantile(0.95))} ({len(rnd)} draws)"
                )
                if len(rnd)
                else "—",
                "n prompts": (
                    f"{int(key.n.iloc[0])} (pooled from the tasks' own: "
                    + ", ".join(f"{t} {n}" for t, n in each.items())
                    + ")"
                    if len(each) > 1
                    else str(int(key.n.iloc[0]))
                )
                if len(key)
                else "0",
                "knockout prompts": ("none" if ko.empty else f"no k = {k} point")
                if not len(key)
                else (key.split.iloc[0] if "split" in key else "in-sample")
                + " (problems never ranked on)" * bool("split" in key and key.split.iloc[0] == "held-out"),
            }
        )
    return pd.DataFrame(rows)


def verdict_rows(runs: dict[str, Context], ids=CLAIMS) -> pd.DataFrame:
    """The claims table's verdict of each claim in ``ids`` for each run, with the numbers it was decided on."""
    out = None
    for label, ctx in runs.items():
        c = claims(ctx, ids)[["id", "claim", "holds", "here"]]
        c = c.assign(**{label: [verdict(h) for h in c.holds], f"{label}: numbers": c.here}).drop(
            columns=["holds", "here"]
        )
        out = c if out is None else out.merge(c, on=["id", "claim"])
    return out


def changed_lines(runs: dict[str, Context], ids=CLAIMS + ANALYZE_CLAIMS) -> list[str]:
    """The claims in ``ids`` whose verdict differs between the first run of ``runs`` and each other one, a line
    each ("claim: first's verdict → other's verdict (other's label)"); empty when none differs."""
    v = verdict_rows(runs, ids)
    first, *others = runs
    return [f"{r['claim']}: {r[first]} → {r[o]} ({o})" for o in others for _, r in v.iterrows() if r[first] != r[o]]
