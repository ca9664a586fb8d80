"""Hooks on a plain Hugging Face model, with baukit's ``Trace`` / ``TraceDict`` semantics.

A :class:`Trace` is a context manager around one named submodule. While it is open it can

* **retain** the module's input and/or output (``retain_input``, ``retain_output``),
  optionally ``detach``-ed and/or ``clone``-d so later in-place ops cannot change them;
* **edit** the input before the module runs (``edit_input(x, name) -> x``) or the output
  after it ran (``edit_output(y, name) -> y``);
* **stop** the forward pass right after the module (``stop=True``), which saves the
  rest of the network when only an activation is needed.

Hooks are removed when the ``with`` block exits, also on an exception; nothing global
is ever registered. Transformers 5 calls ``self_attn`` with keyword arguments only, so
the "input" of a module is its first positional argument or, when there is none, the
keyword argument named like the first parameter of its ``forward`` (``hidden_states``).

>>> with Trace(model, "model.layers.3.self_attn.o_proj", retain_input=True) as t:
...     model(ids)
>>> z = split_heads(t.input, geo)        # (batch, seq, n_heads, head_dim)

Per-head helpers: the input of ``o_proj`` is the concatenation of the heads' outputs
``z`` (before W_O). :func:`split_heads` / :func:`merge_heads` move between the flat and
per-head views; :func:`head_contributions` multiplies each head by its own W_O block,
so that ``head_contributions(z, W_O).sum(-2) == o_proj(z)`` (no bias in Llama).
"""

from __future__ import annotations

import contextlib
import inspect
from collections import OrderedDict
from collections.abc import Callable, Iterable

import torch
from torch import nn


class StopForward(Exception):
    """Raised after a module traced with ``stop=True``; swallowed by the ``with`` block."""


def _first_param(module: nn.Module) -> str | None:
    params = list(inspect.signature(module.forward).parameters.values())
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            return p.name
    return None


def _keep(x, clone: bool, detach: bool):
    """Apply detach/clone to a tensor or to every tensor inside a tuple/list."""
    if isinstance(x, torch.Tensor):
        if detach:
            x = x.detach()
        return x.clone() if clone else x
    if isinstance(x, (tuple, list)):
        return type(x)(_keep(v, clone, detach) for v in x)
    return x


class Trace(contextlib.AbstractContextManager):
    """Retain or edit the input/output of one submodule ``name`` of ``model``.

    Attributes after the forward pass: ``input`` (the module's main input tensor) and
    ``output`` (exactly what the module returned, e.g. a tuple for ``self_attn``).
    """

    def __init__(  # noqa: PLR0913 (baukit's signature, kept)
        self,
        model: nn.Module,
        name: str,
        retain_output: bool = True,
        retain_input: bool = False,
        clone: bool = False,
        detach: bool = False,
        edit_input: Callable | None = None,
        edit_output: Callable | None = None,
        stop: bool = False,
    ):
        self.name = name
        self.input = None
        self.output = None
        mod = model.get_submodule(name)
        arg_name = _first_param(mod)
        handles = []

        def pre_hook(m, args, kwargs):
            if args:
                x = args[0]
            elif arg_name in kwargs:
                x = kwargs[arg_name]
            else:
                return None
            if edit_input is not None:
                x = edit_input(x, name)
                if args:
                    args = (x,) + tuple(args[1:])
                else:
                    kwargs = {**kwargs, arg_name: x}
            if retain_input:
                self.input = _keep(x, clone, detach)
            return (args, kwargs) if edit_input is not None else None

        def post_hook(m, args, output):
            if edit_output is not None:
                output = edit_output(output, name)
            if retain_output:
                self.output = _keep(output, clone, detach)
            if stop:
                raise StopForward(name)
            return output

        if retain_input or edit_input is not None:
            handles.append(mod.register_forward_pre_hook(pre_hook, with_kwargs=True))
        handles.append(mod.register_forward_hook(post_hook))
        self._handles = handles

    def close(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.close()
        return exc_type is not None and issubclass(exc_type, StopForward)


class TraceDict(OrderedDict, contextlib.AbstractContextManager):
    """Several :class:`Trace` at once, keyed by module name.

    ``edit_input``/``edit_output`` receive the module name as second argument, so one
    callback can act on many layers. ``stop=True`` stops after the last name given.
    """

    def __init__(  # noqa: PLR0913 (baukit's signature, kept)
        self,
        model: nn.Module,
        names: Iterable[str],
        retain_output: bool = True,
        retain_input: bool = False,
        clone: bool = False,
        detach: bool = False,
        edit_input: Callable | None = None,
        edit_output: Callable | None = None,
        stop: bool = False,
    ):
        super().__init__()
        names = list(dict.fromkeys(names))
        try:
            for i, n in enumerate(names):
                self[n] = Trace(
                    model,
                    n,
                    retain_output=retain_output,
                    retain_input=retain_input,
                    clone=clone,
                    detach=detach,
                    edit_input=edit_input,
                    edit_output=edit_output,
                    stop=stop and i == len(names) - 1,
                )
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        for t in self.values():
            t.close()

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.close()
        return exc_type is not None and issubclass(exc_type, StopForward)


# ---------------------------------------------------------------------------------------------
# Per-head views of the o_proj input. n_heads is the number of *query* heads: under GQA several
# query heads share one K/V head (query head h reads kv head Geometry.kv_head(h), core/models.py), but
# each query head still writes its own head_dim slice into o_proj.
# ---------------------------------------------------------------------------------------------


def split_heads(z: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(..., n_heads * head_dim) -> (..., n_heads, head_dim)``."""
    return z.unflatten(-1, (n_heads, -1))


def merge_heads(z: torch.Tensor) -> torch.Tensor:
    """``(..., n_heads, head_dim) -> (..., n_heads * head_dim)``."""
    return z.flatten(-2)


def head_contributions(z: torch.Tensor, w_o: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Each head's write into the residual stream.

    Args:
        z: o_proj input, ``(..., n_heads * head_dim)``.
        w_o: o_proj weight, ``(d_model, n_heads * head_dim)``.
    Returns:
        ``(..., n_heads, d_model)``; summed over heads it equals ``z @ w_o.T``.
    """
    zh = split_heads(z, n_heads)  # (..., H, dh)
    wo = w_o.unflatten(1, (n_heads, -1))  # (d, H, dh)
    return torch.einsum("...hk,dhk->...hd", zh, wo)
