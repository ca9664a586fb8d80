"""Precise SFT's plumbing (arithmech.finetune.adapter, arithmech.finetune.runner): GQA policy, autograd
reach, parameter and memory estimates, head lists, tokenisation, multi-GPU configuration.

Weights and gradients checked against full-tensor references are in ``parity/test_finetune_parity.py``.
"""
from __future__ import annotations

import json

import pytest

from arithmech.core.models import Geometry
from arithmech.core.trace import TraceDict
from arithmech.finetune import adapter as A
from arithmech.finetune.data import tokenize_pairs
from arithmech.finetune.runner import HeadMaskedTrainer, training_args
from arithmech.steps.finetune import parse_heads
from arithmech.steps.finetune import ranked_components

from factories import make_tiny_llama


SPEC = A.HeadSpec(heads=((1, 0), (1, 3), (2, 2)))      # make_tiny_llama: 3 layers, 4 heads, 2 kv heads


def test_gqa_kv_policy():
    """Protects: the documented GQA policy: 'any' trains kv head g if a selected query head reads it,
    'all' only if all of its query heads are selected, 'none' never (k/v_proj stay unwrapped)."""
    geo = Geometry.from_config(make_tiny_llama().config)           # 4 query heads, 2 kv heads: {0,1}->0, {2,3}->1
    heads = ((1, 0), (1, 1), (1, 2))
    assert A.HeadSpec(heads=heads, kv_policy="any").kv_heads(geo, 1) == [0, 1]
    assert A.HeadSpec(heads=heads, kv_policy="all").kv_heads(geo, 1) == [0]
    assert A.HeadSpec(heads=heads, kv_policy="none").kv_heads(geo, 1) == []
    model = make_tiny_llama()
    names = set(A.attach(model, A.HeadSpec(heads=heads, kv_policy="all")))
    assert model.get_parameter("model.layers.1.self_attn.k_proj.weight").shape == (12, 40)   # kv head 0 only
    model = make_tiny_llama()
    names = set(A.attach(model, A.HeadSpec(heads=heads, kv_policy="none")))
    assert not any("k_proj" in n or "v_proj" in n for n in names)


def test_backward_stops_at_lowest_trained_layer(token_ids):
    """Protects: nothing below the lowest trained layer requires grad, so autograd never goes there."""
    model = make_tiny_llama()
    A.attach(model, A.HeadSpec(heads=((1, 2),)))
    names = [f"model.layers.{i}" for i in range(3)]
    with TraceDict(model, names) as td:
        model(token_ids, labels=token_ids).loss.backward()
    assert [td[n].output.requires_grad for n in names] == [False, True, True]
    assert model.model.embed_tokens.weight.grad is None
    assert all(p.grad is None for n, p in model.named_parameters() if not p.requires_grad)


def test_tuned_parameters_match_paper_tables():
    """Protects: the tuned-parameter counts reproduce Tables 1, 2 and 5 from LLaMA2's geometry alone."""
    g7 = Geometry(n_layers=32, n_heads=32, n_kv_heads=32, head_dim=128, d_model=4096, vocab_size=32000)
    g13 = Geometry(n_layers=40, n_heads=40, n_kv_heads=40, head_dim=128, d_model=5120, vocab_size=32000)
    table2 = {8: 0.017, 16: 0.033, 32: 0.067, 48: 0.101, 64: 0.134}
    for k, b in table2.items():                              # the paper rounds 0.0336 down to 0.033
        assert abs(A.tuned_parameters(g7, k) / 1e9 - b) < 0.001
    table5 = {1: 0.202, 2: 0.338, 3: 0.473, 6: 0.879, 32: 4.396}
    for m, b in table5.items():
        assert round(A.tuned_parameters(g7, 32, m, d_ff=11008) / 1e9, 3) == b
    assert round(A.tuned_parameters(g13, 32) / 1e9, 2) == 0.08
    assert round(A.approx_parameters(g7, 11008) / 1e9, 1) == 6.7
    assert round(A.approx_parameters(g13, 13824) / 1e9, 1) == 13.0


def test_precise_sft_memory_estimate_7b():
    """Protects: the one-GPU memory estimate for precise SFT of a 7B model adds up its documented parts."""
    g7 = Geometry(n_layers=32, n_heads=32, n_kv_heads=32, head_dim=128, d_model=4096, vocab_size=32000)
    est = A.precise_sft_memory(g7, n_heads=32, d_ff=11008, batch=4, seq=512, lowest_layer=12)
    n = A.tuned_parameters(g7, 32)
    assert est.weights == A.approx_parameters(g7, 11008) * 2
    assert est.trainable + est.grads_and_optimizer == 16 * n
    assert est.activations == 34 * 512 * 4 * 4096 * (32 - 12)
    assert est.logits == 2 * 4 * 4 * 512 * 32000
    assert 15 < est.total / 2**30 < 30                       # fits one 80 GB GPU with room to spare
    full_state = 16 * A.approx_parameters(g7, 11008) / 2**30
    assert full_state > 4 * est.total / 2**30               # full SFT's weights+grads+AdamW alone


def test_parse_heads_and_ranking(tmp_path):
    """Protects: top-k takes the k best-ranked heads of identify's key_heads.json, extended by that task's
    effects.csv ranking (most negative first), MLPs likewise; a missing file says what to run."""
    folder = tmp_path / "m"
    folder.mkdir()
    kh = {"task": "all", "threshold": -0.05, "heads": [{"rank": 1, "layer": 2, "head": 1, "effect": -0.3},
                                                       {"rank": 2, "layer": 0, "head": 3, "effect": -0.1}],
          "mlps": [{"rank": 1, "layer": 1, "effect": -0.2}]}
    (folder / "key_heads.json").write_text(json.dumps(kh))
    rows = "all,1,0,-0.01\nall,2,1,-0.3\nall,1,mlp,-0.2\nall,0,mlp,0.1\nall,1,2,-0.04\nall,0,3,-0.1\naddition,1,1,-0.9\n"
    (folder / "effects.csv").write_text("task,layer,head,effect,effect_lo,effect_hi\n"          # interval: effect ± 0.01
                                        + "".join(f"{r},{float(r.split(',')[3]) - .01},{float(r.split(',')[3]) + .01}\n"
                                                  for r in rows.splitlines()))
    heads, mlps = ranked_components(folder)
    assert heads == [(2, 1), (0, 3), (1, 2), (1, 0)] and mlps == [1, 0]
    assert parse_heads("top-3", heads) == [(2, 1), (0, 3), (1, 2)]
    assert parse_heads("12.22,13.11", None) == [(12, 22), (13, 11)]
    with pytest.raises(ValueError, match="only 4 ranked heads"):
        parse_heads("top-9", heads)
    with pytest.raises(FileNotFoundError, match="arithmech identify"):
        ranked_components(tmp_path / "other")
    (folder / "effects.csv").write_text("task,layer,head,effect,effect_lo,effect_hi\n")                 # truncated: no rows
    with pytest.raises(ValueError, match="effects.csv has no rows"):
        ranked_components(folder)


def test_tokenize_pairs_masks_prompt():
    """Protects: the SFT loss covers the completion and EOS only."""
    from arithmech.embedded.train import build_tokenizer
    tok = build_tokenizer()
    (row,) = tokenize_pairs(tok, [("12 plus 35 is", " 47")])
    ids = row["input_ids"]
    assert tok.convert_ids_to_tokens(ids) == ["<s>", "1", "2", "plus", "3", "5", "is", "4", "7", "</s>"]
    assert row["labels"] == [-100] * 7 + ids[7:]


def test_multi_gpu_full_sft_configuration():
    """Protects: the documented multi-GPU path: the accelerate config file parses as FSDP, training_args
    wraps the model's decoder-layer class with FSDP2 and keeps the effective batch over processes, and
    precise SFT refuses FSDP with a clear message."""
    from pathlib import Path
    from accelerate.commands.config.config_args import load_config_from_file
    cfg = load_config_from_file(str(Path(__file__).parents[2] / "configs" / "accelerate_fsdp.yaml"))
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
    """Protects: completion-only SFT loss (#14): the loss the Trainer optimises, on rows from
    tokenize_pairs padded by the Collator, equals a hand-written cross-entropy over the completion and
    EOS targets only, and its gradient with respect to every prompt position's logits is exactly zero
    (changing what the model predicts inside the prompt cannot change the loss)."""
    import tempfile
    import torch
    from arithmech.finetune.data import Collator
    from arithmech.embedded.train import build_tokenizer
    from arithmech.finetune.runner import make_trainer
    from transformers import LlamaConfig, LlamaForCausalLM
    tok = build_tokenizer()
    torch.manual_seed(0)
    net = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=4, pad_token_id=tok.pad_token_id))
    rows = tokenize_pairs(tok, [("12 plus 35 is", " 47"), ("3 minus 7 equals to", " -4")])
    batch = Collator(tok.pad_token_id)(rows)
    seen = {}

    def keep(module, args, out):                                   # the logits the loss is computed from
        out.retain_grad()
        seen["logits"] = out
    net.lm_head.register_forward_hook(keep)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = make_trainer(net, "full", training_args(tmp, batch_size=2, micro_batch_size=2), rows, tok)
        loss = trainer.compute_loss(net, dict(batch))
    loss.backward()
    logits = seen["logits"].detach()
    ref_terms = []
    for i, r in enumerate(rows):
        n_prompt = sum(l == -100 for l in r["labels"])
        for t in range(n_prompt, len(r["input_ids"])):            # targets: completion tokens and EOS
            ref_terms.append(torch.nn.functional.cross_entropy(logits[i, t - 1], torch.tensor(r["input_ids"][t])))
    assert len(ref_terms) == (2 + 1) + (2 + 1)                     # "4 7" + EOS, "- 4" + EOS
    assert abs(float(loss.detach()) - float(torch.stack(ref_terms).mean())) < 1e-5
    grad = seen["logits"].grad
    for i, r in enumerate(rows):
        n_prompt = sum(l == -100 for l in r["labels"])
        assert torch.count_nonzero(grad[i, :n_prompt - 1]) == 0                      # predictions of prompt tokens
        assert torch.count_nonzero(grad[i, n_prompt - 1]) > 0                        # the first answer token
