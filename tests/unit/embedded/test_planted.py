"""The planted model's recipe (arithmech.embedded.planted): the data and its held-out splits and the construction
that fixes the circuit in the weights (random weights; ``test_planted_truth.py`` checks the shipped ones), and the
scoring of a method's heads (arithmech.embedded.planted_truth.score_heads)."""

from __future__ import annotations

import random

import pytest
import torch

from arithmech.embedded import planted as P
from arithmech.embedded import planted_truth as T


def test_heldout_pairs_are_never_trained_and_mirrors_go_together():
    """Protects the held-out split: no training sentence uses a held-out pair, a held-out + or x pair is held out
    with its mirror, and about HELDOUT_FRACTION of each operation's 0..99 pairs are held out."""
    for op in P.OPERATIONS:
        held, valid = P.heldout_pairs(op), P.valid_pairs(op)
        assert abs(len(held) / len(valid) - P.HELDOUT_FRACTION) < 0.01
        if op in P.COMMUTATIVE:
            assert all((b, a) in held for a, b in held)
    rng = random.Random(0)
    for _ in range(3000):
        t = rng.choice(P.TRAIN_TEMPLATES)
        a, b = P.draw_pair(t.op, rng, small=rng.random() < 0.5)
        assert (a, b) not in P.heldout_pairs(t.op)


def test_training_text_uses_known_words_and_slot_words_are_in_the_vocabulary():
    """Protects the tokenizer: every slot word is one token of the vocabulary and no training sentence, held-out
    phrasing or lacking-skill prompt hits <unk>."""
    tok = P.build_tokenizer()
    assert len(P.slot_ids(tok)) == len(P.SLOT_WORDS)
    texts = [p + " " + a for p, a in next(P.training_stream(0, 500))]
    texts += [it["prompt"] for s in ("heldout_phrasings", "lacking_skill") for it in P.split_items(s, 0, 2)]
    for text in texts:
        assert tok.unk_token_id not in tok(text)["input_ids"], text


def test_the_skill_it_lacks_is_never_trained():
    """Protects the lacking skill: no accumulation template and no held-out phrasing is a training template."""
    trained = {t.clean for t in P.TRAIN_TEMPLATES}
    assert P.LACKING and not trained & {t.clean for t in P.LACKING + P.HELDOUT_PHRASINGS}
    assert len(P.HELDOUT_PHRASINGS) == 12


def test_the_construction_holds_for_any_free_weights():
    """Protects the design: with the fixed entries imposed, blind and off heads put zero attention on forbidden
    keys and every non-planted head's output is identical across slot-only prompt pairs, even when every free
    weight is random and 3x larger than at initialisation (the guarantee does not depend on training)."""
    tok = P.build_tokenizer()
    model, fixed = P.make_model(tok, seed=3)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)
    P.impose(model, fixed)
    model.config._attn_implementation = "eager"
    model.eval()
    pairs = T.slot_pairs(0, n_per_template=1)
    worst = T.forbidden_attention(model, tok, [p for pair in pairs for p in pair])
    assert max(worst.values()) <= P.THRESHOLDS["max_forbidden_attention"], worst
    inv = T.slot_invariance(model, tok, pairs)
    assert max(v for k, v in inv.items() if k not in P.PLANTED) <= P.THRESHOLDS["max_nonplanted_output_change"]
    assert min(inv[k] for k in P.MOVERS) > 1e-3  # the movers do see the slots
    assert T.fixed_deviation(model, tok) == 0.0


def test_score_heads_counts_and_intervals():
    """Protects the scoring of a method's heads: precision over the found set, recall over the planted movers,
    Wilson intervals, the false positives and misses named; an empty found set has no precision."""
    s = T.score_heads([(2, 0), (2, 1), (1, 3)])
    assert (s["precision"]["k"], s["precision"]["n"], s["recall"]["k"], s["recall"]["n"]) == (2, 3, 2, 3)
    assert s["precision"]["lo"] < 2 / 3 < s["precision"]["hi"]
    assert s["false_positives"] == [(1, 3)] and s["missed"] == [(2, 2)]
    assert T.score_heads([])["precision"]["value"] is None
    assert T.score_heads(P.PLANTED, truth=P.PLANTED)["recall"]["value"] == 1.0


def test_split_names_are_checked():
    """Protects: an unknown split is refused with its name."""
    with pytest.raises(ValueError, match="unknown split"):
        P.split_items("nope")
