"""Unit tests of ``arithmech/report/charts/attention_chart.py``: what the attention charts show a reader."""
from __future__ import annotations

from factories import fake_roles

from arithmech.report.charts import attention_chart


def test_head_dropdown_names_heads_as_the_book_does():
    """Protects the one notation for components: the attention explorer's dropdown offers "head 0.1",
    not a bare "0.1", in layer-then-head order (head 1.2 after head 0.10), whether the chapter passes file ids or
    lets it list every head."""
    roles = fake_roles({(1, 2): 0.3, (0, 10): 0.2, (0, 1): 0.1}, role="A")
    pick = lambda c: c.to_dict()["params"][0]["bind"]["options"]
    assert pick(attention_chart.attention_roles_explorer(roles)) == ["head 0.1", "head 0.10", "head 1.2"]
    assert pick(attention_chart.attention_roles_explorer(roles, heads=["1.2", "0.1"])) == ["head 1.2", "head 0.1"]
