"""Unit tests of ``arithmech/finetune/runner.py``."""
from __future__ import annotations

import pytest
from factories import make_tiny_llama

from arithmech.finetune import adapter
from arithmech.finetune.data import tokenize_pairs
from arithmech.finetune.runner import HeadMaskedTrainer, training_args

SPEC = adapter.HeadSpec(heads=((1, 0), (1, 3), (2, 2)))      # make_tiny_llama: 3 layers, 4 heads, 2 kv heads


def test_multi_gpu_full_sft_configuration():
    """Protects: the documented multi-GPU path: the accelerate config file parses as FSDP, training_args
    wraps the model's decoder-layer class with FSDP2 and keeps the effective batch over processes, and
    precise SFT refuses FSDP with a clear message."""
    from pathlib import Path

    from accelerate.commands.config.config_args import load_config_from_file
    cfg = load_config_from_file(str(Path(__file__).parents[3] / "configs" / "accelerate_fsdp.yaml"))
    assert str(cfg.distributed_type).endswith("FSDP") and cfg.fsdp_config["fsdp_version"] == 2
    layer = next(iter(make_tiny_llama()._no_split_modules))
    args = training_args("/tmp/unused", batch_size=128, micro_batch_size=4, fsdp_layer=layer)
    assert args.fsdp_plugin_args["transformer_cls_names_to_wrap"] == "LlamaDecoderLayer"
    assert args.gradient_accumulation_steps == 32
    with pytest.raises(ValueError, match="multiple of micro_batch_size"):
        training_args("/tmp/unused", batch_size=100, micro_batch_size=8)
    with pytest.raises(ValueError, match="one device"):
        HeadMaskedTrainer(make_tiny_llama(), args, spec=SPEC)


def test_sft_loss_ignores_the_prompt():
    """Protects the completion-only SFT loss: the loss the Trainer optimises, on rows from
    tokenize_pairs padded by the Collator, equals a hand-written cross-entropy over the completion and
    EOS targets only (from the model's own full logits), and the unembedding is run on exactly those
    positions: no prompt position's prediction can reach the loss (arithmech.finetune.loss)."""
    import tempfile

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from arithmech.embedded.train import build_tokenizer
    from arithmech.finetune.data import Collator
    from arithmech.finetune.runner import make_trainer
    tok = build_tokenizer()
    torch.manual_seed(0)
    net = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=4, pad_token_id=tok.pad_token_id))
    rows = tokenize_pairs(tok, [("12 plus 35 is", " 47"), ("3 minus 7 equals to", " -4")])
    batch = Collator(tok.pad_token_id)(rows)
    seen = []
    net.lm_head.register_forward_hook(lambda m, a, out: seen.append(out.shape))
    with torch.no_grad():
        logits = net(**{k: v for k, v in batch.items() if k != "labels"}).logits
    seen.clear()
    with tempfile.TemporaryDirectory() as tmp:
        trainer = make_trainer(net, "full", training_args(tmp, batch_size=2, micro_batch_size=2), rows, tok)
        loss = trainer.compute_loss(net, dict(batch))
    ref_terms = []
    for i, r in enumerate(rows):
        n_prompt = sum(l == -100 for l in r["labels"])
        for t in range(n_prompt, len(r["input_ids"])):            # targets: completion tokens and EOS
            ref_terms.append(torch.nn.functional.cross_entropy(logits[i, t - 1], torch.tensor(r["input_ids"][t])))
    assert len(ref_terms) == (2 + 1) + (2 + 1)                     # "4 7" + EOS, "- 4" + EOS
    assert abs(float(loss.detach()) - float(torch.stack(ref_terms).mean())) < 1e-5
    assert seen == [torch.Size([6, len(tok)])]                     # only the six scored positions are unembedded
