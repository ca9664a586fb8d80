"""The completion-only SFT loss (arithmech.finetune.loss) is the model's own loss: same value, same
gradients, same training, with the unembedding run on the labelled positions only."""
from __future__ import annotations

import torch
from factories import make_tiny_llama, random_sft_rows
from transformers import Trainer

from arithmech.finetune import adapter
from arithmech.finetune.data import Collator
from arithmech.finetune.loss import completion_loss
from arithmech.finetune.runner import CompletionLossTrainer, HeadMaskedTrainer, training_args


def _batch(rows, pad=0):
    return Collator(pad)(rows)


def _grads(model, loss):
    model.zero_grad()
    loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_loss_and_gradients_equal_the_models_own():
    """Protects: on a random GQA Llama with right-padded rows of random lengths, completion_loss equals
    the model's own ``labels`` loss (mean, and sum / num_items as the Trainer passes it) within 1e-6
    relative, and every parameter's gradient within 1e-6; an off-by-one in the label shift or a pad
    position counted would move the loss far more than that."""
    model = make_tiny_llama("sdpa", n_layers=3).train()
    batch = _batch(random_sft_rows(8, seed=3))
    n_items = (batch["labels"][:, 1:] != -100).sum()
    for num in (None, n_items):
        kw = {} if num is None else {"num_items_in_batch": num}
        own = model(**batch, **kw).loss
        ours = completion_loss(model, batch, num)
        assert abs(own.item() - ours.item()) <= 1e-6 * abs(own.item()), (own.item(), ours.item())
        g_own, g_ours = _grads(model, own), _grads(model, completion_loss(model, batch, num))
        assert g_own.keys() == g_ours.keys() and len(g_own) > 10
        for k in g_own:
            assert torch.allclose(g_own[k], g_ours[k], rtol=0, atol=1e-6), k
    # a wrong shift is caught: scoring the labels without the shift gives another loss
    unshifted = dict(batch, labels=torch.nn.functional.pad(batch["labels"], (1, 0), value=-100)[:, :-1])
    with torch.no_grad():
        assert abs(completion_loss(model, unshifted).item() - model(**batch).loss.item()) > 1e-3


def _train(cls, rows, tmp, spec=None):
    model = make_tiny_llama("sdpa", n_layers=3, seed=1)
    args = training_args(tmp, lr=1e-2, batch_size=8, micro_batch_size=8, epochs=2, warmup=0.0, weight_decay=0.1,
                         logging_steps=1)
    model.train()
    if spec is None:
        model.requires_grad_(True)
        trainer = cls(model=model, args=args, train_dataset=rows, data_collator=Collator(0))
    else:
        trainer = cls(model, args, spec=spec, cache_prefix=False, train_dataset=rows, data_collator=Collator(0))
    trainer.train()
    return [h["loss"] for h in trainer.state.log_history if "loss" in h], trainer


def test_full_sft_trains_as_the_plain_trainer(tmp_path):
    """Protects: full SFT with the completion loss (CompletionLossTrainer) follows the plain Trainer step for
    step: the same per-step losses (1e-5 relative) and the same trained weights (1e-5) after 2 epochs."""
    rows = random_sft_rows(24, seed=5)
    plain, tp = _train(Trainer, rows, tmp_path / "plain")
    ours, to = _train(CompletionLossTrainer, rows, tmp_path / "ours")
    assert len(plain) == len(ours) >= 5 and plain[0] != plain[-1]
    for a, b in zip(plain, ours):
        assert abs(a - b) <= 1e-5 * abs(a), (plain, ours)
    sp, so = tp.model.state_dict(), to.model.state_dict()
    for k in sp:
        assert torch.allclose(sp[k], so[k], rtol=0, atol=1e-5), k


def test_precise_sft_uses_it_and_matches_the_models_loss(tmp_path):
    """Protects: HeadMaskedTrainer trains with the completion loss, and its losses equal those of a precise
    run whose loss is the model's own (the parent's compute_loss forced) within 1e-5 relative."""

    class OwnLoss(HeadMaskedTrainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            inputs.pop("row_id", None)
            return Trainer.compute_loss(self, model, inputs, return_outputs, num_items_in_batch)

    spec = adapter.HeadSpec(heads=((1, 0), (2, 3)))
    rows = random_sft_rows(16, seed=7)
    own, _ = _train(OwnLoss, rows, tmp_path / "own", spec)
    ours, _ = _train(HeadMaskedTrainer, rows, tmp_path / "ours", spec)
    assert len(own) == len(ours) >= 3 and own[0] != own[-1]
    for a, b in zip(own, ours):
        assert abs(a - b) <= 1e-5 * abs(a), (own, ours)
