"""Unit tests of the component names of ``arithmech/core/names.py`` (how a reader sees a head or an MLP)."""
from __future__ import annotations

import numpy as np

from arithmech.core.names import component, component_label, components, stages


def test_one_notation_for_components():
    """Protects the book's one notation (bare "0.0" or "27.4" read like numbers): a head is
    "head 13.11", an MLP "MLP 17", whether given as (layer, head), numpy integers, a head id from a results
    file or the "mlp" head of effects.csv; a name that is not an id ("logits") is left as it is."""
    assert component(13, 11) == component(np.int64(13), "11") == component_label("13.11") == "head 13.11"
    assert component(17) == component(17, "mlp") == component_label("MLP 17") == "MLP 17"
    assert component_label("0.0") == "head 0.0" and component_label("logits") == "logits"
    assert component_label("0.5x") == "0.5x"
    assert components([(1, 2), (3, "mlp"), "27.4"]) == "head 1.2, MLP 3, head 27.4" and components([]) == "none"


def test_stages_read_as_the_paper_writes_them():
    """Protects one way to write start–inflection–end layers (the claims table, Analyze and the SmolLM2
    appendix once wrote them with "–", "-" and "-"): en dashes, each layer as ``fmt`` writes it."""
    assert stages((1, 19, 20)) == "1–19–20" and stages([np.int64(14), 18, 22]) == "14–18–22"
    assert stages((1, 16, 32), lambda x: f"{x / 32:.2f}") == "0.03–0.50–1.00"
