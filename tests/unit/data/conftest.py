"""Fixtures of the data tests: ``tok`` is the session's embedded tokenizer (tests/conftest.py)."""
from __future__ import annotations

import pytest


@pytest.fixture
def tok(embedded_tokenizer):
    """The embedded model's word-level tokenizer, built in code (no model load)."""
    return embedded_tokenizer
