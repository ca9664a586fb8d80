"""Cloze scoring with the context run once (arithmech.evals.cloze) equals one full forward per choice."""
from __future__ import annotations

import torch

from arithmech.evals import cloze


def _reference(model, tok, items):
    """The literal computation: per choice, one forward of ``context + choice`` and the summed log-probability
    of the choice's tokens (split as arithmech.evals.scoring.split_continuation splits them)."""
    out = []
    with torch.no_grad():
        for it in items:
            p = tok(it.context)["input_ids"]
            row = []
            for c in it.choices:
                f = tok(it.context + c)["input_ids"]
                n = len(p) if f[:len(p)] == p else len(p) - 1
                lp = model(torch.tensor([f])).logits[0].float().log_softmax(-1)
                row.append(float(sum(lp[q - 1, f[q]] for q in range(n, len(f)))))
            out.append(row)
    return out


def _items():
    """Contexts of different lengths (so batches need left padding) and 2 to 5 choices of 1 to 3 tokens."""
    return [cloze.Item("3 plus 5 equals to", (" 8", " 9", " 1 2"), 0),
            cloze.Item("The sum of 4 and 2 is", (" 6", " 7"), 0),
            cloze.Item("7 minus 1 =", (" 6", " 5", " 4", " 8", " 1 0"), 0),
            cloze.Item("Q: What is 2 times 3? A:", (" 6", " 5 4", " 9"), 0),
            cloze.Item("9 -", (" 1 =", " 2 = 7", " 3"), 1)]


def test_scores_equal_one_forward_per_choice(embedded_model):
    """Protects: the shared cache's equality — every choice's summed log-probability from the shared KV cache
    (contexts batched with left padding, choices right-padded on top) equals the per-choice full forward
    within 1e-4, for every batch size (1: no padding at all; 2 and 8: mixed lengths)."""
    model, tok, _ = embedded_model
    items = _items()
    ref = _reference(model, tok, items)
    for bs in (1, 2, 8):
        got = cloze.choice_logprobs(model, tok, items, batch_size=bs)
        assert [len(r) for r in got] == [len(it.choices) for it in items]
        assert max(abs(a - b) for r, g in zip(ref, got) for a, b in zip(r, g)) < 1e-4


def test_accuracy_norm_and_ties():
    """Protects: acc_norm divides by the choice's length in characters before the argmax (a long choice
    with a higher sum can lose), acc does not, and a tie goes to the first choice."""
    it = cloze.Item("x", (" a", " bbbbbbb"), 1)
    assert cloze.accuracy([it], [[-2.0, -3.0]], norm=True) == [1]       # -1.0 vs -0.375
    assert cloze.accuracy([it], [[-2.0, -3.0]], norm=False) == [0]
    assert cloze.accuracy([cloze.Item("x", (" a", " b"), 1)], [[-1.0, -1.0]]) == [0]


def test_chance_is_the_mean_of_one_over_choices():
    """Protects: the chance level every general measure is read against (ARC mixes 3-, 4- and 5-choice items)."""
    items = [cloze.Item("x", (" a", " b"), 0), cloze.Item("x", (" a", " b", " c", " d"), 0)]
    assert cloze.chance(items) == (0.5 + 0.25) / 2
