"""The circuit graph of the ``beyond`` step: senders → receivers → logits.

Built from the step's results files only (``eap.csv``: each sender's exact direct effect on the same
samples; ``upstream.csv``: each sender → receiver path effect, through the receiver's q at END or its k/v at END
and at the operand and operator positions):

* :func:`graph` — nodes (receivers, the senders of the strongest upstream edges, ``logits``) placed by
  layer, and edges: sender → receiver (weight = the sum of its path effects: q, and k and v at every
  position; ``q``, ``k``, ``v`` each summed over positions), receiver →
  logits and sender → logits (weight = the direct effect);
* (no "share explained": path effects measured one at a time do not add, and an upstream edge into a
  receiver is part of what moves the receiver; what a circuit recovers when run alone is measured by
  :mod:`arithmech.methods.faithfulness`);
* :func:`verdict` — the chapter's rule for the paper's "few key heads" picture;
* :func:`circuit_chart` — the altair chart (hover an edge or a node for its numbers).
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.core.names import component_label
from arithmech.report.charts import colours
from arithmech.report.charts.effect_chart import EFFECT_SCHEME
from arithmech.report.charts.theme import fig_title, integer_axis

Z95 = 1.959964


def _direct(eap: pd.DataFrame) -> pd.Series:
    name = [f"MLP {l}" if h == "mlp" else f"{l}.{h}" for l, h in zip(eap["layer"], eap["head"])]
    return pd.Series(eap["exact"].to_numpy(), index=name)


def graph(
    eap: pd.DataFrame, upstream: pd.DataFrame, n_layers: int, n_edges: int = 12
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(nodes, edges)``. nodes: ``node, layer, y, kind (receiver / sender / logits), direct``; edges:
    ``source, target, kind (upstream / direct), weight, q, k, v`` with the ``n_edges`` strongest
    sender → receiver edges (by |weight|) and the direct edges of every node drawn; an edge's ``k`` (``v``) is
    the sum of its k (v) paths over the positions (END, A, operator, B), ``weight`` = q + k + v."""
    direct = _direct(eap)
    receivers = list(dict.fromkeys(upstream["receiver"])) if len(upstream) else []
    up = _strongest_edges(upstream, n_edges)
    senders = [s for s in dict.fromkeys(up["sender"]) if s not in receivers] if len(up) else []
    layer_of = lambda s: int(s.split()[-1]) if s.startswith("MLP") else int(s.split(".")[0])
    nodes = pd.DataFrame(
        [
            {"node": s, "layer": layer_of(s), "kind": kind, "direct": float(direct.get(s, float("nan")))}
            for kind, group in (("receiver", receivers), ("sender", senders))
            for s in group
        ]
        + [{"node": "logits", "layer": n_layers, "kind": "logits", "direct": float("nan")}]
    )
    nodes["y"] = nodes.groupby("layer").cumcount()
    edges = (
        [
            {
                "source": r.sender,
                "target": r.receiver,
                "kind": "upstream",
                "weight": r.weight,
                "q": r.q,
                "k": r.k,
                "v": r.v,
            }
            for r in up.itertuples()
        ]
        if len(up)
        else []
    )
    edges += [
        {
            "source": s,
            "target": "logits",
            "kind": "direct",
            "weight": float(direct.get(s, 0.0)),
            "q": None,
            "k": None,
            "v": None,
        }
        for s in receivers + senders
    ]
    return nodes, pd.DataFrame(edges, columns=["source", "target", "kind", "weight", "q", "k", "v"])


def _strongest_edges(upstream: pd.DataFrame, n_edges: int) -> pd.DataFrame:
    """The ``n_edges`` sender → receiver edges of largest |weight|: each edge's q, k and v (a path's effects summed
    over the positions) and ``weight`` = q + k + v; empty without upstream rows."""
    up = (
        upstream.pivot_table(
            index=["sender", "sender_layer", "receiver"], columns="path", values="effect", aggfunc="sum"
        )
        .reindex(columns=["q", "k", "v"], fill_value=0.0)
        .reset_index()
        if len(upstream)
        else pd.DataFrame()
    )
    if len(up):
        up["weight"] = up[["q", "k", "v"]].sum(axis=1)
        up = up.reindex(up["weight"].abs().sort_values(ascending=False, kind="stable").index).head(n_edges)
    return up


def verdict(eap: pd.DataFrame, upstream: pd.DataFrame) -> dict:
    """The chapter's rule: let ``D`` be the smallest |direct effect| among the receivers and ``E`` the
    largest |effect| of one sender → receiver path (q at END; k or v at END, operand A, operator or
    operand B: every row of ``upstream.csv``), each with its 95%
    interval (mean ± 1.96 standard errors over samples; ``D``'s from ``exact_se`` where ``eap`` has it).
    "No single upstream path outweighs the receivers' own direct effects" **holds** when ``E``'s interval
    lies entirely below ``D``'s, **does not hold** when entirely above, and is **inconclusive** otherwise
    (or when there is no receiver). ``E`` is the largest of many paths, so its naive interval is, if
    anything, too narrow on the low side: a "holds" is the conservative direction. Rows with no effect
    (NaN: a role without a token in every sample) are left out. ``E_path`` names the position."""
    if not len(upstream):
        return {"verdict": "inconclusive", "reason": "no receiver after layer 0"}
    direct = _direct(eap)
    se = pd.Series(eap["exact_se"].to_numpy() if "exact_se" in eap else 0.0, index=direct.index)
    rec = list(dict.fromkeys(upstream["receiver"]))
    weakest = min(rec, key=lambda r: abs(direct[r]))
    D, D_se = abs(float(direct[weakest])), float(se[weakest])
    up = upstream.dropna(subset=["effect"])
    top = up.loc[up["effect"].abs().idxmax()]
    E, E_se = abs(float(top.effect)), float(top.effect_se)
    lo, hi = E - Z95 * E_se, E + Z95 * E_se
    d_lo, d_hi = D - Z95 * D_se, D + Z95 * D_se
    v = "holds" if hi < d_lo else "does not hold" if lo > d_hi else "inconclusive"
    return {
        "verdict": v,
        "D": D,
        "D_ci": [d_lo, d_hi],
        "D_receiver": weakest,
        "E": E,
        "E_ci": [lo, hi],
        "E_path": f"{component_label(top.sender)} → {component_label(top.receiver)} ({top.path} at "
        f"{getattr(top, 'position', 'END')})",
        "n": int(top.n),
    }


def circuit_chart(
    nodes: pd.DataFrame, edges: pd.DataFrame, model_name: str, fig: str = "Beyond"
) -> alt.LayerChart | alt.FacetChart:
    """Senders → receivers → logits: x = layer (logits after the last), edge width and colour = effect
    (red: lowers the answer logit), dashed = direct edges to the logits; hover for the numbers."""
    pos = nodes.set_index("node")[["layer", "y"]]
    e = edges.assign(
        x=edges.source.map(pos.layer),
        y=edges.source.map(pos.y),
        source_label=edges.source.map(component_label),
        target_label=edges.target.map(component_label),
        x2=edges.target.map(pos.layer),
        y2=edges.target.map(pos.y),
        size=edges.weight.abs(),
    )
    x = alt.X("x:Q", title="layer", scale=alt.Scale(domain=[-0.5, float(nodes.layer.max()) + 0.5]), axis=integer_axis())
    y = alt.Y("y:Q", title=None, axis=None)
    n = nodes.rename(columns={"layer": "x"}).assign(label=lambda d: d.node.map(component_label))
    dots, labels = _node_layers(n, x, y)
    return alt.layer(_edge_layer(e, x, y), dots, labels).properties(
        width=560,
        height=300,
        title=fig_title(
            fig,
            f"the paths into the key heads, {model_name}",
            "edge = mean relative change of the answer logit along that path",
        ),
    )


def _edge_layer(e: pd.DataFrame, x: alt.X, y: alt.Y) -> alt.Chart:
    """The edges' layer: one rule per edge, its width and colour the effect (red: lowers the answer logit),
    dashed for the direct edges to the logits."""
    m = max(1e-9, float(e.weight.abs().max())) if len(e) else 1.0
    color = alt.Color(
        "weight:Q",
        title="effect",
        scale=alt.Scale(scheme=EFFECT_SCHEME, domain=[-m, m], domainMid=0),
        legend=alt.Legend(format=".1%"),
    )
    tip = [
        alt.Tooltip("source_label:N", title="from"),
        alt.Tooltip("target_label:N", title="to"),
        "kind:N",
        alt.Tooltip("weight:Q", format=".2%"),
        alt.Tooltip("q:Q", format=".2%"),
        alt.Tooltip("k:Q", format=".2%"),
        alt.Tooltip("v:Q", format=".2%"),
    ]
    return (
        alt.Chart(e)
        .mark_rule(opacity=0.8)
        .encode(
            x=x,
            y=y,
            x2="x2:Q",
            y2="y2:Q",
            color=color,
            strokeWidth=alt.StrokeWidth("size:Q", scale=alt.Scale(range=[0.5, 7]), legend=None),
            strokeDash=alt.StrokeDash(
                "kind:N", scale=alt.Scale(domain=["upstream", "direct"], range=[[1, 0], [4, 3]]), title="edge"
            ),
            tooltip=tip,
        )
    )


def _node_layers(n: pd.DataFrame, x: alt.X, y: alt.Y) -> tuple[alt.Chart, alt.Chart]:
    """The nodes' layers: a circle per node filled by its kind (receiver, sender, logits), and its label."""
    dots = (
        alt.Chart(n)
        .mark_circle(size=260, opacity=1)
        .encode(
            x=x,
            y=y,
            fill=alt.Fill("kind:N", title="node", scale=colours.scale("node")),
            tooltip=[
                alt.Tooltip("label:N", title="node"),
                alt.Tooltip("x:Q", title="layer"),
                "kind:N",
                alt.Tooltip("direct:Q", format=".2%", title="direct effect"),
            ],
        )
    )
    labels = alt.Chart(n).mark_text(dy=-14, fontSize=11).encode(x=x, y=y, text="label:N")
    return dots, labels
