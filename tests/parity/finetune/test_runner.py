"""The Trainer settings of every SFT run (arithmech.finetune.runner.training_args): the fused AdamW step is the
per-tensor AdamW step, only faster."""
from __future__ import annotations

import torch

from arithmech.finetune.data import Collator
from arithmech.finetune.runner import CompletionLossTrainer, training_args

from factories import make_tiny_llama, random_sft_rows


def _train(tmp, **extra):
    model = make_tiny_llama("sdpa", n_layers=3, seed=2)
    args = training_args(tmp, lr=1e-2, batch_size=8, micro_batch_size=8, epochs=3, warmup=0.0, weight_decay=0.1,
                         logging_steps=1, **extra)
    model.train()
    model.requires_grad_(True)
    trainer = CompletionLossTrainer(model=model, args=args, train_dataset=random_sft_rows(24, seed=9),
                                    data_collator=Collator(0))
    trainer.train()
    return [h["loss"] for h in trainer.state.log_history if "loss" in h], model.state_dict(), trainer


def test_fused_adamw_equals_the_per_tensor_loop(tmp_path):
    """Protects: training_args' optimizer is fused AdamW, and 3 epochs of full SFT with it follow the per-tensor
    AdamW (the Trainer's "adamw_torch") step for step: per-step losses within 1e-5 relative, every weight within
    1e-5 after training, with weight decay and a learning rate large enough that the weights move."""
    fused, wf, tf = _train(tmp_path / "fused")
    assert tf.args.optim == "adamw_torch_fused" and tf.optimizer.defaults.get("fused") is True
    args = training_args(tmp_path / "x").to_dict()
    assert args["optim"] == "adamw_torch_fused"
    from transformers import TrainingArguments
    plain = TrainingArguments(**{**tf.args.to_dict(), "optim": "adamw_torch", "output_dir": str(tmp_path / "p")})
    model = make_tiny_llama("sdpa", n_layers=3, seed=2)
    model.train()
    model.requires_grad_(True)
    t = CompletionLossTrainer(model=model, args=plain, train_dataset=random_sft_rows(24, seed=9), data_collator=Collator(0))
    t.train()
    assert not t.optimizer.defaults.get("fused")
    per = [h["loss"] for h in t.state.log_history if "loss" in h]
    assert len(per) == len(fused) >= 9 and per[0] != per[-1]
    for a, b in zip(per, fused):
        assert abs(a - b) <= 1e-5 * abs(a), (per, fused)
    for k, v in model.state_dict().items():
        assert torch.allclose(v, wf[k], rtol=0, atol=1e-5), k
