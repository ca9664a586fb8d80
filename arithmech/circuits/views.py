"""The Beyond chapter's tables and charts, one row (or one chart) per model, from
:func:`arithmech.pipeline.ensure.ensure`.

Each function takes ``runs``: a list of ``ensure`` results (:class:`arithmech.circuits.result.BeyondResult`: ``model``,
``summary``, ``eap``, ``upstream``, ``n_layers``), so the page shows every model with one code path::

    >>> runs = [ensure(Beyond(model_name=m, **params)) for m in ("embedded", "smollm2-135m")]
    >>> methods_table(runs); scatter_chart(runs[0]); verdict_table(runs)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import pandas as pd

from arithmech.circuits import graph as circuit
from arithmech.core.names import component, component_label
from arithmech.report.charts import colours

if TYPE_CHECKING:  # the type only: these views take the runs, made elsewhere
    from arithmech.circuits.result import BeyondResult as Result

METHODS = (("eap", "EAP"), ("eap_ig", "EAP-IG"))
KEY = "heads with mean effect below −5%"
CI = "ρ 95% interval (resampling prompts)"  # the three methods on one rule (EAP has no interval)


def methods_table(runs: list[Result]) -> pd.DataFrame:
    """Exact vs EAP vs EAP-IG per model: seconds, Spearman ρ with the exact effects (every head and MLP,
    with its 95% bootstrap interval over the prompts, :func:`arithmech.methods.attribution.spearman_intervals`;
    heads only), overlap of the top-10 heads, the heads whose *mean* effect each method puts below −5%
    (one rule for the three; identify's key heads need the whole bootstrap interval below, which EAP
    lacks), and the samples ``n``."""
    rows = []
    for r in runs:
        S, t = r.summary, r.summary["times"]
        rows.append(
            {
                "model": r.model,
                "method": "exact (path_patch_fast)",
                "seconds": t["exact_s"],
                "Spearman ρ (all)": 1.0,
                CI: "—",
                "ρ (heads)": 1.0,
                f"top-{S['top']} overlap": S["top"],
                KEY: ", ".join(map(component_label, S["exact_key_heads"])) or "—",
                "n": S["n_samples"],
            }
        )
        for m, name in METHODS:
            rho = S[m]["spearman_all"]
            rows.append(
                {
                    "model": r.model,
                    "method": name + (f" ({S['ig_steps']} steps)" if m == "eap_ig" else ""),
                    "seconds": t[f"{m}_s"],
                    "Spearman ρ (all)": rho,
                    CI: f"[{S[m]['spearman_all_lo']:+.3f}, {S[m]['spearman_all_hi']:+.3f}]",
                    "ρ (heads)": S[m]["spearman_heads"],
                    f"top-{S['top']} overlap": S[m]["top_overlap"],
                    KEY: ", ".join(map(component_label, S[m]["key_heads"])) or "—",
                    "n": S["n_samples"],
                }
            )
    return pd.DataFrame(rows)


def scatter_chart(run: Result, width: int = 420) -> alt.LayerChart:
    """Attribution estimate vs exact effect of every head (circle) and MLP (square), EAP and EAP-IG, with
    the diagonal; hover for the exact effect's standard error."""
    eap = run.eap
    long = eap.melt(
        id_vars=["layer", "head", "exact", "exact_se"],
        value_vars=["eap", "eap_ig"],
        var_name="method",
        value_name="estimate",
    )
    long = long.assign(
        kind=long["head"].map(lambda h: "MLP" if h == "mlp" else "head"),
        method=long["method"].map(dict(METHODS)),
        component=[component(l, h) for l, h in zip(long.layer, long["head"])],
    )
    lim = float(max(long.exact.abs().max(), long.estimate.abs().max()))
    diag = (
        alt.Chart(pd.DataFrame({"x": [-lim, lim]}))
        .mark_line(color=colours.colour("reference", "diagonal"), strokeDash=[4, 3])
        .encode(x="x:Q", y="x:Q")
    )
    pts = (
        alt.Chart(long)
        .mark_point(filled=True, size=45)
        .encode(
            x=alt.X("exact:Q", title="exact effect", axis=alt.Axis(format="%")),
            y=alt.Y("estimate:Q", title="attribution estimate", axis=alt.Axis(format="%")),
            color=alt.Color("method:N", title="method", scale=colours.scale("method", ["EAP", "EAP-IG"])),
            shape=alt.Shape("kind:N", title="sender"),
            tooltip=[
                "component:N",
                "method:N",
                alt.Tooltip("exact:Q", format=".2%"),
                alt.Tooltip("exact_se:Q", format=".2%", title="± (s.e.)"),
                alt.Tooltip("estimate:Q", format=".2%"),
            ],
        )
    )
    return (diag + pts).properties(
        width=width,
        height=300,
        title=alt.TitleParams(
            f"Attribution vs exact path patching, {run.model}",
            subtitle=f"n = {run.summary['n_samples']} prompts; on the dashed line the estimate is exact",
        ),
    )


def misses_table(runs: list[Result]) -> pd.DataFrame:
    """EAP's largest misses per model (the component named as in :func:`arithmech.core.names.component`),
    recomputed with norms / MLP gates / both frozen, and the cause."""
    cols = ["component", "exact", "eap", "miss", "miss_norm_frozen", "miss_gate_frozen", "miss_both_frozen", "cause"]
    named = lambda d: d.assign(component=[component(l, h) for l, h in zip(d.layer, d["head"])])
    parts = [named(r.eap[r.eap["cause"].notna()])[cols].assign(model=r.model) for r in runs if "cause" in r.eap]
    if not parts:
        return pd.DataFrame(columns=["model", *cols])
    out = pd.concat(parts, ignore_index=True)
    out = out.assign(order=out["miss"].abs()).sort_values(["model", "order"], ascending=[True, False], kind="stable")
    return out[["model", *cols]]


def upstream_table(runs: list[Result], top: int = 8) -> pd.DataFrame:
    """The ``top`` strongest sender → receiver paths (q at END; k or v at END, A, operator or B) per model, with
    standard errors and ``n``."""
    cols = ["model", "sender", "receiver", "position", "path", "effect", "effect_se", "n"]
    parts = []
    for r in runs:
        up = r.upstream.dropna(subset=["effect"])
        if len(up):
            up = up.reindex(up["effect"].abs().sort_values(ascending=False, kind="stable").index).head(top)
            parts.append(
                up.assign(
                    model=r.model, sender=up.sender.map(component_label), receiver=up.receiver.map(component_label)
                )[cols]
            )
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


def verdict_table(runs: list[Result]) -> pd.DataFrame:
    """The chapter's rule (:func:`arithmech.circuits.graph.verdict`) per model: ``D``, ``E`` with its 95%
    interval, where the receivers come from, and the verdict."""
    rows = []
    for r in runs:
        v, S = circuit.verdict(r.eap, r.upstream), r.summary
        rows.append(
            {
                "model": r.model,
                "receivers": f"{', '.join(map(component_label, S['receivers'])) or '—'} ({S['receivers_from']})",
                "D (weakest receiver, direct)": v.get("D"),
                "D 95% interval": "{:.3%} – {:.3%}".format(*v["D_ci"]) if "D_ci" in v else None,
                "E (strongest upstream path)": v.get("E"),
                "E path": v.get("E_path"),
                "E 95% interval": "{:.3%} – {:.3%}".format(*v["E_ci"]) if "E_ci" in v else None,
                "n": v.get("n"),
                "verdict": v["verdict"],
            }
        )
    return pd.DataFrame(rows)


def finding_lines(runs: list[Result]) -> list[str]:
    """The chapter's "what this run found" lines, one per model, computed from ``runs``."""
    out = []
    for r, v in zip(runs, verdict_table(runs).itertuples()):
        S = r.summary
        out.append(
            f"{r.model} ({S['n_samples']} prompts): EAP's Spearman ρ with the exact effects "
            f"{S['eap']['spearman_all']:+.2f} (EAP-IG {S['eap_ig']['spearman_all']:+.2f}), top-{S['top']} overlap "
            f"with the exact ranking {S['eap']['top_overlap']} of {S['top']} (EAP-IG {S['eap_ig']['top_overlap']}); "
            "'no single upstream path (q at END; k or v at "
            f"END, A, operator or B) into the "
            f"{len(S['receivers'])} receivers ({S['receivers_from']}) is as large as the weakest receiver's "
            f"direct effect': **{v.verdict}** (rule stated on the page)."
        )
    return out
