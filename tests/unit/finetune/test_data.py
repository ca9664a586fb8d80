"""Unit tests of ``arithmech/finetune/data.py``."""
from __future__ import annotations

from arithmech.finetune.data import tokenize_pairs


def test_tokenize_pairs_masks_prompt():
    """Protects: the SFT loss covers the completion and EOS only."""
    from arithmech.embedded.train import build_tokenizer
    tok = build_tokenizer()
    (row,) = tokenize_pairs(tok, [("12 plus 35 is", " 47")])
    ids = row["input_ids"]
    assert tok.convert_ids_to_tokens(ids) == ["<s>", "1", "2", "plus", "3", "5", "is", "4", "7", "</s>"]
    assert row["labels"] == [-100] * 7 + ids[7:]
