"""Unit tests of ``arithmech/report/views/widgets.py``."""
from __future__ import annotations


def test_widget_runs_without_a_browser(word_llama_fig8):
    """Protects the ipywidgets explorer: toggling the knockout fires the observer, which recomputes through
    the same callbacks and fills the output area (no frontend, no kernel)."""
    from arithmech.report.views import widgets
    model, tok, samples = word_llama_fig8
    w = widgets.explorer(model, tok, key_heads=[(0, 1), (2, 3)], reference=samples, run=False)
    assert w.output.outputs == () and w.head.value == (0, 1)
    assert w.head.options[0][0] == "head 0.1 (key)" and w.knockout.description.startswith("knock out the key heads")
    top = widgets.explorer(model, tok, key_heads=[(0, 1)], run=False, heads_label="top 10")   # none is key
    assert top.head.options[0][0] == "head 0.1 (top 10)" and "key" not in top.head.options[0][0]
    w.prompt.value, w.counterfactual.value = "4 + 3 =", "4 @ 3 ="
    w.knockout.value = True                                   # observer → refresh()
    assert set(w.tables) == {"top", "numbers", "attention"}
    assert set(w.tables["top"].condition) == {"intact", "knockout"}
    assert set(w.tables["top"].input) == {"prompt", "counterfactual"}
    assert len(w.output.outputs) == 3 and "text/html" in w.output.outputs[0]["data"]
