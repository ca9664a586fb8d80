"""Unit tests of ``arithmech/methods/explorer.py``."""
from __future__ import annotations

import pandas as pd
import pytest

from arithmech.data.draw import Draw
from arithmech.methods import explorer


def test_guess_positions_for_free_prompts():
    """Protects the explorer's role guess: first/second digit runs are A/B, operator words/symbols found."""
    toks = ["<s>", "Q", ":", "What", "is", "4", "2", "plus", "3", "?", "A", ":"]
    assert explorer.guess_positions(toks) == {"A": [5, 6], "B": [8], "operator": [7], "end": 11}
    assert explorer.guess_positions(["<s>", "▁7", "▁+", "▁5", "▁="])["operator"] == [2]


def _effects() -> pd.DataFrame:
    rows = [("all", 0, "0", -0.30), ("all", 0, "1", -0.03), ("all", 1, "0", -0.012), ("all", 1, "1", 0.02),
            ("all", 0, "mlp", -0.5), ("addition", 0, "0", -0.9)]
    df = pd.DataFrame(rows, columns=["task", "layer", "head", "effect"])
    return df.assign(effect_hi=df.effect + 0.001)       # the interval's upper end, as effects.csv v2 has it


def test_head_steps_rank_heads_and_mark_their_first_step():
    """Protects the slider's meaning: heads ranked by effect (MLPs and other tasks left out), key_at = the first
    threshold the effect is below (len(thresholds) = never), and bad thresholds refused with one message."""
    h = explorer.head_steps(_effects(), [-0.1, -0.02, -0.01])
    assert list(h.name) == ["0.0", "0.1", "1.0", "1.1"] and list(h.key_at) == [0, 1, 2, 3]
    assert explorer.step_heads(h, 3) == [[(0, 0)], [(0, 0), (0, 1)], [(0, 0), (0, 1), (1, 0)]]
    for bad in ([], [-0.01, -0.1], [-0.1, 0.0], [-0.1, -0.1]):
        with pytest.raises(ValueError, match="strict to loose"):
            explorer.head_steps(_effects(), bad)
    with pytest.raises(ValueError, match="no head rows"):
        explorer.head_steps(_effects(), [-0.1], task="division")



def test_attention_is_stored_for_every_head_a_step_knocks_out():
    """Protects the attention view's rows: every head some slider step knocks out has its attention
    stored, even past ``max_heads`` (the loosest step here knocks out three heads, with ``max_heads=1``), and at
    least the ``max_heads`` strongest heads are stored for a click; heads no step reaches beyond those are not."""
    h = explorer.head_steps(_effects(), [-0.1, -0.02, -0.01])
    assert explorer.attention_heads(h, 3, max_heads=1) == [(0, 0), (0, 1), (1, 0)]
    assert explorer.attention_heads(h, 1, max_heads=2) == [(0, 0), (0, 1)]
    assert explorer.attention_heads(h, 1, max_heads=1) == [(0, 0)]

# The explorer's data for the embedded model drawn with "first" (the paper's first token): identify on addition and
# subtraction (16 pairs, seed 0, "first"), thresholds [-0.05, -0.01], 6 prompts, 8 reference samples, 2 heads.
FIRST_TOKEN_PAGE = {
    "prompts": ["7 + 7 =", "2 plus 6 equals to", "The addition of 8 and 6 is", "The addition of 9 and 5 equals to",
                "3 plus 1 is equal to", "Q: How much is 5 plus 8? A:"],
    "answers": ["1", "8", "1", "1", "4", "1"],
    "correct": [6, 2, 2],                                        # intact, step 0, step 1
    "top1": [0.9992, 0.9967, 0.9991, 0.9994, 0.9942, 0.9993],     # intact top-1 probability per prompt
}


@pytest.fixture(scope="module")
def explorer_folder(tmp_path_factory):
    """The eager embedded model and a results folder with a small identify run (effects, prompts)."""
    from arithmech.core.models import load_model
    from arithmech.identify import pipeline, run
    net, tok, _ = load_model("embedded", attn_implementation="eager")
    res = pipeline.identify(net, tok, ["addition", "subtraction"], n_samples=16, seed=0, knockout=False, transfer=False,
                     prob=False, answer_token="first")
    folder = tmp_path_factory.mktemp("explorer")
    run.write_results(res, folder)
    return net, tok, folder


def _page(explorer_folder, rule):
    net, tok, folder = explorer_folder
    settings = explorer.PageSettings((-0.05, -0.01), n_prompts=6, n_reference=8, max_heads=2, seed=0, draw=Draw(rule, 0, 1))
    return explorer.page_data(net, tok, folder, settings)


def test_page_draws_and_records_the_configured_rule(explorer_folder):
    """Protects one answer token everywhere: the explorer's prompts are drawn under the chapter's
    rule, whose default is identify's, and its prompts table records it; under last-digit a prompt carries the
    answer's leading digits and its answer is the last digit, as make_pairs draws them."""
    from arithmech.data import pairs
    from arithmech.identify.config import Identify
    from arithmech.report.build.chapters import Explorer
    assert Explorer().answer_token == Identify().answer_token == "last-digit"
    _, tok, _ = explorer_folder
    _, d = _page(explorer_folder, "last-digit")
    want, _ = pairs.make_pairs(tok, "all", n=6, seed=0, draw=pairs.Draw("last-digit", 0, 1))
    p = d["prompts"]
    assert set(p.answer_token) == {"last-digit"}
    assert list(p.prompt) == [s.clean for s in want] and list(p.answer) == [s.target[-1] for s in want]
    assert p.prompt[0] == "7 + 7 = 1" and p.answer[0] == "4"          # 14: "1" carried, "4" scored


def test_first_rule_gives_the_page_of_before(explorer_folder):
    """Protects the old page: switched to the paper's first token, the explorer's prompts, answers, counts and
    probabilities equal those it computed before the rule was configurable (FIRST_TOKEN_PAGE)."""
    _, d = _page(explorer_folder, "first")
    assert list(d["prompts"].prompt) == FIRST_TOKEN_PAGE["prompts"]
    assert list(d["prompts"].answer) == FIRST_TOKEN_PAGE["answers"] and set(d["prompts"].answer_token) == {"first"}
    assert list(d["steps"].correct) == FIRST_TOKEN_PAGE["correct"]
    intact = d["top"][d["top"].step == -1].sort_values("id")
    assert [p[0] for p in intact.probs] == pytest.approx(FIRST_TOKEN_PAGE["top1"], abs=2e-4)
