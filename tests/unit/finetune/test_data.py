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


def test_planted_rows_score_the_answer_only():
    """Protects: on the planted suite's own fine-tune stream, the loss covers each row's answer digits and EOS, never
    a prompt token (a loss on the prompt would teach the phrasings' words, not the answers). The reference is the
    answer string itself: the labelled tokens must spell it, digit by digit, then ``</s>``."""
    from arithmech.data.planted_items import train_rows
    from arithmech.embedded.planted import build_tokenizer
    tok = build_tokenizer()
    pairs = [(p, a) for p, a, _ in train_rows(400)]
    for (prompt, completion), row in zip(pairs, tokenize_pairs(tok, pairs)):
        kept = [t for t in row["labels"] if t != -100]
        assert tok.convert_ids_to_tokens(kept) == [*completion.strip(), "</s>"]
        n_prompt = len(row["labels"]) - len(kept)
        assert row["labels"][:n_prompt] == [-100] * n_prompt and row["input_ids"][n_prompt:] == kept
        unscored = tok.decode(row["input_ids"][:n_prompt], skip_special_tokens=True)
        assert "".join(unscored.split()) == "".join(prompt.split())  # the word-level tokenizer decodes with spaces
