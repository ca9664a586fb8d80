"""Model loading and the architecture table (arithmech.core.models)."""
from __future__ import annotations

import pytest
import torch
from factories import make_tiny_llama

from arithmech.core.models import (
    ARCHITECTURES,
    Geometry,
    UnsupportedModelError,
    arch_for,
    geometry,
    load_model,
    module,
    resolve,
)


def test_geometry_read_from_config():
    """Protects: head geometry comes from the config (GQA kv heads, explicit head_dim != d_model/heads), and
    ``geometry(model)`` (every method's reader of a loaded model's sizes) is exactly that reading."""
    m = make_tiny_llama()
    g = geometry(m)
    assert g == Geometry.from_config(m.config)
    assert (g.n_layers, g.n_heads, g.n_kv_heads, g.head_dim, g.d_model) == (3, 4, 2, 12, 40)
    assert [g.kv_head(h) for h in range(4)] == [0, 0, 1, 1]
    assert module(m, arch_for(m), "q_proj", 2).out_features == g.n_heads * g.head_dim


def test_unsupported_architecture_one_clear_error():
    """Protects: a model outside the table fails once, listing what is supported."""
    from transformers import GPT2Config, GPT2LMHeadModel
    m = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=10))
    with pytest.raises(UnsupportedModelError, match="supported model types: llama, mistral"):
        arch_for(m)


def test_table_validated_against_model_paths():
    """Protects: a family whose modules moved is caught at load, not deep inside patching."""
    m = make_tiny_llama()
    m.model.layers[2].mlp = None
    del m.model.layers[2].mlp
    with pytest.raises(UnsupportedModelError, match="model.layers.2.mlp"):
        arch_for(m)


def test_unknown_model_clear_error(tmp_path):
    """Protects: an unknown name/path fails with a message that says what to use instead."""
    with pytest.raises(OSError, match="No model hub is reachable here"):
        load_model(str(tmp_path / "no-such-model"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve(str(tmp_path / "x.gguf"))


def test_local_folder_roundtrip_and_options(tmp_path):
    """Protects: a saved HF folder loads through the same path, with dtype and attention options."""
    m = make_tiny_llama()
    m.save_pretrained(tmp_path)
    from arithmech.embedded.train import build_tokenizer
    build_tokenizer().save_pretrained(tmp_path)
    model, tok, geo = load_model(str(tmp_path), dtype="bfloat16", attn_implementation="sdpa")
    assert model.dtype == torch.bfloat16 and model.config._attn_implementation == "sdpa"
    assert not any(p.requires_grad for p in model.parameters())
    assert geo.n_kv_heads == 2


def test_embedded_model_loads_offline():
    """Protects: the shipped model is a standard HF folder that loads with no network."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from arithmech.core.names import EMBEDDED_DIR
    model, tok, geo = load_model("embedded")
    assert model.config.model_type == "llama" and geo.n_layers >= 4
    AutoModelForCausalLM.from_pretrained(EMBEDDED_DIR)
    t = AutoTokenizer.from_pretrained(EMBEDDED_DIR)
    assert t.convert_ids_to_tokens(t("1723 + 5 =")["input_ids"])[1:5] == ["1", "7", "2", "3"]


def test_all_table_rows_have_distinct_model_types():
    """Protects: one model_type maps to exactly one row of the table."""
    types = [t for a in ARCHITECTURES.values() for t in a.model_types]
    assert len(types) == len(set(types))


def test_the_two_hook_sites_are_named_once():
    """Protects the one naming of the hook sites every intervention traces: the heads' site of layer
    ``i`` is the o_proj module (its input holds the heads' outputs) and the MLPs' is the mlp module, path → layer
    in the order the layers are given, and both resolve on a real model."""
    from arithmech.core.models import ARCHITECTURES

    arch = ARCHITECTURES["llama-like"]
    assert arch.head_sites([2, 0]) == {"model.layers.2.self_attn.o_proj": 2, "model.layers.0.self_attn.o_proj": 0}
    assert arch.mlp_sites(range(2)) == {"model.layers.0.mlp": 0, "model.layers.1.mlp": 1}
    m = make_tiny_llama()
    for path in [*arch.head_sites(range(m.config.num_hidden_layers)), *arch.mlp_sites([0])]:
        m.get_submodule(path)
