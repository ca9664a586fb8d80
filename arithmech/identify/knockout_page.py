"""The Identify chapter's knockout sections (``book/identify.md`` from Fig. 3 on): the studied heads knocked out.

Fig. 3's knockout of the key heads (or MLPs) against random ones (:func:`knockout_chart`,
:func:`knockout_summary`), its sanity rows (:func:`sanity`) and the choice of ablated positions
(:func:`positions`); the knockout on prompts of other forms (Fig. 4, :func:`transfer`) and on a held-out
template family beside the paper's SVAMP knockout (:func:`heldout`); and the top components on trained facts
against held-out ones (:func:`pair_overlap`). Each function reads the ``r`` of
:func:`arithmech.identify.page.run` and returns what its cell shows; :func:`crossfit_table` reads a folder's
cross-fitted knockout (its pooled :class:`~arithmech.methods.ablation.crossfit.CrossFit`): the paired differences
the knockout rules decide with where a folder has ``knockout_crossfit.csv``.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
from pandas.io.formats.style import Styler

from arithmech import paper
from arithmech.core.names import components
from arithmech.embedded import pair_circuits
from arithmech.identify.charts import knockout_control_chart
from arithmech.identify.page import Run
from arithmech.identify.transfer_chart import transfer_chart
from arithmech.methods.ablation import tables
from arithmech.methods.ablation.crossfit import LEVEL, N_BOOT, CrossFit
from arithmech.methods.ablation.tables import sanity_note, sanity_readable, sanity_table
from arithmech.report.views import counts
from arithmech.report.views.cells import markdown

KNOCKOUT = {
    "positions": "ablated at",
    "key_heads": "key heads (k)",
    "accuracy_key_heads_out": "accuracy, key heads out",
    "ci_low": "95% CI low",
    "ci_high": "95% CI high",
    "accuracy_random_out_mean": "k random non-key heads (mean)",
    "accuracy_random_out_q05": "random 5%",
    "accuracy_random_out_q95": "random 95%",
    "random_orders": "orders",
    "accuracy_layer_matched_mean": "k random heads, same layers (mean)",
    "accuracy_layer_matched_q05": "same layers 5%",
    "layer_matched_orders": "same-layer draws",
    "n": "prompts",
}


KNOCKOUT_RATES = [
    "accuracy, key heads out",
    "95% CI low",
    "95% CI high",
    "k random non-key heads (mean)",
    "random 5%",
    "random 95%",
    "k random heads, same layers (mean)",
    "same layers 5%",
]


def knockout_chart(r: Run, kind: str) -> alt.TopLevelMixin:
    """The knockout of the key heads (``kind`` "head") or MLPs ("mlp") against random ones, at END."""
    res = r.res
    p = res.params["knockout_positions"]
    return knockout_control_chart(res.knockout, kind, positions="end" if p == "both" else p)


# interval ends shown as one "lo–hi" column each (two columns of bare percentages widen the table past the text)
RANGES = {"95% CI": ("95% CI low", "95% CI high"), "random 5–95%": ("random 5%", "random 95%")}


def _span(lo: float, hi: float) -> str:
    return "not run" if pd.isna(lo) or pd.isna(hi) else f"{lo:.1%}–{hi:.1%}"


def _knockout_style(table: pd.DataFrame) -> Styler:
    t = table.rename(columns=KNOCKOUT).drop(columns=["accuracy_random_out_std"])
    for name, (lo, hi) in RANGES.items():
        t.insert(t.columns.get_loc(lo), name, [_span(a, b) for a, b in zip(t.pop(lo), t.pop(hi))])
    mean, draws = "k random non-key heads (mean)", "orders"  # the draws beside their mean: one column fewer
    t[mean] = [
        "not run" if pd.isna(m) else f"{m:.1%} ({int(n)} draws)" for m, n in zip(t[mean], t.pop(draws).fillna(0))
    ]
    rates = [c for c in KNOCKOUT_RATES if c in t.columns and c != mean]
    return t.style.format({c: "{:.1%}" for c in rates}, na_rep="not run").hide(axis="index")


def knockout_summary(r: Run) -> Styler:
    """Accuracy with the key heads out against k random non-key heads and k random heads of the same layers."""
    return _knockout_style(tables.knockout_summary(r.res))


def sanity(r: Run) -> list:
    """The knockout's sanity checks in words, then their 95 % intervals and where the means came from."""
    st = sanity_table(r.res)
    return [
        sanity_readable(st),
        markdown(sanity_note(st)),
    ]


def positions(r: Run) -> Styler:
    """The knockout at each choice of ablated positions."""
    return _knockout_style(tables.positions_table(r.res, r.net, r.tok))


def transfer(r: Run) -> alt.TopLevelMixin:
    """The knockout of the studied heads on prompts of other forms."""
    return transfer_chart(r.res.transfer, r.P.model_name, counts.key_heads(r.files).studied_phrase())


def _svamp() -> str:
    s = paper.SVAMP_KNOCKOUT
    return "{before:.1f}% → {after:.1f}%, {rel:+.0%}".format(
        before=s["before"], after=sum(s.values()), rel=s["change"] / s["before"]
    ).replace("-", "−")


def heldout(r: Run) -> Styler:
    """The knockout on a held-out prompt family beside the paper's SVAMP knockout (one row)."""
    h = r.res.heldout
    if h is None:
        raise ValueError("identify ran without a held-out family (transfer=False): no held-out knockout to show")
    return (
        pd.DataFrame(
            [
                {
                    "held-out family": h["family"],
                    "heads knocked out": components(h.get("heads", [])) if h.get("heads") else "—",
                    "prompts": h.get("n"),
                    "accuracy before": h.get("base_accuracy"),
                    "after (key heads)": h.get("knockout_accuracy"),
                    "relative change": h.get("relative_drop"),
                    "95% CI after": "{:.1%}–{:.1%}".format(*h["knockout_ci"]) if h.get("knockout_ci") else None,
                    "after (as many random non-key heads)": h.get("random_accuracy_mean"),
                    "random 5–95%": f"{h['random_accuracy_q05']:.1%}–{h['random_accuracy_q95']:.1%} "
                    f"({h['random_orders']} orders)"
                    if "random_accuracy_q05" in h
                    else None,
                    "mean": h.get("mean_source"),
                    "paper (SVAMP)": _svamp(),
                }
            ]
        )
        .style.format(
            {
                "accuracy before": "{:.1%}",
                "after (key heads)": "{:.1%}",
                "relative change": "{:+.0%}",
                "after (as many random non-key heads)": "{:.1%}",
            },
            na_rep="—",
        )
        .hide(axis="index")
    )


def pair_overlap(r: Run) -> list:
    """With ``P.trained_without_heldout``: the top-10 components on trained facts against held-out ones, beside
    two trained sets (the noise ceiling), as a one-table list; else an empty list."""
    if not r.P.trained_without_heldout:
        return []
    pc = pair_circuits.compare(r.net, r.tok, "addition", seed=r.P.seed)

    def fmt(o: dict) -> str:
        return f"{o['value']} of {o['k']} [{o['lo']:.0f}, {o['hi']:.0f}]"

    def sets(*ns: str) -> str:
        return " vs ".join(f"{n} ({pc['n_prompts'][n]} prompts, {pc['n_facts'][n]} facts)" for n in ns)

    return [
        pd.DataFrame(
            [
                {"compared": sets("trained A", "held out"), "top-10 overlap (95% over facts)": fmt(pc["overlap"])},
                {
                    "compared": sets("trained A", "trained B") + " — the noise ceiling",
                    "top-10 overlap (95% over facts)": fmt(pc["ceiling"]),
                },
            ]
        ).style.hide(axis="index")
    ]


def crossfit_table(cf: CrossFit | None) -> list:
    """The cross-fitted knockout as the knockout rules read it (:func:`~arithmech.methods.ablation.crossfit.paired`):
    a sentence naming what is read, with its prompts, clusters and folds, then one table: the top ``k`` minus each
    kind of draw on accuracy (points) and logit difference, pooled over the folds and in each fold, each with its
    interval, and the distinct head sets each fold drew; ``cf`` ``None`` (no knockout_crossfit.csv): one line."""
    if cf is None:
        return [
            markdown("**Not run yet**: this folder has no `knockout_crossfit.csv` (`python -m arithmech crossfit`).")
        ]
    first = cf.random_acc_diff or cf.matched_acc_diff
    folds = first.folds if first else ()
    cols = [f"all {len(cf.tops)} folds ({cf.n} prompts, {cf.clusters} clusters)"]
    cols += [f"fold {f.fold} ({f.n} prompts, {f.clusters} clusters)" for f in folds]

    def cells(p, scale: float, spec: str) -> list[str]:
        if p is None:
            return ["not run"] * len(cols)
        span = lambda r: f"{scale * r.value:{spec}} [{scale * r.lo:{spec}}, {scale * r.hi:{spec}}]"  # noqa: E731
        return [span(p.diff)] + [span(f.diff) for f in p.folds]

    rows = {
        f"accuracy (points): top {cf.k} minus random heads": cells(cf.random_acc_diff, 100, "+.0f"),
        f"accuracy (points): top {cf.k} minus layer-matched": cells(cf.matched_acc_diff, 100, "+.0f"),
        f"logit difference: top {cf.k} minus random heads": cells(cf.random_ld_diff, 1, "+.2f"),
        f"logit difference: top {cf.k} minus layer-matched": cells(cf.matched_ld_diff, 1, "+.2f"),
    }
    kinds = [(p.folds if p else None) for p in (cf.random_acc_diff, cf.matched_acc_diff)]
    rows["distinct head sets: random / layer-matched draws"] = [""] + [
        " / ".join("—" if k is None else f"{k[i].sets} of {k[i].draws}" for k in kinds) for i in range(len(folds))
    ]
    said = (
        f"The knockout cross-fitted over {len(cf.tops)} folds: {cf.n} held-out prompts from {cf.clusters} problem "
        f"clusters. On each held-out cluster, the reading with its fold's top {cf.k} out minus the mean of its fold's "
        "draws on the same prompts (the draws present in every fold), pooled over the clusters by their prompts; "
        f"{LEVEL:.0%} percentile intervals over {N_BOOT:,} resamples of the clusters within each fold (a fold's own "
        "interval resamples its own clusters). The knockout rules read the pooled column against their bounds."
    )
    return [markdown(said), pd.DataFrame(rows, index=cols).T.style]
