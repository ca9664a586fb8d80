"""The embedded model's held-out declaration (``arithmech/embedded/heldout.py``): what it holds out, and that
the training stream never shows it. Sentences are parsed back with regular expressions built here from the
template texts, not with the drawing code that made them."""

from __future__ import annotations

import json
import re

import pytest

from arithmech.core.names import EMBEDDED_DIR
from arithmech.data import heldout as declared
from arithmech.data import templates
from arithmech.data.answers import OPERANDS, answer_rule
from arithmech.data.heldout import is_heldout_pair
from arithmech.embedded import heldout, train

POOL_FIELDS = {"NAME": templates.NAMES, "NAME2": templates.NAMES, "OBJECT": templates.OBJECTS, "EVENT": templates.EVENTS, "MONTH": templates.MONTHS}


def sentence_regex(t: templates.Template) -> re.Pattern:
    """``t.clean + t.joiner + answer`` as a full-match regex with named groups A, B, C."""
    out, pos = "", 0
    for m in re.finditer(r"\{([A-Z_0-9]+)\}", t.clean):
        out += re.escape(t.clean[pos:m.start()])
        f = m.group(1)
        if f in ("A", "B"):
            out += rf"(?P<{f}>\d)"
        elif f == "YYY":
            out += r"\d{3}"
        elif f == "OP":
            words = templates.POOLS[t.op_word[1:-1]] if t.op_word.startswith("{") else [t.op_word]
            out += "(?:" + "|".join(map(re.escape, words)) + ")"
        else:
            out += "(?:" + "|".join(map(re.escape, POOL_FIELDS[f])) + ")"
        pos = m.end()
    return re.compile(out + re.escape(t.clean[pos:]) + re.escape(t.joiner) + r"(?P<C>\d+)")


TRAINED = [(t, sentence_regex(t)) for t in templates.FIG8 + templates.FIG10]


HELD = [(t, sentence_regex(t)) for t in declared.HELDOUT_TEMPLATES]


def test_training_stream_never_shows_a_heldout_pair_or_phrasing():
    """Protects: the first 300 training batches (the stream `train` draws, seed 0) hold no held-out operand pair
    in any template of its operation and no held-out phrasing; every arithmetic sentence parses as a training
    template with the right answer, every other one is a generic fact."""
    facts = {f"{p} {a}" for p, a in train.GENERIC_FACTS}
    n_arith, seen = 0, {op: set() for op in templates.OPS}
    for _, batch in zip(range(300), train.training_stream(seed=0, batch_size=64)):
        for text in batch:
            assert not any(rx.fullmatch(text) for _, rx in HELD), text
            hits = [(t, m) for t, rx in TRAINED if (m := rx.fullmatch(text))]
            if not hits:
                assert text in facts, text
                continue
            n_arith += 1
            for t, m in hits:
                a, b, c = int(m["A"]), int(m["B"]), int(m["C"])
                assert answer_rule(t)(a, b) == c, text
                assert (a, b) not in declared.HELDOUT_PAIRS[t.op], (text, t.id)
                seen[t.op].add((a, b))
    assert n_arith > 0.8 * 300 * 64
    for op, pairs in seen.items():     # the stream does reach every trained pair: the check above bites
        trained = {(a, b) for a in OPERANDS for b in OPERANDS if answer_rule(
            next(t for t in templates.FIG8 if t.op == op))(a, b) is not None} - declared.HELDOUT_PAIRS[op]
        assert pairs == trained, op


def test_heldout_pairs_are_mirrored_stratified_and_about_15_percent():
    """Protects: the declared held-out pairs: valid for their operation, 10-20 % of its pairs, both answer lengths
    held out where they exist, and for + and x every pair held out with its mirror (no trivial leak)."""
    for op, held in declared.HELDOUT_PAIRS.items():
        rule = answer_rule(next(t for t in templates.FIG8 if t.op == op))
        valid = [(a, b) for a in OPERANDS for b in OPERANDS if rule(a, b) is not None]
        assert held <= set(valid) and 0.10 <= len(held) / len(valid) <= 0.20, (op, len(held), len(valid))
        lengths = {len(str(rule(a, b))) for a, b in valid}
        assert {len(str(rule(a, b))) for a, b in held} == lengths, op
        if op in ("addition", "multiplication"):
            assert all((b, a) in held for a, b in held), op
    assert heldout.declaration()["n_pairs"] == {"addition": [12, 81], "subtraction": [7, 45],
                                          "multiplication": [14, 81], "division": [3, 23]}


def test_heldout_phrasings_are_new_known_words_and_no_prefix_of_training():
    """Protects: each held-out phrasing is a new sentence form (no training template's text), uses only words the
    tokenizer knows (no <unk>), and is no prefix of a training template's prompt (a held-out prompt must not be a
    training sentence cut short, whose continuation training fixed), on 10 seeded prompts each."""
    tok = train.build_tokenizer()
    trained_prompts = {t.clean for t in templates.FIG8 + templates.FIG10 + templates.EXPONENTIATION}
    items = heldout.split_items("heldout_phrasings", seed=3, n_per_template=10)
    assert len(items) == 10 * len(declared.HELDOUT_TEMPLATES)
    for t in declared.HELDOUT_TEMPLATES:
        assert t.clean not in trained_prompts
        assert not any(c.startswith(t.clean) for c in trained_prompts), t.id
    for it in items:
        assert tok.unk_token_id not in tok(it["prompt"])["input_ids"], it["prompt"]
        assert not any(rx.fullmatch(it["prompt"] + it["joiner"] + it["target"]) for _, rx in TRAINED)
        assert not is_heldout_pair(it["op"], it["a"], it["b"])


def test_split_items_cover_every_heldout_pair_and_keep_in_distribution_clean():
    """Protects: the held-out-pair split holds every held-out pair in every training template whose rule allows
    it (twice), and the in-distribution split none."""
    items = heldout.split_items("heldout_pairs", seed=1)
    expected = sum(2 for t in templates.FIG8 + templates.FIG10 for p in declared.HELDOUT_PAIRS[t.op] if answer_rule(t)(*p) is not None)
    assert len(items) == expected
    assert all(is_heldout_pair(it["op"], it["a"], it["b"]) for it in items)
    assert not any(is_heldout_pair(it["op"], it["a"], it["b"]) for it in heldout.split_items("in_distribution"))
    with pytest.raises(ValueError, match="unknown split"):
        heldout.split_items("train")


@pytest.mark.parametrize("k, n, expect", [(99, 100, "inconclusive"), (1000, 1000, "holds"), (80, 100, "does not hold")])
def test_verdict_follows_the_rule(k, n, expect):
    """Protects: the card's >= 99 % verdict: holds only when the whole Wilson interval is at or above 99 %."""
    assert heldout.verdict(heldout.proportion([True] * k + [False] * (n - k))) == expect


def test_model_card_matches_recorded_accuracy():
    """Protects: the model card and accuracy.json shipped with the model report the same numbers: the
    in-distribution accuracy (>= 99 %), every held-out split's exact-match cell and verdict, and the held-out
    declaration that the code makes today (the shipped model was trained without exactly these)."""
    from arithmech.embedded import heldout
    acc = json.loads((EMBEDDED_DIR / "accuracy.json").read_text())
    card = (EMBEDDED_DIR / "README.md").read_text()
    assert acc["arithmetic_answer_token_accuracy"] >= 0.99
    assert f"{acc['arithmetic_answer_token_accuracy']:.1%}" in card
    assert "python -m arithmech train-embedded" in card
    assert acc["heldout"]["declaration"] == json.loads(json.dumps(heldout.declaration()))
    for split, r in acc["heldout"]["splits"].items():
        p = r["exact_match"]
        assert f"| {heldout.LABELS[split]} | {p['n']} |" in card and f"{heldout.interval_cell(p)} | {heldout.verdict(p)} |" in card
        assert p["k"] <= r["answer_token"]["n"] == p["n"] and p["acc"] == round(p["k"] / p["n"], 4)
    assert "arithmech/embedded/heldout.py" in card
