"""The SFT loss with the unembedding run only where the loss looks: the completion's tokens.

The loss of an SFT row covers its completion and EOS only (:func:`arithmech.finetune.data.tokenize_pairs`
labels the prompt ``-100``). The model's own forward with ``labels`` still multiplies *every* position by the
unembedding (``(b, seq, vocab)`` logits) and then ignores most of them. On a small model with a large
vocabulary that product is a large share of a step: SmolLM2-135M's unembedding (49,152 × 576, tied to the
embedding) costs about as much as 8 of its 30 decoder layers per position, and a Table 1 row has ~12 positions of which
~4 are scored. :func:`completion_loss` runs the decoder, keeps the hidden states of the positions whose
*next* token is labelled, and unembeds only those::

    h = decoder(input_ids | inputs_embeds, attention_mask).last_hidden_state     # (b, seq, d), final norm applied
    target = labels shifted left by one (the last position gets -100)           # (b, seq)
    keep = target != -100                                                      # (b, seq) bool
    logits = unembed(h[keep]).float()                                           # (n_kept, vocab)
    loss = cross_entropy(logits, target[keep], reduction="sum") / num_items     # or the mean without num_items

This is the quantity ``transformers``' ``ForCausalLMLoss`` computes (same shift, same float32 upcast, same
sum over labelled tokens divided by the Trainer's ``num_items_in_batch``, or the mean without it), with the
same gradients; only the order of float additions differs (``tests/parity/finetune/test_loss.py`` keeps the
losses and every gradient within 1e-6 of the model's own loss, on full and precise SFT).

The decoder and the unembedding are found with ``transformers``' own accessors (``get_decoder``,
``get_output_embeddings``), so no model family is named here.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

IGNORE = -100


def shifted_targets(labels: torch.Tensor) -> torch.Tensor:
    """``(b, seq)`` labels → ``(b, seq)`` targets: position ``t`` predicts label ``t + 1``; the last gets -100."""
    return F.pad(labels, (0, 1), value=IGNORE)[:, 1:]


def completion_loss(model: nn.Module, inputs: dict, num_items_in_batch=None) -> torch.Tensor:
    """The causal LM loss of ``inputs`` (``labels`` and ``input_ids`` or ``inputs_embeds``, ``attention_mask``)
    with logits computed only at the labelled positions (module docstring). ``num_items_in_batch``: the
    Trainer's count of labelled tokens (the loss is then their sum divided by it), else the mean."""
    labels = inputs["labels"]
    feed = {k: v for k, v in inputs.items() if k in ("input_ids", "inputs_embeds", "attention_mask", "position_ids")}
    # transformers' accessors reached through nn.Module.__getattr__, which torch types as Tensor | Module
    h = model.get_decoder()(**feed, use_cache=False).last_hidden_state  # type: ignore[operator]  # (b, seq, d)
    target = shifted_targets(labels).to(h.device)
    keep = target != IGNORE
    logits = model.get_output_embeddings()(h[keep]).float()  # type: ignore[operator]  # (n_kept, vocab), as above
    if num_items_in_batch is None:
        return F.cross_entropy(logits, target[keep], reduction="mean")
    loss = F.cross_entropy(logits, target[keep], reduction="sum")
    n = num_items_in_batch.to(loss.device) if torch.is_tensor(num_items_in_batch) else num_items_in_batch
    return loss / n
