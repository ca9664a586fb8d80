"""Precise SFT (arithmech.finetune.adapter, arithmech.finetune.runner): slices, Trainer, adapter files, estimates."""
from __future__ import annotations

import copy
import json

import pytest
import torch

from arithmech.finetune import adapter as A
from arithmech.finetune.runner import (Collator, HeadMaskedTrainer, parse_heads, ranked_components, run_finetune,
                                tokenize_pairs, training_args)
from arithmech.core.models import Geometry
from arithmech.core.trace import TraceDict
from conftest import tiny_llama

pytestmark = pytest.mark.usefixtures("one_thread")


SPEC = A.HeadSpec(heads=((1, 0), (1, 3), (2, 2)))      # tiny_llama: 3 layers, 4 heads, 2 kv heads
PROJ = ("q_proj", "k_proj", "v_proj", "o_proj")


def _rows(n=32, vocab=50, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        x = torch.randint(1, vocab, (int(torch.randint(5, 12, (1,), generator=g)),), generator=g).tolist()
        out.append({"input_ids": x, "labels": [-100, -100] + x[2:]})
    return out


def _ids():
    return torch.randint(0, 50, (3, 9), generator=torch.Generator().manual_seed(1))


def _selected(model, spec, geo):
    """name -> boolean mask of the entries precise SFT may change (index sets computed independently)."""
    masks = {}
    for l, hs in spec.by_layer().items():
        kv = spec.kv_heads(geo, l)
        for name in PROJ:
            w = model.get_submodule(f"model.layers.{l}.self_attn.{name}").weight
            m = torch.zeros_like(w, dtype=torch.bool)
            heads = kv if name in ("k_proj", "v_proj") else hs
            for h in heads:
                sl = slice(h * geo.head_dim, (h + 1) * geo.head_dim)
                if name == "o_proj":
                    m[:, sl] = True
                else:
                    m[sl] = True
            masks[f"model.layers.{l}.self_attn.{name}.weight"] = m
    for l in spec.mlps:
        for k, p in model.get_submodule(f"model.layers.{l}.mlp").named_parameters():
            masks[f"model.layers.{l}.mlp.{k}"] = torch.ones_like(p, dtype=torch.bool)
    return masks


def test_untouched_weights_byte_identical_with_weight_decay(tmp_path):
    """Protects: after HeadMaskedTrainer with AdamW weight_decay 0.1, every parameter outside the selected
    slices is byte-identical (also inside partly trained tensors, after merge), and the slices did move."""
    model = tiny_llama("sdpa")
    geo = Geometry.from_config(model.config)
    spec = A.HeadSpec(heads=SPEC.heads, mlps=(0,))
    orig = {k: v.clone() for k, v in model.state_dict().items()}
    args = training_args(tmp_path, lr=1e-2, batch_size=8, micro_batch_size=4, max_steps=3, warmup=0.0,
                         weight_decay=0.1)
    HeadMaskedTrainer(model, args, spec=spec, train_dataset=_rows(), data_collator=Collator(0)).train()
    for k, v in model.state_dict().items():               # base weights while the slices are attached
        if ".base." in k:
            assert torch.equal(v, orig[k.replace(".base.", ".")]), k
    merged = A.merge(model).state_dict()
    masks = _selected(model, spec, geo)
    assert set(merged) == set(orig)
    for k, v in merged.items():
        m = masks.get(k, torch.zeros_like(v, dtype=torch.bool))
        assert torch.equal(v[~m], orig[k][~m]), f"{k}: an untouched entry changed"
        if m.any():
            assert not torch.equal(v[m], orig[k][m]), f"{k}: the selected slice did not train"


def test_bf16_base_fp32_slices_under_autocast(tmp_path):
    """Protects: with a bf16 base under bf16 autocast the slices, MLP copies and AdamW moments are fp32,
    merge casts back to bf16, and untouched bf16 entries keep their bytes."""
    model = tiny_llama("sdpa").to(torch.bfloat16)
    geo = Geometry.from_config(model.config)
    spec = A.HeadSpec(heads=SPEC.heads, mlps=(0,))
    orig = {k: v.clone() for k, v in model.state_dict().items()}
    masks = _selected(model, spec, geo)
    args = training_args(tmp_path, lr=1e-2, batch_size=4, micro_batch_size=4, max_steps=2, warmup=0.0, bf16=True)
    trainer = HeadMaskedTrainer(model, args, spec=spec, train_dataset=_rows(), data_collator=Collator(0))
    trainer.train()
    state = A.trainable_state(model)
    assert all(p.dtype == torch.float32 for p in state.values())
    assert all(trainer.optimizer.state[p]["exp_avg"].dtype == torch.float32 for p in state.values())
    for k, v in A.merge(model).state_dict().items():
        m = masks.get(k, torch.zeros_like(v, dtype=torch.bool))
        assert v.dtype == torch.bfloat16 and torch.equal(v[~m], orig[k][~m]), k
        assert not m.any() or not torch.equal(v[m], orig[k][m]), k


def test_naive_masked_full_tensor_changes_untouched_entries():
    """Protects (contrast): masking gradients of whole trainable tensors is NOT enough, AdamW's weight decay
    moves the masked entries; the slices reproduce the naive run's selected entries exactly."""
    torch.manual_seed(0)
    naive, ours = tiny_llama(), tiny_llama()
    geo = Geometry.from_config(naive.config)
    spec = A.HeadSpec(heads=SPEC.heads, rescale=False)
    masks = _selected(naive, spec, geo)
    naive.requires_grad_(False)
    params = []
    for k, m in masks.items():
        p = naive.get_parameter(k)
        p.requires_grad_(True)
        p.register_hook(lambda g, m=m: g * m)            # the naive "masked gradient"
        params.append(p)
    orig = {k: naive.get_parameter(k).detach().clone() for k in masks}
    slices = A.attach(ours, spec)
    opt_n = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1)
    opt_o = torch.optim.AdamW(slices.values(), lr=1e-2, weight_decay=0.1)
    ids = _ids()
    for _ in range(3):
        for net, opt in ((naive, opt_n), (ours, opt_o)):
            opt.zero_grad()
            net(ids, labels=ids).loss.backward()
            opt.step()
    A.merge(ours)
    for k, m in masks.items():
        new_n, new_o = naive.get_parameter(k).detach(), ours.get_parameter(k).detach()
        if (~m).any():
            assert not torch.equal(new_n[~m], orig[k][~m]), f"{k}: naive masking left untouched entries alone?"
        assert torch.equal(new_o[~m], orig[k][~m])
        # Adam amplifies fp noise of near-zero gradients; a wrong index would be off by ~lr = 1e-2
        torch.testing.assert_close(new_o[m], new_n[m], atol=5e-4, rtol=0)


@pytest.mark.parametrize("family", ["llama-gqa", "qwen2-bias"])
def test_slice_gradients_equal_masked_full_tensor_reference(family):
    """Protects: the slice wrappers compute the same function (logits) and the same gradients (weight and,
    for Qwen2, bias rows) as the full tensors restricted to the selected rows/columns, times H/h."""
    if family == "llama-gqa":
        model = tiny_llama()
    else:
        from transformers import Qwen2Config, Qwen2ForCausalLM
        torch.manual_seed(0)
        cfg = Qwen2Config(vocab_size=50, hidden_size=40, intermediate_size=80, num_hidden_layers=3,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
        cfg._attn_implementation = "eager"
        model = Qwen2ForCausalLM(cfg).eval()
    geo = Geometry.from_config(model.config)
    ref = copy.deepcopy(model)
    ids = _ids()
    with torch.no_grad():
        base_logits = model(ids).logits
    slices = A.attach(model, SPEC)
    out = model(ids, labels=ids)
    torch.testing.assert_close(out.logits, base_logits, atol=1e-6, rtol=0)
    out.loss.backward()
    ref.requires_grad_(False)
    for k in _selected(ref, SPEC, geo):
        ref.get_parameter(k).requires_grad_(True)
        if "o_proj" not in k and ref.get_submodule(k.rsplit(".", 1)[0]).bias is not None:
            ref.get_parameter(k.replace(".weight", ".bias")).requires_grad_(True)
    ref(ids, labels=ids).loss.backward()
    assert slices and all(p.grad is not None for p in slices.values())
    for k, p in slices.items():
        path, kind = k.rsplit(".", 1)
        mod, full = model.get_submodule(path), ref.get_parameter(k).grad
        g = full[:, mod.index] if isinstance(mod, A.ColSlice) else full[mod.index]
        scale = SPEC.scale(geo, int(path.split(".")[2]))
        torch.testing.assert_close(p.grad, scale * g, atol=1e-7, rtol=1e-5)
    if family == "qwen2-bias":
        assert any(k.endswith(".bias") for k in slices)


def test_rescale_is_h_over_h_and_forward_unchanged():
    """Protects: §5.3's rescaling multiplies layer i's slice gradients by H/h_i and leaves the forward
    pass bit-identical."""
    grads, logits = {}, {}
    for rescale in (True, False):
        model = tiny_llama()
        slices = A.attach(model, A.HeadSpec(heads=SPEC.heads, rescale=rescale))
        out = model(_ids(), labels=_ids())
        out.loss.backward()
        grads[rescale] = {k: p.grad for k, p in slices.items()}
        logits[rescale] = out.logits
    assert torch.equal(logits[True], logits[False])
    for k, g in grads[True].items():
        layer = int(k.split(".")[2])
        h = len(SPEC.by_layer()[layer])
        assert {1: 2, 2: 1}[layer] == h
        torch.testing.assert_close(g, grads[False][k] * (4 / h), atol=0, rtol=1e-6)


def test_gqa_kv_policy():
    """Protects: the documented GQA policy: 'any' trains kv head g if a selected query head reads it,
    'all' only if all of its query heads are selected, 'none' never (k/v_proj stay unwrapped)."""
    geo = Geometry.from_config(tiny_llama().config)           # 4 query heads, 2 kv heads: {0,1}->0, {2,3}->1
    heads = ((1, 0), (1, 1), (1, 2))
    assert A.HeadSpec(heads=heads, kv_policy="any").kv_heads(geo, 1) == [0, 1]
    assert A.HeadSpec(heads=heads, kv_policy="all").kv_heads(geo, 1) == [0]
    assert A.HeadSpec(heads=heads, kv_policy="none").kv_heads(geo, 1) == []
    model = tiny_llama()
    names = set(A.attach(model, A.HeadSpec(heads=heads, kv_policy="all")))
    assert model.get_parameter("model.layers.1.self_attn.k_proj.weight").shape == (12, 40)   # kv head 0 only
    model = tiny_llama()
    names = set(A.attach(model, A.HeadSpec(heads=heads, kv_policy="none")))
    assert not any("k_proj" in n or "v_proj" in n for n in names)


def test_backward_stops_at_lowest_trained_layer():
    """Protects: nothing below the lowest trained layer requires grad, so autograd never goes there."""
    model = tiny_llama()
    A.attach(model, A.HeadSpec(heads=((1, 2),)))
    names = [f"model.layers.{i}" for i in range(3)]
    with TraceDict(model, names) as td:
        model(_ids(), labels=_ids()).loss.backward()
    assert [td[n].output.requires_grad for n in names] == [False, True, True]
    assert model.model.embed_tokens.weight.grad is None
    assert all(p.grad is None for n, p in model.named_parameters() if not p.requires_grad)


def test_adapter_round_trip_and_merge(tmp_path):
    """Protects: a saved adapter (small file + JSON spec) loads into a fresh base model with identical logits,
    and merging gives a save_pretrained checkpoint with the same logits."""
    from transformers import AutoModelForCausalLM
    model = tiny_llama()
    args = training_args(tmp_path / "run", lr=1e-2, batch_size=4, micro_batch_size=4, max_steps=2, warmup=0.0)
    trainer = HeadMaskedTrainer(model, args, spec=SPEC, train_dataset=_rows(), data_collator=Collator(0))
    trainer.train()
    with torch.no_grad():
        trained = model(_ids()).logits
    trainer.save_model(str(tmp_path / "adapter"))
    meta = json.loads((tmp_path / "adapter" / A.ADAPTER_CONFIG).read_text())
    assert meta["spec"]["heads"] == [list(h) for h in SPEC.heads]
    fresh = tiny_llama()
    assert A.load_adapter(fresh, tmp_path / "adapter") == SPEC
    with torch.no_grad():
        assert torch.equal(fresh(_ids()).logits, trained)
    A.merge(fresh).save_pretrained(tmp_path / "merged")
    full = AutoModelForCausalLM.from_pretrained(tmp_path / "merged", attn_implementation="eager").eval()
    with torch.no_grad():
        torch.testing.assert_close(full(_ids()).logits, trained, atol=1e-5, rtol=0)
    small = (tmp_path / "adapter" / A.ADAPTER_WEIGHTS).stat().st_size
    assert small < 0.25 * (tmp_path / "merged" / "model.safetensors").stat().st_size
    with pytest.raises(FileNotFoundError, match="adapter.json"):
        A.load_adapter(tiny_llama(), tmp_path / "nothing")


def test_resume_after_interruption_equals_uninterrupted(tmp_path):
    """Protects: an interrupted precise-SFT run resumed from its Trainer checkpoint (adapter + optimizer +
    scheduler + RNG) ends with exactly the slices of an uninterrupted run."""
    from transformers import TrainerCallback

    class Crash(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if state.global_step == 2:
                raise KeyboardInterrupt("simulated interruption")

    def run(out, callbacks=(), resume=None):
        model = tiny_llama()
        args = training_args(out, lr=1e-2, batch_size=4, micro_batch_size=2, max_steps=4, warmup=0.25,
                             save_steps=2)
        t = HeadMaskedTrainer(model, args, spec=SPEC, train_dataset=_rows(), data_collator=Collator(0),
                              callbacks=list(callbacks))
        t.train(resume_from_checkpoint=resume)
        return model, t

    whole, _ = run(tmp_path / "whole")
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "cut", [Crash()])
    ckpt = tmp_path / "cut" / "checkpoint-2"
    assert (ckpt / A.ADAPTER_WEIGHTS).exists() and not (ckpt / "model.safetensors").exists()
    resumed, t = run(tmp_path / "cut", resume=str(ckpt))
    assert t.state.global_step == 4
    a, b = A.trainable_state(whole), A.trainable_state(resumed)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


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
    (folder / "effects.csv").write_text("task,layer,head,effect\nall,1,0,-0.01\nall,2,1,-0.3\nall,1,mlp,-0.2\n"
                                        "all,0,mlp,0.1\nall,1,2,-0.04\nall,0,3,-0.1\naddition,1,1,-0.9\n")
    heads, mlps = ranked_components(folder)
    assert heads == [(2, 1), (0, 3), (1, 2), (1, 0)] and mlps == [1, 0]
    assert parse_heads("top-3", heads) == [(2, 1), (0, 3), (1, 2)]
    assert parse_heads("12.22,13.11", None) == [(12, 22), (13, 11)]
    with pytest.raises(ValueError, match="only 4 ranked heads"):
        parse_heads("top-9", heads)
    with pytest.raises(FileNotFoundError, match="arithmech identify"):
        ranked_components(tmp_path / "other")
    (folder / "effects.csv").write_text("task,layer,head,effect\n")                 # truncated: no rows
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


def test_runner_writes_results(tmp_path):
    """Protects: the runner writes finetune/<mode>.json with samples/s, tuned parameters, peak memory and
    accuracy before/after, for precise (top-k from key_heads.json) and full SFT with the same settings."""
    from transformers import LlamaConfig, LlamaForCausalLM
    from arithmech.embedded.train import build_tokenizer
    tok = build_tokenizer()
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path / "toy")
    tok.save_pretrained(tmp_path / "toy")
    (tmp_path / "res" / "toy").mkdir(parents=True)
    kh = {"task": "all", "threshold": -0.05,
          "heads": [{"layer": 1, "head": 2}, {"layer": 0, "head": 1}, {"layer": 1, "head": 0}]}
    (tmp_path / "res" / "toy" / "key_heads.json").write_text(json.dumps(kh))
    rows = [f"all,{l},{h},{-0.01 * (l * 4 + h)}" for l in range(2) for h in range(4)] + ["all,0,mlp,0.1", "all,1,mlp,0.2"]
    (tmp_path / "res" / "toy" / "effects.csv").write_text("task,layer,head,effect\n" + "\n".join(rows) + "\n")
    common = dict(model=str(tmp_path / "toy"), results=tmp_path / "res", benchmarks=["generic"], max_steps=2,
                  batch_size=4, micro_batch_size=4, lr=1e-3, n_train=16)
    precise = run_finetune(mode="precise", heads="top-2", **common)
    full = run_finetune(mode="full", **common)
    saved = json.loads((tmp_path / "res" / "toy" / "finetune" / "precise.json").read_text())
    assert saved["heads"] == [[0, 1], [1, 2]] and saved["train"]["steps"] == 2
    assert precise["tuned_parameters"] == 2 * 4 * 32 * 8
    assert full["tuned_parameters"] == full["total_parameters"] > 10 * precise["tuned_parameters"]
    for r in (precise, full):
        assert set(r["base"]) == set(r["results"]) == set(r["delta"]) == {"generic"}
        assert r["delta"]["generic"]["delta"] == pytest.approx(r["results"]["generic"]["value"] - r["base"]["generic"]["value"], abs=1e-4)
        assert r["train"]["samples_per_second"] > 0 and r["train"]["peak_memory"]["peak_bytes"] >= 0
    assert (tmp_path / "res" / "toy" / "finetune" / "full.json").exists()
    with pytest.raises(ValueError, match="--overwrite"):                    # a finished run is never replaced silently
        run_finetune(mode="full", **common)


def test_multi_gpu_full_sft_configuration():
    """Protects: the documented multi-GPU path: the accelerate config file parses as FSDP, training_args
    wraps the model's decoder-layer class with FSDP2 and keeps the effective batch over processes, and
    precise SFT refuses FSDP with a clear message."""
    from pathlib import Path
    from accelerate.commands.config.config_args import load_config_from_file
    cfg = load_config_from_file(str(Path(__file__).parents[1] / "configs" / "accelerate_fsdp.yaml"))
    assert str(cfg.distributed_type).endswith("FSDP") and cfg.fsdp_config["fsdp_version"] == 2
    layer = next(iter(tiny_llama()._no_split_modules))
    args = training_args("/tmp/unused", batch_size=128, micro_batch_size=4, fsdp_layer=layer)
    assert args.fsdp_plugin_args["transformer_cls_names_to_wrap"] == "LlamaDecoderLayer"
    assert args.gradient_accumulation_steps == 32
    with pytest.raises(ValueError, match="multiple of micro_batch_size"):
        training_args("/tmp/unused", batch_size=100, micro_batch_size=8)
    with pytest.raises(ValueError, match="one device"):
        HeadMaskedTrainer(tiny_llama(), args, spec=SPEC)
