"""Head slices as small trainable parameters: the storage behind precise SFT (§4.3, Algorithm 2).

Algorithm 2 trains, for every selected head ``(i, j)``, the rows of ``W_Q^i, W_K^i, W_V^i`` that
produce head ``j`` and the columns of ``W_O^i`` that read it, and optionally whole MLP layers.
Setting ``requires_grad`` on whole tensors and masking gradients would be slow (full-size
gradients and AdamW state for every touched tensor) and *wrong*: AdamW's decoupled weight decay
shrinks every entry of a trainable tensor, also those whose gradient is masked to zero.

Instead, :func:`attach` leaves every base weight frozen and swaps each touched projection for a
thin wrapper module (``model.set_submodule``; nothing in transformers is patched) that owns a
small fp32 :class:`~torch.nn.Parameter` holding a *replacement* copy of the selected slice:

* ``RowSlice`` (q/k/v_proj, ``W: (out, d)``): ``y = base(x)`` then rows ``idx`` of ``y`` are
  overwritten by ``x @ S.T`` with ``S: (len(idx), d)``.  (``index_copy``: the gradient to ``x``
  through the base weight is zero on those rows, so ``d loss/d x`` is exactly that of ``W``
  with rows ``idx`` replaced by ``S``.)
* ``ColSlice`` (o_proj, ``W: (d, H*dh)``): ``y = base(z with columns idx zeroed) + z[..., idx] @ S.T``
  with ``S: (d, len(idx))``.
* ``FP32Module`` (a whole MLP): the layer trained in fp32 (in place in an fp32 model, as an fp32
  copy in a bf16/fp16 model).

So weight gradients and optimizer state exist only for the slices, AdamW decays only the slices
(towards zero, exactly as it would decay those entries of the full weight), every other byte of
the model stays as loaded, and autograd builds no graph below the lowest trained layer (nothing
there requires grad). :func:`merge` writes the slices back into the base weights.

**Gradient rescaling** (§5.3, following Yu et al.): slice gradients of layer ``i`` are multiplied
by ``H / h_i`` (``H`` query heads per layer, ``h_i`` selected in layer ``i``) with an identity-forward
autograd function, so the forward pass is bit-identical. AdamW is nearly invariant to a constant
gradient scale; the rescale matters through ``max_grad_norm`` clipping and Adam's epsilon.

**GQA policy** (Mistral, Llama 3: ``n_kv_heads < n_heads``): query head ``j`` reads kv head
``j // group``. ``kv_policy="any"`` (default) trains the K/V slice of kv head ``g`` when *any*
selected query head reads it; consequence: the unselected query heads of that group see changed
keys/values, so their attention changes although their own Q/O stay frozen. ``"all"`` trains K/V
of ``g`` only when *every* query head of the group is selected (no unselected head is affected,
but a lone selected head keeps its K/V frozen); ``"none"`` trains only W_Q and W_O. For MHA
(group 1) ``any`` and ``all`` coincide.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from arithmech.core.atomic import atomic_json
from arithmech.core.models import Geometry, arch_for, geometry

ADAPTER_WEIGHTS = "adapter.safetensors"
ADAPTER_CONFIG = "adapter.json"
from safetensors.torch import load_file, save_file

from arithmech.core.inputs import KV_POLICIES, quoted  # noqa: E402,F401 (the choices, one place)


@dataclass(frozen=True)
class HeadSpec:
    """What precise SFT trains: query heads ``(layer, head)``, whole MLP layers, the GQA policy."""

    heads: tuple[tuple[int, int], ...]
    mlps: tuple[int, ...] = ()
    kv_policy: str = "any"
    rescale: bool = True

    def __post_init__(self):
        object.__setattr__(self, "heads", tuple(sorted({(int(l), int(h)) for l, h in self.heads})))
        object.__setattr__(self, "mlps", tuple(sorted({int(m) for m in self.mlps})))
        if self.kv_policy not in KV_POLICIES:
            raise ValueError(f"kv_policy {self.kv_policy!r}: use one of {KV_POLICIES}")

    def by_layer(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for l, h in self.heads:
            out.setdefault(l, []).append(h)
        return out

    def kv_heads(self, geo: Geometry, layer: int) -> list[int]:
        """K/V heads of ``layer`` whose slices are trained under ``kv_policy``."""
        sel = set(self.by_layer().get(layer, []))
        groups = sorted({geo.kv_head(h) for h in sel})
        if self.kv_policy == "none":
            return []
        if self.kv_policy == "all":
            return [g for g in groups if all(g * geo.group + k in sel for k in range(geo.group))]
        return groups

    def scale(self, geo: Geometry, layer: int) -> float:
        """``H / h``: the gradient factor for the head slices of ``layer`` (1 when ``rescale`` is off)."""
        h = len(self.by_layer().get(layer, []))
        return geo.n_heads / h if (self.rescale and h) else 1.0

    def validate(self, geo: Geometry) -> None:
        for l, h in self.heads:
            if not (0 <= l < geo.n_layers and 0 <= h < geo.n_heads):
                raise ValueError(f"head ({l}, {h}) is outside the model ({geo.n_layers} layers x {geo.n_heads} heads)")
        for m in self.mlps:
            if not 0 <= m < geo.n_layers:
                raise ValueError(f"MLP layer {m} is outside the model ({geo.n_layers} layers)")

    def to_json(self) -> dict:
        return {
            "heads": [list(x) for x in self.heads],
            "mlps": list(self.mlps),
            "kv_policy": self.kv_policy,
            "rescale": self.rescale,
        }

    @classmethod
    def from_json(cls, d: dict) -> HeadSpec:
        return cls(
            heads=tuple(map(tuple, d["heads"])),
            mlps=tuple(d.get("mlps", ())),
            kv_policy=d.get("kv_policy", "any"),
            rescale=d.get("rescale", True),
        )


def head_index(heads: list[int], head_dim: int) -> torch.Tensor:
    """Flat feature indices ``(len(heads) * head_dim,)`` of ``heads`` in a projection's head axis."""
    return torch.cat([torch.arange(h * head_dim, (h + 1) * head_dim) for h in sorted(heads)])


class _ScaleGrad(torch.autograd.Function):
    """Identity forward; multiplies the gradient by ``scale`` (H/h rescaling)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None


def _scaled(p: torch.Tensor, scale: float, dtype: torch.dtype) -> torch.Tensor:
    return (_ScaleGrad.apply(p, scale) if scale != 1.0 else p).to(dtype)


class RowSlice(nn.Module):
    """q/k/v projection whose output rows ``index`` come from the trainable fp32 ``weight``
    ``(len(index), d_in)`` (and ``bias`` rows when the base has a bias, e.g. Qwen2)."""

    index: torch.Tensor  # the registered buffer (annotation only: nn.Module types attributes as Tensor | Module)

    def __init__(self, base: nn.Linear, index: torch.Tensor, scale: float = 1.0):
        super().__init__()
        self.base, self.scale = base, scale
        self.register_buffer("index", index.to(base.weight.device), persistent=False)
        self.weight = nn.Parameter(base.weight.detach()[self.index].float().clone())
        self.bias = nn.Parameter(base.bias.detach()[self.index].float().clone()) if base.bias is not None else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.base(x)
        b = None if self.bias is None else _scaled(self.bias, self.scale, x.dtype)
        s = F.linear(x, _scaled(self.weight, self.scale, x.dtype), b)
        return y.index_copy(y.dim() - 1, self.index, s.to(y.dtype))

    def merge_into_base(self) -> nn.Linear:
        with torch.no_grad():
            self.base.weight[self.index] = self.weight.to(self.base.weight.dtype)
            if self.bias is not None:
                self.base.bias[self.index] = self.bias.to(self.base.bias.dtype)
        return self.base


class ColSlice(nn.Module):
    """o_proj whose input columns ``index`` are read through the trainable fp32 ``weight``
    ``(d_out, len(index))``; the base sees those columns zeroed."""

    index: torch.Tensor  # the registered buffer, as in RowSlice

    def __init__(self, base: nn.Linear, index: torch.Tensor, scale: float = 1.0):
        super().__init__()
        self.base, self.scale = base, scale
        self.register_buffer("index", index.to(base.weight.device), persistent=False)
        self.weight = nn.Parameter(base.weight.detach()[:, self.index].float().clone())
        self.bias = None

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        d = z.dim() - 1
        y = self.base(z.index_fill(d, self.index, 0))
        s = F.linear(z.index_select(d, self.index), _scaled(self.weight, self.scale, z.dtype))
        return y + s.to(y.dtype)

    def merge_into_base(self) -> nn.Linear:
        with torch.no_grad():
            self.base.weight[:, self.index] = self.weight.to(self.base.weight.dtype)
        return self.base


class FP32Module(nn.Module):
    """A whole layer (an MLP) trained in fp32: the layer itself in an fp32 model, an fp32 copy
    inside a half-precision model (cast back by :meth:`merge_into_base`)."""

    def __init__(self, base: nn.Module):
        super().__init__()
        self.dtype = next(base.parameters()).dtype
        inner = base if self.dtype == torch.float32 else copy.deepcopy(base).float()
        self.inner = inner.requires_grad_(True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x.float()).to(x.dtype)

    def merge_into_base(self) -> nn.Module:
        return self.inner.requires_grad_(False).to(self.dtype)


_SLICES = (RowSlice, ColSlice, FP32Module)


def slice_modules(model: nn.Module) -> dict[str, RowSlice | ColSlice | FP32Module]:
    """Module path -> wrapper, for every wrapper :func:`attach` installed."""
    return {n: m for n, m in model.named_modules() if isinstance(m, _SLICES)}


def attach(model: nn.Module, spec: HeadSpec, geo: Geometry | None = None) -> dict[str, nn.Parameter]:
    """Freeze ``model`` and install trainable slices for ``spec``; return ``{name: parameter}``.

    Parameter names (also the adapter file's keys) are the module path plus ``.weight`` /
    ``.bias`` for head slices and the MLP's own parameter names for MLPs.
    """
    if slice_modules(model):
        raise ValueError("this model already has slices attached; merge() or reload it first")
    geo = geo or geometry(model)
    spec.validate(geo)
    arch = arch_for(model)
    model.requires_grad_(False)
    params: dict[str, nn.Parameter] = {}
    for layer, heads in spec.by_layer().items():
        scale = spec.scale(geo, layer)
        q_idx = head_index(heads, geo.head_dim)
        kv = spec.kv_heads(geo, layer)
        for name, idx, cls in (
            ("q_proj", q_idx, RowSlice),
            ("k_proj", kv, RowSlice),
            ("v_proj", kv, RowSlice),
            ("o_proj", q_idx, ColSlice),
        ):
            if isinstance(idx, list):
                if not idx:
                    continue
                idx = head_index(idx, geo.head_dim)
            path = arch.path(name, layer)
            wrapper = cls(cast(nn.Linear, model.get_submodule(path)), idx, scale)  # a q/k/v/o projection
            model.set_submodule(path, wrapper)
            params.update({f"{path}.{k}": p for k, p in wrapper.named_parameters(recurse=False)})
    for layer in spec.mlps:
        path = arch.path("mlp", layer)
        mlp = FP32Module(model.get_submodule(path))
        model.set_submodule(path, mlp)
        params.update({f"{path}.{k}": p for k, p in mlp.inner.named_parameters()})
    return params


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The adapter's tensors (fp32 slices and MLP weights) keyed like :func:`attach` names them."""
    out: dict[str, torch.Tensor] = {}
    for path, m in slice_modules(model).items():
        if isinstance(m, FP32Module):
            out.update({f"{path}.{k}": p for k, p in m.inner.named_parameters()})
        else:
            out.update({f"{path}.{k}": p for k, p in m.named_parameters(recurse=False)})
    return out


def save_adapter(model: nn.Module, spec: HeadSpec, out_dir: str | Path, base: str | None = None) -> Path:
    """Write ``adapter.safetensors`` (the slices, fp32) and ``adapter.json`` (spec, geometry, base)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().contiguous().cpu() for k, v in trainable_state(model).items()}
    geo = geometry(model)
    meta = {
        "format": "arithmech-head-slices/1",
        "spec": spec.to_json(),
        "geometry": asdict(geo),
        "base_model": base or getattr(model.config, "_name_or_path", None),
        "tensors": {k: list(v.shape) for k, v in tensors.items()},
        "parameters": int(sum(v.numel() for v in tensors.values())),
    }
    tmp = out / (ADAPTER_WEIGHTS + ".tmp")
    save_file(tensors, str(tmp))
    os.replace(tmp, out / ADAPTER_WEIGHTS)
    atomic_json(out / ADAPTER_CONFIG, meta)
    return out


def read_spec(adapter_dir: str | Path) -> HeadSpec:
    p = Path(adapter_dir) / ADAPTER_CONFIG
    if not p.exists():
        raise FileNotFoundError(
            f"no adapter at {quoted(p.parent)}: expected {ADAPTER_CONFIG} and {ADAPTER_WEIGHTS} "
            "(written by save_adapter / HeadMaskedTrainer)"
        )
    return HeadSpec.from_json(json.loads(p.read_text())["spec"])


def load_adapter(model: nn.Module, adapter_dir: str | Path) -> HeadSpec:
    """Attach the slices saved in ``adapter_dir`` to a freshly loaded base ``model`` (or copy them
    into already attached slices, as when resuming) and return the spec."""
    spec = read_spec(adapter_dir)
    geo = geometry(model)
    meta = json.loads((Path(adapter_dir) / ADAPTER_CONFIG).read_text())
    if meta["geometry"] != asdict(geo):
        raise ValueError(
            f"adapter {quoted(adapter_dir)} was made for geometry {meta['geometry']}, this model has {asdict(geo)}"
        )
    if not slice_modules(model):
        attach(model, spec, geo)
    state = trainable_state(model)
    saved = load_file(str(Path(adapter_dir) / ADAPTER_WEIGHTS))
    if set(saved) != set(state):
        raise ValueError(
            f"adapter {quoted(adapter_dir)} holds {sorted(saved)[:4]}..., the model expects {sorted(state)[:4]}..."
        )
    with torch.no_grad():
        for k, p in state.items():
            p.copy_(saved[k])
    return spec


def merge(model: nn.Module) -> nn.Module:
    """Write every slice back into its base weight and remove the wrappers (in place).

    After ``merge`` the model is a plain HF model: ``model.save_pretrained(folder)`` gives a full
    checkpoint. Entries outside the slices are untouched, byte for byte.
    """
    for path, m in slice_modules(model).items():
        model.set_submodule(path, m.merge_into_base())
    model.requires_grad_(False)
    return model


# ------------------------------------------------------------------------ parameter counts, memory
@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes of one training step on one device; see :func:`precise_sft_memory`."""

    weights: float
    trainable: float
    grads_and_optimizer: float
    activations: float
    logits: float
    total: float = field(init=False)

    def __post_init__(self):
        object.__setattr__(
            self, "total", self.weights + self.trainable + self.grads_and_optimizer + self.activations + self.logits
        )

    def gib(self) -> dict[str, float]:
        return {k: round(v / 2**30, 2) for k, v in asdict(self).items()}


def tuned_parameters(geo: Geometry, n_heads: int, n_mlps: int = 0, d_ff: int = 0, kv_fraction: float = 1.0) -> int:
    """Parameters precise SFT trains: per head ``W_Q, W_O`` slices (``d x dh`` each) plus
    ``kv_fraction`` of the ``W_K, W_V`` slices (1 for MHA; under GQA the K/V slices are shared),
    plus ``3 * d * d_ff`` per gated MLP. LLaMA2-7B, 32 heads: 0.067B (Table 2)."""
    per_head = geo.d_model * geo.head_dim * (2 + 2 * kv_fraction)
    return int(n_heads * per_head + n_mlps * 3 * geo.d_model * d_ff)


def precise_sft_memory(  # noqa: PLR0913 (the geometry and the run's sizes)
    geo: Geometry,
    n_heads: int,
    n_mlps: int = 0,
    d_ff: int = 0,
    batch: int = 1,
    seq: int = 512,
    lowest_layer: int = 0,
    weight_bytes: int = 2,
    flash_attention: bool = True,
) -> MemoryEstimate:
    """Peak memory of precise SFT on one device, from the geometry alone.

    * weights: every parameter in ``weight_bytes`` (bf16: 2), frozen;
    * trainable: an fp32 copy of the slices (4 bytes/param);
    * grads + AdamW: fp32 gradient + two moments = 12 bytes per trainable parameter;
    * activations saved for backward, only for layers ``lowest_layer..L-1`` (below it nothing requires
      grad): ``34 * s * b * d`` bytes per layer in 16 bit (Korthikanti et al. 2022), plus
      ``5 * heads * s^2 * b`` without flash attention;
    * logits: ``b * s * V`` in fp32, twice (logits and their gradient).
    Embedding and norm parameters are counted in ``weights`` through ``approx_parameters``.
    """
    n_params = approx_parameters(geo, d_ff)
    trainable = tuned_parameters(geo, n_heads, n_mlps, d_ff, kv_fraction=1 / geo.group)
    per_layer = 34 * seq * batch * geo.d_model + (0 if flash_attention else 5 * geo.n_heads * seq * seq * batch)
    return MemoryEstimate(
        weights=n_params * weight_bytes,
        trainable=trainable * 4.0,
        grads_and_optimizer=trainable * 12.0,
        activations=float(per_layer * (geo.n_layers - lowest_layer)),
        logits=2 * 4.0 * batch * seq * geo.vocab_size,
    )


def approx_parameters(geo: Geometry, d_ff: int) -> int:
    """Parameters of a Llama-layout model: attention, gated MLP, norms, untied embeddings."""
    attn = geo.d_model * geo.head_dim * (2 * geo.n_heads + 2 * geo.n_kv_heads)
    return (
        geo.n_layers * (attn + 3 * geo.d_model * d_ff + 2 * geo.d_model)
        + 2 * geo.vocab_size * geo.d_model
        + geo.d_model
    )
