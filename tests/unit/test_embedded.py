"""The embedded arithmetic model's files, tokenizer and training command (no shipped-model forward).

The shipped model's accuracy is checked in ``integration/test_embedded_model.py``.
"""
from __future__ import annotations

import json
import random

import torch

from arithmech.core.names import EMBEDDED_DIR
from arithmech.embedded import train as E


def test_model_card_matches_recorded_accuracy():
    """Protects: the model card and accuracy.json shipped with the model report the same numbers: the
    in-distribution accuracy (>= 99 %), every held-out split's exact-match cell and verdict, and the held-out
    declaration that the code makes today (the shipped model was trained without exactly these)."""
    from arithmech.embedded import heldout as H
    acc = json.loads((EMBEDDED_DIR / "accuracy.json").read_text())
    card = (EMBEDDED_DIR / "README.md").read_text()
    assert acc["arithmetic_answer_token_accuracy"] >= 0.99
    assert f"{acc['arithmetic_answer_token_accuracy']:.1%}" in card
    assert "python -m arithmech train-embedded" in card
    assert acc["heldout"]["declaration"] == json.loads(json.dumps(H.declaration()))
    for split, r in acc["heldout"]["splits"].items():
        p = r["exact_match"]
        assert f"| {H.LABELS[split]} | {p['n']} |" in card and f"{H.interval_cell(p)} | {H.verdict(p)} |" in card
        assert p["k"] <= r["answer_token"]["n"] == p["n"] and p["acc"] == round(p["k"] / p["n"], 4)
    assert "arithmech/embedded/heldout.py" in card


def test_training_is_deterministic(tmp_path):
    """Protects: the training command is seeded: the same seed gives bit-identical weights."""
    size = dict(n_layers=1, n_heads=2, d_model=16, d_ff=32, max_len=64)
    a = E.train(tmp_path / "a", steps=3, batch_size=4, seed=5, log_every=0, size=size, eval_per_template=1)
    b = E.train(tmp_path / "b", steps=3, batch_size=4, seed=5, log_every=0, size=size, eval_per_template=1)
    from safetensors.torch import load_file
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def test_tokenizer_splits_digits_and_knows_every_word():
    """Protects: every digit is its own token and no training sentence hits <unk>."""
    tok = E.build_tokenizer()
    assert tok.convert_ids_to_tokens(tok("1723")["input_ids"]) == ["<s>", "1", "7", "2", "3"]
    for text in E.corpus(random.Random(0), 300):
        assert tok.unk_token_id not in tok(text)["input_ids"], text
