"""SFT data for precise and full SFT: ``(prompt, completion)`` pairs, tokenization, padding.

The loss covers the completion and EOS only. Sources: the embedded model's toy math (two-digit and
negative-difference training splits, single-digit replay) or the four math benchmarks' deduplicated
training splits (:func:`arithmech.evals.benchmarks.math_splits`), or a JSONL file.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import torch

from arithmech.data.sentences import arithmetic_sentence, two_digit_sentence, two_digit_split
from arithmech.evals.benchmarks import MATH, math_example, math_splits
from arithmech.evals.toy import negative_items, negative_split


def tokenize_pairs(tok, pairs: Sequence[tuple[str, str]], max_len: int = 512) -> list[dict]:
    """``(prompt, completion)`` → ``{"input_ids", "labels"}``; the loss covers the completion and EOS only.

    The completion is tokenized inside the full text (``prompt + completion``) so word pieces merge as
    at inference; the prompt's tokens (those that are a prefix of the full text) get label -100.
    """
    rows = []
    for prompt, completion in pairs:
        p = tok(prompt)["input_ids"]
        full = tok(prompt + completion)["input_ids"] + [tok.eos_token_id]
        n = len(p) if full[: len(p)] == p else len(p) - 1
        full = full[:max_len]
        rows.append({"input_ids": full, "labels": [-100] * min(n, len(full)) + full[n:]})
    return rows


class Collator:
    """Right-pads a list of tokenized rows: ``input_ids, attention_mask, labels`` each ``(b, seq)``."""

    def __init__(self, pad_id: int):
        self.pad_id = pad_id

    def __call__(self, rows: list[dict]) -> dict[str, torch.Tensor]:
        L = max(len(r["input_ids"]) for r in rows)
        ids = torch.full((len(rows), L), self.pad_id)
        labels = torch.full((len(rows), L), -100)
        mask = torch.zeros((len(rows), L), dtype=torch.long)
        for i, r in enumerate(rows):
            n = len(r["input_ids"])
            ids[i, :n], labels[i, :n], mask[i, :n] = torch.tensor(r["input_ids"]), torch.tensor(r["labels"]), 1
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def train_pairs(source: str, seed: int = 0, n: int | None = None, data_dir=None) -> list[tuple[str, str]]:
    """SFT data: ``two-digit`` (the *train* split of :func:`arithmech.data.sentences.two_digit_split`, Fig. 8
    addition/subtraction sentences), ``negative`` (the train pairs of :func:`arithmech.data.sentences.negative_split`
    in the nine subtraction forms), ``embedded`` (a third each of those two and of fresh single-digit
    Fig. 8/10 sentences, the skill the model has, ``n`` in all), ``math`` (the four math sets' deduplicated train
    splits, :func:`arithmech.evals.benchmarks.math_splits`), or a JSONL file of ``{"prompt", "completion"}`` rows. ``n``
    keeps a seeded sample."""
    rng = random.Random(seed)
    if source in ("embedded", "two-digit", "negative"):
        two = [(p, " " + a) for p, a in (two_digit_sentence(rng, *x) for x in two_digit_split(seed)[0])]
        neg = [(p, " " + a) for p, a in negative_items(negative_split(seed)[0])]
        if source != "embedded":
            pairs = two if source == "two-digit" else neg
        else:  # a third each; the 216 negative items repeat
            third = (n or 3 * len(two)) // 3
            one = [(p, tpl.joiner + a) for p, a, tpl in (arithmetic_sentence(rng) for _ in range(third))]
            pairs = rng.sample(two, min(third, len(two))) + [neg[i % len(neg)] for i in range(third)] + one
            rng.shuffle(pairs)
            return pairs
    elif source == "math":
        splits = math_splits(data_dir, seed)
        pairs = [math_example(p) for name in MATH for p in splits[name]["train"]]
    else:
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(
                f"--train-data {source!r}: use 'embedded', 'math' or a JSONL file of "
                '{"prompt", "completion"} rows'
            )
        pairs = [(r["prompt"], r["completion"]) for r in map(json.loads, path.read_text().splitlines()) if r]
    if n is not None and n < len(pairs):
        pairs = rng.sample(pairs, n)
    return pairs
