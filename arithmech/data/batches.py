"""Prompts as model input: token ids, equal-length batches, and the answer token's id.

:func:`group_by_length` batches prompts by token length (no padding, so every position and RoPE is what a
single-prompt forward sees; prompts sharing solved examples sit together so their prefix runs once);
:func:`answer_ids` gives each sample's answer token {C}; :func:`token_ids` tokenises one text. The samples
themselves are drawn in :mod:`arithmech.data.pairs`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch

from arithmech.data import shots as shots_module
from arithmech.data import templates as templates_module


def token_ids(tok, text: str, special: bool) -> list[int]:
    """The ids of ``text`` (with the tokenizer's special tokens when ``special``)."""
    return tok(text, add_special_tokens=special)["input_ids"]


def group_by_length(tok, prompts: Sequence[str], batch_size: int = 64) -> Iterable[tuple[list[int], torch.Tensor]]:
    """Yield ``(indices, ids)`` batches of equal-length prompts: no padding, so every position
    (and RoPE) is exactly what a single-prompt forward sees. ``ids``: ``(batch, seq)``.

    Within one length, prompts are ordered by their text up to the last example separator
    (:func:`arithmech.data.shots.prefix_key`), so that prompts with the same solved examples sit in the same
    batches and a prefix they share runs once (:mod:`arithmech.core.prefix`); prompts with different examples
    still fill a batch. A zero-shot prompt has no example separator and batches as it always did."""
    enc = [token_ids(tok, p, True) for p in prompts]
    by_len: dict[int, list[int]] = {}
    for i in sorted(range(len(prompts)), key=lambda i: (len(enc[i]), shots_module.prefix_key(prompts[i]), i)):
        by_len.setdefault(len(enc[i]), []).append(i)
    for _, idx in sorted(by_len.items()):
        for j in range(0, len(idx), batch_size):
            chunk = idx[j : j + batch_size]
            yield chunk, torch.tensor([enc[i] for i in chunk])


def answer_ids(tok, samples: Sequence[Any]) -> torch.Tensor:
    """``(n,)`` token ids of each sample's answer token {C} (each a :class:`arithmech.data.pairs.Sample`: not
    imported here, as pairs imports this module): the token that follows the
    prompt's own tokens when the rest of the answer (after ``carried``) is appended."""
    out = []
    for s in samples:
        t = templates_module.TEMPLATES.get(s.template)
        joiner = t.joiner if t is not None else " "
        rest = s.target[len(s.carried) :]
        cont = rest if (s.carried or s.clean.endswith(" ") or joiner == "") else joiner + rest
        p, full = token_ids(tok, s.clean, False), token_ids(tok, s.clean + cont, False)
        if full[: len(p)] != p or len(full) == len(p):
            raise ValueError(f"the answer {s.target!r} of {s.clean!r} does not start on a token boundary")
        out.append(full[len(p)])
    return torch.tensor(out)
