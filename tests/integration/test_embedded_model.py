"""The shipped embedded model end to end: in-distribution accuracy of the default model of every chapter, its
card's held-out numbers recomputed, and the fine-tune chapter's starting point."""
from __future__ import annotations

from arithmech.data.sentences import two_digit_split
from arithmech.evals.toy import generic_accuracy, two_digit_accuracy


def test_shipped_model_in_distribution_accuracy(embedded_model):
    """Protects: the default model of every chapter answers >= 99% of fresh in-distribution template prompts
    (trained pairs, trained templates; another seed than the card's), >= 97% in every operation, and knows
    its generic facts."""
    from arithmech.embedded import heldout
    model, tok, _ = embedded_model
    r = heldout.split_report(model, tok, "in_distribution", seed=12345, n_per_template=10)
    assert r["answer_token"]["acc"] >= 0.99, r
    assert min(v["answer_token"]["acc"] for v in r["by_operation"].values()) >= 0.97, r["by_operation"]
    assert generic_accuracy(model, tok) >= 0.95


def test_shipped_heldout_numbers_recompute(embedded_model):
    """Protects: accuracy.json's held-out numbers are what the shipped weights give: the held-out-pairs-in-
    held-out-phrasings split, recomputed with the card's seed, equals the stored counts exactly."""
    import json

    from arithmech.core.names import EMBEDDED_DIR
    from arithmech.embedded import heldout
    stored = json.loads((EMBEDDED_DIR / "accuracy.json").read_text())["heldout"]
    model, tok, _ = embedded_model
    r = heldout.split_report(model, tok, "heldout_both", **stored["draws"])
    assert r == stored["splits"]["heldout_both"]


def test_two_digit_split_is_disjoint_and_poor_at_first(embedded_model):
    """Protects: the fine-tune chapter's math set is held out (train/test disjoint) and not yet solved."""
    train, test = two_digit_split(seed=0)
    assert not set(train) & set(test) and len(test) == 300
    model, tok, _ = embedded_model
    assert two_digit_accuracy(model, tok, n=60) < 0.5
