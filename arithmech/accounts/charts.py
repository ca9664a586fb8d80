"""The chapter's charts, drawn offline with altair from the step's files (one builder per chart, nothing computed
that a test would need: the numbers are the files')."""

from __future__ import annotations

import re
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from arithmech.accounts import classify
from arithmech.accounts.grid import OPERANDS

WIDTH = 460


PANELS = ["activation", "heuristic fit", "periodic fit"]


def fitted_maps(neurons: pd.DataFrame, maps: pd.DataFrame) -> pd.DataFrame:
    """Each neuron's grid three ways, one row per cell (``neuron, a, b`` and one column per :data:`PANELS`): its mean
    activation, the best heuristic pattern's least-squares fit and the best periodic feature's (each fitted on the
    whole grid, for display; the held-out R^2 in the labels is the step's)."""
    ab = classify.cells(OPERANDS)
    fams = {"heuristic fit": classify.heuristic_family(ab), "periodic fit": classify.periodic_family(ab)}
    col = {"heuristic fit": "pattern", "periodic fit": "periodic_fit"}
    out = []
    for _, n in neurons.iterrows():
        m = maps[maps.neuron == n.neuron].set_index(["a", "b"]).activation
        y = np.array([m.get((int(a), int(b)), np.nan) for a, b in ab])
        row = pd.DataFrame({"neuron": n.neuron, "a": ab[:, 0], "b": ab[:, 1], "activation": y})
        for panel, fam in fams.items():
            f = fam.features[:, fam.names.index(n[col[panel]])]
            slope, icpt = np.polyfit(f, y, 1)
            row[panel] = icpt + slope * f
        out.append(row)
    return pd.concat(out, ignore_index=True)


def label(n) -> str:
    """A neuron's dropdown label: layer.index, class, the two fits' held-out R^2."""
    return (
        f"{n.neuron} | {n['class']} | {n.pattern} (R2 {n.r2_heuristic:.2f}) | {n.periodic_fit} (R2 {n.r2_periodic:.2f})"
    )


def layer_explorer(neurons: pd.DataFrame, maps: pd.DataFrame, layer: int, key: str = "") -> alt.FacetChart:
    """One flagged layer's top neurons: a dropdown, then the neuron's grid and its two fits side by side."""
    neurons = neurons[neurons.layer == layer].sort_values("score", ascending=False)
    data = fitted_maps(neurons, maps)
    names = {n.neuron: label(n) for _, n in neurons.iterrows()}
    data["pick"] = data.neuron.map(names)
    options = list(names.values())
    pick = alt.param(
        name=re.sub(r"\W", "_", f"neuron_pick_{key}_{layer}"),
        value=options[0],
        bind=alt.binding_select(options=options, name=f"MLP {layer} "),
    )
    return (
        alt.Chart(data)
        .transform_filter(alt.datum.pick == pick)
        .transform_fold(list[Any](PANELS), as_=["panel", "value"])
        .mark_rect()
        .encode(
            x=alt.X("b:O", title="b"),
            y=alt.Y("a:O", title="a", sort="descending"),
            color=alt.Color("value:Q", title="activation", scale=alt.Scale(scheme="blueorange", domainMid=0)),
            tooltip=["neuron:N", "a:O", "b:O", "panel:N", alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(width=140, height=140)
        .add_params(pick)
        .facet(column=alt.Column("panel:N", title=None, sort=PANELS))
        .properties(
            title=alt.Title(
                f"{key} MLP {layer}: a top neuron",
                subtitle="rows a, columns b; the fits are drawn on the whole grid, the R^2 in the menu are held-out",
            )
        )
    )


def neuron_explorers(neurons: pd.DataFrame, maps: pd.DataFrame, key: str) -> list[alt.FacetChart]:
    """One explorer per flagged MLP (highest-scoring layer first): pick a top neuron to see its operand grid (mean END
    activation over the templates), the best heuristic pattern's fit and the best periodic feature's, with its
    class and both held-out R^2 in the menu."""
    layers = list(dict.fromkeys(neurons.sort_values("score", ascending=False).layer))
    return [layer_explorer(neurons, maps, int(l), key) for l in layers]


def faithfulness_chart(curves: pd.DataFrame) -> alt.Chart:
    """Faithfulness of the top-k neurons per flagged layer against k (log scale), one line per model, the 0.9 bar."""
    c = curves[curves.k > 0]
    line = (
        alt.Chart(c)
        .mark_line(point=True)
        .encode(
            x=alt.X("k:Q", scale=alt.Scale(type="log"), title="neurons kept per flagged MLP (k)"),
            y=alt.Y("faithfulness:Q", title="faithfulness F"),
            color=alt.Color("model:N"),
            tooltip=["model", "k", alt.Tooltip("faithfulness:Q", format=".2f"), alt.Tooltip("ld:Q", format=".2f")],
        )
    )
    rule = alt.Chart(pd.DataFrame({"y": [0.9]})).mark_rule(strokeDash=[4, 4]).encode(y="y:Q")
    return (line + rule).properties(width=WIDTH, title="Top neurons kept, the rest of the flagged MLPs mean-ablated")


def removal_chart(removal: pd.DataFrame) -> alt.Chart:
    """Drop of the last-digit logit difference when the periodic digit patterns (5 directions), random ones (as
    many) or the whole centred digit subspace are removed from every MLP / attention output at END."""
    d = removal.assign(kind=removal.condition.str.replace(r" \d+$", "", regex=True))
    return (
        alt.Chart(d)
        .mark_point(filled=True, size=60)
        .encode(
            x=alt.X("drop:Q", title="drop of the last-digit logit difference"),
            y=alt.Y("kind:N", title=None, sort=["periodic", "random", "full"]),
            color=alt.Color("kind:N", legend=None),
            row=alt.Row("model:N", title=None),
            column=alt.Column("site:N", title=None),
            tooltip=["model", "site", "condition", alt.Tooltip("drop:Q", format=".3f")],
        )
        .properties(width=200, height=70, title="Periodic removal against random directions of the same subspace")
    )


def probe_chart(probe: pd.DataFrame, nulls: pd.DataFrame) -> alt.FacetChart:
    """Cohen's kappa of each testable residue probe by layer, one panel per model, the corrected null quantile as
    a dashed rule per probe."""
    keys = ["model", "x", "T"]
    d = probe.merge(nulls[keys + ["null_quantile"]], on=keys, how="left")
    d["probe"] = d.x + " mod " + d["T"].astype(str)
    base = alt.Chart(d).encode(color=alt.Color("probe:N"))
    line = base.mark_line(point=True).encode(
        x=alt.X("layer:Q", title="layer"),
        y=alt.Y("kappa:Q", title="Cohen's kappa (held-out values)"),
        tooltip=["model", "probe", "layer", alt.Tooltip("kappa:Q", format=".2f")],
    )
    rule = base.mark_rule(strokeDash=[4, 4]).encode(y="mean(null_quantile):Q")
    return (
        alt.layer(line, rule)
        .properties(width=200, height=180)
        .facet(column=alt.Column("model:N", title=None))
        .properties(title="Residue probes against the permutation null (dashed)")
    )


def counterfactual_chart(groups: pd.DataFrame) -> alt.Chart:
    """Each group's summed patching effect on the answer logit under the three counterfactuals, with intervals."""
    base = alt.Chart(groups).encode(
        y=alt.Y("counterfactual:N", title=None, sort=["operator", "operand", "result-preserving"]),
        color=alt.Color("counterfactual:N", legend=None),
    )
    bars = base.mark_point(filled=True, size=70).encode(
        x=alt.X("mean:Q", title="change of the answer logit (patched - clean)"),
        tooltip=["model", "group", "counterfactual", alt.Tooltip("mean:Q", format=".3f"), "n", "clusters"],
    )
    err = base.mark_rule().encode(x="lo:Q", x2="hi:Q")
    return (
        (bars + err)
        .properties(width=200, height=80)
        .facet(row=alt.Row("model:N", title=None), column=alt.Column("group:N", title=None))
        .properties(title="Heads and flagged MLPs under three counterfactuals")
    )
