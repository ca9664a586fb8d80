"""Unit tests of ``arithmech/circuits/graph.py``."""
from __future__ import annotations

import pandas as pd
import pytest

from arithmech.circuits import graph


def _frames(edge: float, se: float):
    eap = pd.DataFrame({"layer": [0, 0, 1, 1], "head": ["0", "mlp", "0", "mlp"], "exact": [-0.01, -0.2, -0.05, 0.0]})
    up = pd.DataFrame([{"receiver": "1.0", "position": "END", "path": p, "sender": s, "sender_layer": 0, "effect": e,
                        "effect_se": se, "n": 64} for s, e in (("0.0", edge), ("MLP 0", edge / 2)) for p in ("q", "k", "v")])
    return eap, up


@pytest.mark.parametrize("edge,se,want", [(-0.01, 0.001, "holds"), (-0.09, 0.001, "does not hold"),
                                          (-0.05, 0.01, "inconclusive")])
def test_verdict_rule(edge, se, want):
    """Protects: the chapter's rule — the largest single upstream path against the weakest receiver's
    direct effect (here 5%), with its 95% interval — gives holds / does not hold / inconclusive."""
    eap, up = _frames(edge, se)
    v = graph.verdict(eap, up)
    assert v["verdict"] == want and v["D"] == pytest.approx(0.05) and v["E"] == pytest.approx(abs(edge))


def test_graph_sums_the_drawn_paths():
    """Protects: the graph's upstream edge weight is the sum of its q, k, v paths."""
    eap, up = _frames(-0.02, 0.001)
    nodes, edges = graph.graph(eap, up, n_layers=2)
    assert set(nodes.node) == {"1.0", "0.0", "MLP 0", "logits"}
    w = edges[(edges.kind == "upstream") & (edges.source == "0.0")].weight.iloc[0]
    assert w == pytest.approx(-0.06)


def test_chart_and_verdict_name_components_as_the_book_does():
    """Protects the one notation for components (a bare "0.0" reads like a number): the graph keeps the
    files' ids, while the drawn node labels, the edge tooltips and the verdict's strongest path say
    "head 1.0", "MLP 0" and "logits"."""
    eap, up = _frames(-0.02, 0.001)
    nodes, edges = graph.graph(eap, up, n_layers=2)
    spec = graph.circuit_chart(nodes, edges, "toy").to_dict()
    data = [pd.DataFrame(rows) for rows in spec["datasets"].values()]
    labels = set().union(*(set(d["label"]) for d in data if "label" in d))
    assert labels == {"head 1.0", "head 0.0", "MLP 0", "logits"}
    ends = set().union(*(set(d["source_label"]) | set(d["target_label"]) for d in data if "source_label" in d))
    assert ends == labels
    assert graph.verdict(eap, up)["E_path"].startswith("head 0.0 → head 1.0 (")


def test_verdict_and_graph_take_every_position():
    """Protects the every-position rule: a key path at the operator position larger than every END path
    decides E (and the verdict) and is named with its position; NaN rows (a role without a token) are left out;
    the graph's k is the sum of the k paths over positions."""
    eap, up = _frames(-0.01, 0.001)
    extra = pd.DataFrame([{"receiver": "1.0", "position": pos, "path": "k", "sender": "0.0", "sender_layer": 0,
                           "effect": e, "effect_se": 0.001, "n": n} for pos, e, n in (("operator", -0.09, 64),
                                                                                     ("A", float("nan"), 0))])
    v = graph.verdict(eap, pd.concat([up, extra], ignore_index=True))
    assert v["verdict"] == "does not hold" and v["E"] == pytest.approx(0.09)
    assert v["E_path"] == "head 0.0 → head 1.0 (k at operator)"
    assert graph.verdict(eap, up)["verdict"] == "holds"
    _, edges = graph.graph(eap, pd.concat([up, extra], ignore_index=True), n_layers=2)
    e = edges[(edges.kind == "upstream") & (edges.source == "0.0")].iloc[0]
    assert e.k == pytest.approx(-0.10) and e.weight == pytest.approx(-0.12)
