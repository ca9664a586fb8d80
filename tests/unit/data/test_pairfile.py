"""Unit tests of ``arithmech/data/pairfile.py``."""
from __future__ import annotations

import json

import pytest
from factories import BAD_FILES, GOOD

from arithmech.data import pairfile as data_pairfile

# ------------------------------------------------------------------------------------ pair schema


def test_schema_checker_agrees_with_jsonschema():
    """Protects: PAIR_FILE_SCHEMA is a valid JSON Schema and our small checker accepts exactly what the
    reference validator (jsonschema, draft 2020-12) accepts, on hand-written and the BAD_FILES rows."""
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(data_pairfile.PAIR_FILE_SCHEMA)
    ref = jsonschema.Draft202012Validator(data_pairfile.PAIR_FILE_SCHEMA)
    cases = [[GOOD], [], [GOOD, {"clean": 1}], {"a": 1}, [{**GOOD, "op": "x"}], [{**GOOD, "answer": "A" * 300}],
             [{**GOOD, "op_word": ""}], [{**GOOD, "id": ""}], [True], [{**GOOD, "extra": 1}], "text", None]
    for text, _ in BAD_FILES:
        try:
            cases.append(json.loads(text))
        except json.JSONDecodeError:
            pass
    for rows in cases:
        assert ref.is_valid(rows) == (not data_pairfile.schema_problems(rows)), rows


def test_pair_file_limits_are_checked_while_reading(tmp_path):
    """Protects the pair-file limits: a file over MAX_FILE_BYTES, with more than MAX_PAIRS pairs, a
    template over MAX_TEMPLATE_CHARS, or JSON nested deeper than MAX_DEPTH (10,000 levels used to end in a
    RecursionError) is one ValueError naming the file and the limit; brackets inside strings do not count."""
    import json

    from arithmech.data import pairfile
    pair = {"clean": "{A} plus {B} is", "corrupt": "{A} nothing {B} is", "op": "addition"}
    cases = {"big.json": (" " * (pairfile.MAX_FILE_BYTES + 1) + "[]", "bytes; at most"),
             "many.json": (json.dumps([pair] * (pairfile.MAX_PAIRS + 1)), f"at most {pairfile.MAX_PAIRS}"),
             "long.json": (json.dumps([{**pair, "clean": "{A} plus {B} is" + " x" * pairfile.MAX_TEMPLATE_CHARS}]),
                           "characters; at most"),
             "deep.json": ("[" * 10_000 + "]" * 10_000, "deeper than")}
    for name, (text, match) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=match):
            pairfile.load_pair_file(tmp_path / name)
    (tmp_path / "ok.json").write_text(json.dumps([{**pair, "clean": "[[[[[ {A} plus {B} is", "corrupt": "[[[[[ {A} nothing {B} is"}]))
    assert pairfile.text_depth(tmp_path / "ok.json") == 2
