"""The accuracy table (arithmech.steps.accuracy) scores identify's answer token: the rule is the config's, it is
recorded in run.json, a reused table must have been scored with it, and the paper's rule still gives the old table."""
from __future__ import annotations

import pandas as pd
import pytest

from arithmech.core import results
from arithmech.data import pairs
from arithmech.identify.config import Identify
from arithmech.pipeline.ensure import ensure
from arithmech.prompts.config import Accuracy
from arithmech.steps import accuracy

# The table of the embedded model scored with "first", one prompt per template, seed 0:
# per operation n, correct and mean p({C}).
# The embedded model, one prompt per template, scored with the paper's first token. Re-measured once when
# division pairs began drawing a uniform quotient (the templates share one seeded stream, so every later draw
# moved: addition went from 21/21 to 20/21); before that: 21/21, 9/9, 9/9, 8/9.
FIRST_TOKEN_TABLE = {"addition": (21, 20, 0.96793), "subtraction": (9, 9, 0.99365),
                     "multiplication": (9, 9, 0.98405), "division": (9, 8, 0.88697)}


@pytest.fixture
def drawn(monkeypatch):
    """Every sample the accuracy table draws, in order (make_pairs wrapped, its output unchanged)."""
    seen = []
    real = pairs.make_pairs

    def spy(*args, **kw):
        out = real(*args, **kw)
        seen.extend(out[0])
        return out
    monkeypatch.setattr(accuracy.pairs, "make_pairs", spy)
    return seen


def test_default_rule_is_identifys_and_the_cli_offers_it():
    """Protects one answer token everywhere: Accuracy's answer_token is Identify's field (default,
    help and choices), so the table scores the token identify measures unless told otherwise."""
    from arithmech.cli import build_parser
    a, i = Accuracy.__dataclass_fields__["answer_token"], Identify.__dataclass_fields__["answer_token"]
    assert a.default == i.default == Accuracy().answer_token == "last-digit"
    assert dict(a.metadata) == dict(i.metadata)
    args = build_parser().parse_args(["accuracy-by-template", "--answer-token", "first"])
    assert args.answer_token == "first"
    with pytest.raises(ValueError, match="--answer-token 'last'"):
        Accuracy(answer_token="last")


def test_table_draws_and_records_the_configured_rule(tmp_path, embedded_model, drawn):
    """Protects the threading: the samples the table scores carry the config's rule (under last-digit the
    prompts carry the leading digits of every two-digit answer), run.json records it, and ensure reuses the
    table only for that rule."""
    net, tok, _ = embedded_model
    c = Accuracy(results=str(tmp_path), n_per_template=1)
    df = accuracy.run(c, net, tok).table
    assert drawn and {s.answer_token for s in drawn} == {"last-digit"}
    assert all(s.clean.endswith(s.target[:-1]) and s.answer == s.target[-1] for s in drawn)
    assert list(df.example[df.template != "(all)"]) == [s.clean for s in drawn]
    folder = results.model_folder(tmp_path, "embedded")
    assert results.read_run(folder)["steps"]["accuracy"]["parameters"] == {"n_per_template": 1, "seed": 0,
                                                                    "answer_token": "last-digit"}
    drawn.clear()
    ensure(c, model=net, tok=tok)
    assert not drawn                                             # same rule: reused
    ensure(c.replace(answer_token="first"), model=net, tok=tok)
    assert drawn and {s.answer_token for s in drawn} == {"first"}
    assert results.read_run(folder)["steps"]["accuracy"]["parameters"]["answer_token"] == "first"


def test_first_rule_gives_the_table_of_before(tmp_path, embedded_model):
    """Protects the old numbers: switched to the paper's first token, the table equals the one the step wrote
    before the rule was configurable (FIRST_TOKEN_TABLE, the embedded model, one prompt per template)."""
    net, tok, _ = embedded_model
    df = accuracy.run(Accuracy(results=str(tmp_path), n_per_template=1, answer_token="first"), net, tok).table
    whole = df[df.template == "(all)"].set_index("op")
    assert set(whole.index) == set(FIRST_TOKEN_TABLE)
    for op, (n, k, p) in FIRST_TOKEN_TABLE.items():
        assert (whole.loc[op, "n"], whole.loc[op, "correct"]) == (n, k)
        assert whole.loc[op, "mean_p_answer"] == pytest.approx(p, abs=1e-4)


def test_a_record_without_the_rule_is_not_reused(tmp_path, embedded_model):
    """Protects the reuse check after the shipped records' migration: a table whose run.json lacks
    answer_token (made before the rule was recorded) is reused for no rule — not even "first", the value such
    records were once assumed to have — so ensure remakes it, and the rule a page names (its Result's config) is the
    one the record holds, never a guess."""
    net, tok, _ = embedded_model
    c = Accuracy(results=str(tmp_path), n_per_template=1, answer_token="first")
    folder = results.model_folder(tmp_path, "embedded")
    df = accuracy.accuracy_by_template(net, tok, "all", 1, 0, answer_token="first")
    results.write_step(folder, "accuracy", {"accuracy_by_template.csv": df}, {"parameters": {"n_per_template": 1, "seed": 0}},
                 model_name="embedded")
    assert not results.made_with(folder, "accuracy", accuracy.recorded(c))
    assert not results.made_with(folder, "accuracy", accuracy.recorded(c.replace(answer_token="last-digit")))
    assert ensure(c, model=net, tok=tok).config.answer_token == "first"
    assert results.read_run(folder)["steps"]["accuracy"]["parameters"]["answer_token"] == "first"


def test_the_result_read_back_is_what_the_run_wrote(tmp_path, embedded_model):
    """Protects the typed Result: :func:`run` returns the table it computed (the same draw scored again
    gives it), read back from its file, with the config; ``ensure`` reads the same Result back when it reuses it."""
    net, tok, _ = embedded_model
    c = Accuracy(results=str(tmp_path), n_per_template=1)
    got = accuracy.run(c, net, tok)
    assert isinstance(got, accuracy.Result) and got.config == c
    want = accuracy.accuracy_by_template(net, tok, "all", 1, c.seed, answer_token=c.answer_token)
    pd.testing.assert_frame_equal(got.table.fillna({"example": ""}), want)  # "(all)" rows: no example, empty in csv
    again = ensure(c, model=net, tok=tok)
    assert again.table.equals(got.table) and again.config == c
