"""Unit tests of ``arithmech/data/pairfile.py``."""
from __future__ import annotations

import json

import pytest

from arithmech.data import pairfile as PF

from factories import GOOD, BAD_FILES


# ------------------------------------------------------------------------------------ pair schema


def test_schema_checker_agrees_with_jsonschema():
    """Protects: PAIR_FILE_SCHEMA is a valid JSON Schema and our small checker accepts exactly what the
    reference validator (jsonschema, draft 2020-12) accepts, on hand-written and the BAD_FILES rows."""
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(PF.PAIR_FILE_SCHEMA)
    ref = jsonschema.Draft202012Validator(PF.PAIR_FILE_SCHEMA)
    cases = [[GOOD], [], [GOOD, {"clean": 1}], {"a": 1}, [{**GOOD, "op": "x"}], [{**GOOD, "answer": "A" * 300}],
             [{**GOOD, "op_word": ""}], [{**GOOD, "id": ""}], [True], [{**GOOD, "extra": 1}], "text", None]
    for text, _ in BAD_FILES:
        try:
            cases.append(json.loads(text))
        except json.JSONDecodeError:
            pass
    for rows in cases:
        assert ref.is_valid(rows) == (not PF.schema_problems(rows)), rows
