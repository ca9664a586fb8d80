"""Unit tests of ``arithmech/steps/identify.py``."""
from __future__ import annotations


def test_public_names_stay_importable_from_identify():
    """Protects the book's and the packages' imports: effects_frame, ranking and key_heads moved to
    methods/effects.py and are the same objects under arithmech.steps.identify."""
    from arithmech.methods import effects
    from arithmech.steps import identify
    assert identify.effects_frame is effects.effects_frame and identify.ranking is effects.ranking
    assert identify.key_heads is effects.key_heads
