"""The embedded arithmetic model: its shipped accuracy, its data design, and a deterministic training command."""
from __future__ import annotations

import json
import random

import pytest
import torch

from arithmech.embedded import train as E
from arithmech.core.models import EMBEDDED_DIR, load_model


@pytest.fixture(scope="module")
def emb():
    return load_model("embedded")


def test_shipped_model_held_out_accuracy(emb):
    """Protects: the default model of every chapter answers >= 99% of fresh held-out template prompts,
    in every operation, and knows its generic facts."""
    model, tok, _ = emb
    r = E.evaluate(model, tok, seed=12345, n_per_template=10)
    assert r["arithmetic_answer_token_accuracy"] >= 0.99, r["by_template"]
    assert min(r["by_operation"].values()) >= 0.97, r["by_operation"]
    assert r["generic_fact_accuracy"] >= 0.95


def test_model_card_matches_recorded_accuracy():
    """Protects: the model card and accuracy.json shipped with the model report the same, passing numbers."""
    acc = json.loads((EMBEDDED_DIR / "accuracy.json").read_text())
    card = (EMBEDDED_DIR / "README.md").read_text()
    assert acc["arithmetic_answer_token_accuracy"] >= 0.99
    assert f"{acc['arithmetic_answer_token_accuracy']:.1%}" in card
    assert "python -m arithmech train-embedded" in card


def test_two_digit_split_is_disjoint_and_poor_at_first(emb):
    """Protects: the fine-tune chapter's math set is held out (train/test disjoint) and not yet solved."""
    train, test = E.two_digit_split(seed=0)
    assert not set(train) & set(test) and len(test) == 300
    model, tok, _ = emb
    assert E.two_digit_accuracy(model, tok, n=60) < 0.5


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
