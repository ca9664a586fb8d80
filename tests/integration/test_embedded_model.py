"""The shipped embedded model end to end: held-out accuracy of the default model of every chapter, and the
fine-tune chapter's starting point."""
from __future__ import annotations

from arithmech.embedded import train as E


def test_shipped_model_held_out_accuracy(embedded_model):
    """Protects: the default model of every chapter answers >= 99% of fresh held-out template prompts,
    in every operation, and knows its generic facts."""
    model, tok, _ = embedded_model
    r = E.evaluate(model, tok, seed=12345, n_per_template=10)
    assert r["arithmetic_answer_token_accuracy"] >= 0.99, r["by_template"]
    assert min(r["by_operation"].values()) >= 0.97, r["by_operation"]
    assert r["generic_fact_accuracy"] >= 0.95


def test_two_digit_split_is_disjoint_and_poor_at_first(embedded_model):
    """Protects: the fine-tune chapter's math set is held out (train/test disjoint) and not yet solved."""
    train, test = E.two_digit_split(seed=0)
    assert not set(train) & set(test) and len(test) == 300
    model, tok, _ = embedded_model
    assert E.two_digit_accuracy(model, tok, n=60) < 0.5
