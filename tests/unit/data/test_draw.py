"""Unit tests of ``arithmech/data/draw.py``: the draw settings, checked once, passed explicitly."""
from __future__ import annotations

import pytest

from arithmech.data import pairs, shots
from arithmech.data.draw import Draw
from arithmech.identify.config import Identify, Stability
from arithmech.prompts.config import Accuracy


@pytest.mark.parametrize("args,match", [
    (("last", 0, 1), "answer_token='last': use one of last-digit, single-token, first"),
    (("first", -1, 1), "shots=-1: the number of solved examples is a whole number, 0 or more"),
    (("first", 2, 0), "example_sets=0: at least one set of examples per template"),
    (("first", 0, None), "example_sets=None: at least one set of examples per template"),
    (("first", True, 1), "shots=True"),
])
def test_a_wrong_draw_is_refused_when_made(args, match):
    """Protects the one check of the draw settings: a wrong answer token, a negative or non-integer number of
    shots, or no set of examples (none, or 0, at any number of shots) is one ValueError when the Draw is made,
    naming the value and what to do (the four scattered checks and the silent defaults it replaces)."""
    with pytest.raises(ValueError, match=match):
        Draw(*args)


@pytest.mark.parametrize("args", [("first",), ("first", 2), ("first", 0)])
def test_a_draw_has_no_default_of_its_own(args):
    """Protects one default per setting: the shots and the example sets are always given (the step
    configs' defaults are the only ones), so a draw that leaves one out is a TypeError, not a zero-shot draw or
    one set of examples picked below the config (``example_sets or 1`` was)."""
    with pytest.raises(TypeError, match="missing"):
        Draw(*args)


def test_make_pairs_takes_only_a_draw():
    """Protects the explicit path: the drawing functions take a Draw and nothing else names the answer token,
    so a call with the old keywords fails loudly instead of falling back to a default."""
    with pytest.raises(TypeError):
        pairs.make_pairs(None, "addition", n=1, answer_token="first")          # the old keyword is gone
    with pytest.raises(TypeError, match="pass an arithmech.data.draw.Draw"):
        pairs.make_pairs(None, "addition", n=1, draw="first")


def test_the_example_sets_travel_with_the_draw_not_a_context(embedded_tokenizer):
    """Protects the Draw's own example sets (no ContextVar): the sets a few-shot draw uses are the Draw's own, so
    the same Draw gives the same pairs wherever it is called, and one set and 16 sets give different prompts."""
    tok = embedded_tokenizer
    one = pairs.make_pairs(tok, "addition", n=42, seed=0, draw=Draw("last-digit", 2, 1))[0]
    many = pairs.make_pairs(tok, "addition", n=42, seed=0, draw=Draw("last-digit", 2, shots.EXAMPLE_SETS))[0]
    again = pairs.make_pairs(tok, "addition", n=42, seed=0, draw=Draw("last-digit", 2, 1))[0]
    assert [s.to_json() for s in one] == [s.to_json() for s in again]
    assert len({s.prefix for s in one}) < len({s.prefix for s in many})
    assert Draw("last-digit", 2, 1).example_set(25, 21) is None and Draw("last-digit", 2, 16).example_set(25, 21) == 1


def test_the_step_configs_build_the_draw():
    """Protects where the draw settings come from: each step config's own fields, with no second default below
    them (identify's, stability's fixed token, accuracy's zero-shot draw), and what run.json records of them."""
    assert Identify().to_draw() == Draw("last-digit", 0, shots.EXAMPLE_SETS)
    c = Identify(answer_token="first", shots=2, example_sets=3)
    assert c.to_draw() == Draw("first", 2, 3) and c.to_draw().recorded() == {"examples": "3 sets per template"}
    assert Draw("first", 0, 3).recorded() == {} == Draw("first", 0, 1).recorded()
    assert Draw("first", 2, 1).recorded() == {"examples": "1 set per template"}
    assert Stability(shots=4, example_sets=1).to_draw() == Draw("last-digit", 4, 1)
    assert Accuracy(answer_token="single-token").to_draw() == Draw("single-token", 0, 1)
    k = Identify(knockout_samples=8, knockout_positions="both", ks=(1, 2)).knockout_settings()
    assert (k.samples, k.positions, k.ks, k.position_settings) == (8, "both", (1, 2), ["end", "all"])


def test_a_record_gives_back_the_draw_it_was_made_with():
    """Protects the later steps that redraw identify's prompts (faithfulness, the live explorer's pool): the draw
    comes from the record — its answer token, shots and example sets — and a record without an answer token or
    shots (once read as zero-shot), or a few-shot one without its example sets, is refused rather than given
    one (the live explorer used to assume "first", faithfulness "last-digit"; one set was once assumed)."""
    c = Identify(answer_token="first", shots=2, example_sets=3)
    rec = {"answer_token": "first", "shots": 2, **c.to_draw().recorded()}
    assert Draw.from_record(rec) == c.to_draw()
    assert Draw.from_record({"answer_token": "last-digit", "shots": 0}) == Draw("last-digit", 0, 1)
    with pytest.raises(ValueError, match="names no shots: re-run"):
        Draw.from_record({"answer_token": "last-digit"})
    with pytest.raises(ValueError, match="names no examples: re-run"):
        Draw.from_record({"answer_token": "last-digit", "shots": 4})
    with pytest.raises(ValueError, match="names no answer_token: re-run"):
        Draw.from_record({"shots": 0})
