"""Precise SFT (arithmech.finetune.adapter, arithmech.finetune.runner) is exact: untouched weights keep
their bytes, slice gradients equal the masked full-tensor gradients, adapters and resumed runs reproduce
the model they came from."""
from __future__ import annotations

import copy
import json

import pytest
import torch
from factories import make_tiny_llama, random_sft_rows

from arithmech.core.models import Geometry
from arithmech.finetune import adapter
from arithmech.finetune.data import Collator
from arithmech.finetune.runner import HeadMaskedTrainer, training_args

SPEC = adapter.HeadSpec(heads=((1, 0), (1, 3), (2, 2)))      # make_tiny_llama: 3 layers, 4 heads, 2 kv heads


PROJ = ("q_proj", "k_proj", "v_proj", "o_proj")




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
    model = make_tiny_llama("sdpa")
    geo = Geometry.from_config(model.config)
    spec = adapter.HeadSpec(heads=SPEC.heads, mlps=(0,))
    orig = {k: v.clone() for k, v in model.state_dict().items()}
    args = training_args(tmp_path, lr=1e-2, batch_size=8, micro_batch_size=4, max_steps=3, warmup=0.0,
                         weight_decay=0.1)
    HeadMaskedTrainer(model, args, spec=spec, train_dataset=random_sft_rows(), data_collator=Collator(0)).train()
    for k, v in model.state_dict().items():               # base weights while the slices are attached
        if ".base." in k:
            assert torch.equal(v, orig[k.replace(".base.", ".")]), k
    merged = adapter.merge(model).state_dict()
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
    model = make_tiny_llama("sdpa").to(torch.bfloat16)
    geo = Geometry.from_config(model.config)
    spec = adapter.HeadSpec(heads=SPEC.heads, mlps=(0,))
    orig = {k: v.clone() for k, v in model.state_dict().items()}
    masks = _selected(model, spec, geo)
    args = training_args(tmp_path, lr=1e-2, batch_size=4, micro_batch_size=4, max_steps=2, warmup=0.0, bf16=True)
    trainer = HeadMaskedTrainer(model, args, spec=spec, train_dataset=random_sft_rows(), data_collator=Collator(0))
    trainer.train()
    state = adapter.trainable_state(model)
    assert all(p.dtype == torch.float32 for p in state.values())
    assert all(trainer.optimizer.state[p]["exp_avg"].dtype == torch.float32 for p in state.values())
    for k, v in adapter.merge(model).state_dict().items():
        m = masks.get(k, torch.zeros_like(v, dtype=torch.bool))
        assert v.dtype == torch.bfloat16 and torch.equal(v[~m], orig[k][~m]), k
        assert not m.any() or not torch.equal(v[m], orig[k][m]), k


def test_naive_masked_full_tensor_changes_untouched_entries():
    """Protects (contrast): masking gradients of whole trainable tensors is NOT enough, AdamW's weight decay
    moves the masked entries; the slices reproduce the naive run's selected entries exactly."""
    torch.manual_seed(0)
    naive, ours = make_tiny_llama(), make_tiny_llama()
    geo = Geometry.from_config(naive.config)
    spec = adapter.HeadSpec(heads=SPEC.heads, rescale=False)
    masks = _selected(naive, spec, geo)
    naive.requires_grad_(False)
    params = []
    for k, m in masks.items():
        p = naive.get_parameter(k)
        p.requires_grad_(True)
        p.register_hook(lambda g, m=m: g * m)            # the naive "masked gradient"
        params.append(p)
    orig = {k: naive.get_parameter(k).detach().clone() for k in masks}
    slices = adapter.attach(ours, spec)
    opt_n = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1)
    opt_o = torch.optim.AdamW(slices.values(), lr=1e-2, weight_decay=0.1)
    ids = _ids()
    for _ in range(3):
        for net, opt in ((naive, opt_n), (ours, opt_o)):
            opt.zero_grad()
            net(ids, labels=ids).loss.backward()
            opt.step()
    adapter.merge(ours)
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
        model = make_tiny_llama()
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
    slices = adapter.attach(model, SPEC)
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
        g = full[:, mod.index] if isinstance(mod, adapter.ColSlice) else full[mod.index]
        scale = SPEC.scale(geo, int(path.split(".")[2]))
        torch.testing.assert_close(p.grad, scale * g, atol=1e-7, rtol=1e-5)
    if family == "qwen2-bias":
        assert any(k.endswith(".bias") for k in slices)


def test_rescale_is_h_over_h_and_forward_unchanged():
    """Protects: §5.3's rescaling multiplies layer i's slice gradients by H/h_i and leaves the forward
    pass bit-identical."""
    grads, logits = {}, {}
    for rescale in (True, False):
        model = make_tiny_llama()
        slices = adapter.attach(model, adapter.HeadSpec(heads=SPEC.heads, rescale=rescale))
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


def test_adapter_round_trip_and_merge(tmp_path):
    """Protects: a saved adapter (small file + JSON spec) loads into a fresh base model with identical logits,
    and merging gives a save_pretrained checkpoint with the same logits."""
    from transformers import AutoModelForCausalLM
    model = make_tiny_llama()
    args = training_args(tmp_path / "run", lr=1e-2, batch_size=4, micro_batch_size=4, max_steps=2, warmup=0.0)
    trainer = HeadMaskedTrainer(model, args, spec=SPEC, train_dataset=random_sft_rows(), data_collator=Collator(0))
    trainer.train()
    with torch.no_grad():
        trained = model(_ids()).logits
    trainer.save_model(str(tmp_path / "adapter"))
    meta = json.loads((tmp_path / "adapter" / adapter.ADAPTER_CONFIG).read_text())
    assert meta["spec"]["heads"] == [list(h) for h in SPEC.heads]
    fresh = make_tiny_llama()
    assert adapter.load_adapter(fresh, tmp_path / "adapter") == SPEC
    with torch.no_grad():
        assert torch.equal(fresh(_ids()).logits, trained)
    adapter.merge(fresh).save_pretrained(tmp_path / "merged")
    full = AutoModelForCausalLM.from_pretrained(tmp_path / "merged", attn_implementation="eager").eval()
    with torch.no_grad():
        torch.testing.assert_close(full(_ids()).logits, trained, atol=1e-5, rtol=0)
    small = (tmp_path / "adapter" / adapter.ADAPTER_WEIGHTS).stat().st_size
    assert small < 0.25 * (tmp_path / "merged" / "model.safetensors").stat().st_size
    with pytest.raises(FileNotFoundError, match="adapter.json"):
        adapter.load_adapter(make_tiny_llama(), tmp_path / "nothing")


def test_resume_after_interruption_equals_uninterrupted(tmp_path):
    """Protects: an interrupted precise-SFT run resumed from its Trainer checkpoint (adapter + optimizer +
    scheduler + RNG) ends with exactly the slices of an uninterrupted run."""
    from transformers import TrainerCallback

    class Crash(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if state.global_step == 2:
                raise KeyboardInterrupt("simulated interruption")

    def run(out, callbacks=(), resume=None):
        model = make_tiny_llama()
        args = training_args(out, lr=1e-2, batch_size=4, micro_batch_size=2, max_steps=4, warmup=0.25,
                             save_steps=2)
        t = HeadMaskedTrainer(model, args, spec=SPEC, train_dataset=random_sft_rows(), data_collator=Collator(0),
                              callbacks=list(callbacks))
        t.train(resume_from_checkpoint=resume)
        return model, t

    whole, _ = run(tmp_path / "whole")
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "cut", [Crash()])
    ckpt = tmp_path / "cut" / "checkpoint-2"
    assert (ckpt / adapter.ADAPTER_WEIGHTS).exists() and not (ckpt / "model.safetensors").exists()
    resumed, t = run(tmp_path / "cut", resume=str(ckpt))
    assert t.state.global_step == 4
    a, b = adapter.trainable_state(whole), adapter.trainable_state(resumed)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
