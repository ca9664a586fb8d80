"""Unit tests of ``arithmech/report/charts/plots.py``: what the charts show a reader."""
from __future__ import annotations

import pandas as pd
from factories import fake_roles

from arithmech.report.charts import plots


def test_head_dropdown_names_heads_as_the_book_does():
    """Protects the one notation for components (issue #27): the attention explorer's dropdown offers "head 0.1",
    not a bare "0.1", in layer-then-head order (head 1.2 after head 0.10), whether the chapter passes file ids or
    lets it list every head."""
    roles = fake_roles({(1, 2): 0.3, (0, 10): 0.2, (0, 1): 0.1}, role="A")
    pick = lambda c: c.to_dict()["params"][0]["bind"]["options"]
    assert pick(plots.attention_roles_explorer(roles)) == ["head 0.1", "head 0.10", "head 1.2"]
    assert pick(plots.attention_roles_explorer(roles, heads=["1.2", "0.1"])) == ["head 1.2", "head 0.1"]


def test_layer_axes_have_whole_number_ticks():
    """Protects integer axes (issue #27: half-integer ticks): the MLP charts' layer axis and Table 2's tuned-heads
    axis tick whole numbers only, printed without decimals."""
    mlp = pd.DataFrame([{"layer": l, "quantity": q, "value": 0.1 * l, "sem": 0.01, "std": 0.02}
                        for l in range(3) for q in ("in_A", "in_B")])
    layers = plots.mlp_in_chart(mlp).to_dict()["layer"]
    assert {(l["encoding"]["x"]["axis"]["tickMinStep"], l["encoding"]["x"]["axis"]["format"])
            for l in layers[:2]} == {(1, "d")}
    ours = pd.DataFrame({"heads": [1, 2, 4], "two-digit (math)": [10, 20, 30], "generic facts": [50, 50, 49],
                         "samples/s": [9, 8, 7]})
    acc = plots.ablation_chart(ours).to_dict()["hconcat"][0]["vconcat"][0]
    assert acc["encoding"]["x"]["axis"] == {"format": "d", "tickMinStep": 1}
