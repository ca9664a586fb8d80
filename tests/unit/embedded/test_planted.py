"""The planted model's recipe (arithmech.embedded.planted): the data and its held-out splits and the construction
that fixes the circuit in the weights (random weights; ``test_planted_truth.py`` checks the shipped ones), and the
scoring of a method's heads (arithmech.embedded.planted_truth.score_heads)."""

from __future__ import annotations

import random

import pytest
import torch

from arithmech.embedded import planted, planted_truth


def test_heldout_pairs_are_never_trained_and_mirrors_go_together():
    """Protects the held-out split: no training sentence uses a held-out pair, a held-out + or x pair is held out
    with its mirror, and about HELDOUT_FRACTION of each operation's 0..99 pairs are held out."""
    for op in planted.OPERATIONS:
        held, valid = planted.heldout_pairs(op), planted.valid_pairs(op)
        assert abs(len(held) / len(valid) - planted.HELDOUT_FRACTION) < 0.01
        if op in planted.COMMUTATIVE:
            assert all((b, a) in held for a, b in held)
    rng = random.Random(0)
    for _ in range(3000):
        t = rng.choice(planted.TRAIN_TEMPLATES)
        a, b = planted.draw_pair(t.op, rng, small=rng.random() < 0.5)
        assert (a, b) not in planted.heldout_pairs(t.op)


def test_training_text_uses_known_words_and_slot_words_are_in_the_vocabulary():
    """Protects the tokenizer: every slot word is one token of the vocabulary and no training sentence, held-out
    phrasing or lacking-skill prompt hits <unk>."""
    tok = planted.build_tokenizer()
    assert len(planted.slot_ids(tok)) == len(planted.SLOT_WORDS)
    texts = [p + " " + a for p, a in next(planted.training_stream(0, 500))]
    texts += [it["prompt"] for s in ("heldout_phrasings", "lacking_skill") for it in planted.split_items(s, 0, 2)]
    for text in texts:
        assert tok.unk_token_id not in tok(text)["input_ids"], text


def test_the_skill_it_lacks_is_never_trained():
    """Protects the lacking skill: no accumulation template and no held-out phrasing is a training template."""
    trained = {t.clean for t in planted.TRAIN_TEMPLATES}
    assert planted.LACKING and not trained & {t.clean for t in planted.LACKING + planted.HELDOUT_PHRASINGS}
    assert len(planted.HELDOUT_PHRASINGS) == 12


def test_the_construction_holds_for_any_free_weights():
    """Protects the design: with the fixed entries imposed, blind and off heads put zero attention on forbidden
    keys and every non-planted head's output is identical across slot-only prompt pairs, even when every free
    weight is random and 3x larger than at initialisation (the guarantee does not depend on training)."""
    tok = planted.build_tokenizer()
    model, fixed = planted.make_model(tok, seed=3)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)
    planted.impose(model, fixed)
    model.config._attn_implementation = "eager"
    model.eval()
    pairs = planted_truth.slot_pairs(0, n_per_template=1)
    worst = planted_truth.forbidden_attention(model, tok, [p for pair in pairs for p in pair])
    assert max(worst.values()) <= planted.THRESHOLDS["max_forbidden_attention"], worst
    inv = planted_truth.slot_invariance(model, tok, pairs)
    assert max(v for k, v in inv.items() if k not in planted.PLANTED) <= planted.THRESHOLDS["max_nonplanted_output_change"]
    assert min(inv[k] for k in planted.MOVERS) > 1e-3  # the movers do see the slots
    assert planted_truth.fixed_deviation(model, tok) == 0.0


def test_score_heads_counts_and_intervals():
    """Protects the scoring of a method's heads: precision over the found set, recall over the planted movers,
    Wilson intervals, the false positives and misses named; an empty found set has no precision."""
    s = planted_truth.score_heads([(2, 0), (2, 1), (1, 3)])
    assert (s["precision"]["k"], s["precision"]["n"], s["recall"]["k"], s["recall"]["n"]) == (2, 3, 2, 3)
    assert s["precision"]["lo"] < 2 / 3 < s["precision"]["hi"]
    assert s["false_positives"] == [(1, 3)] and s["missed"] == [(2, 2)]
    assert planted_truth.score_heads([])["precision"]["value"] is None
    assert planted_truth.score_heads(planted.PLANTED, truth=planted.PLANTED)["recall"]["value"] == 1.0


def test_split_names_are_checked():
    """Protects: an unknown split is refused with its name."""
    with pytest.raises(ValueError, match="unknown split"):
        planted.split_items("nope")
