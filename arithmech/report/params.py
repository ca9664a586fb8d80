"""Checking a chapter's papermill parameters: one clear message for a wrong type or value.

A chapter's parameters cell sets defaults; papermill injects the caller's values right after
it; the next cell calls :func:`check_params`, so ``papermill -p n_samples many`` fails there,
naming the parameter, what it got and what it expects.
"""
from __future__ import annotations

from typing import Any


class ParameterError(ValueError):
    """A papermill parameter has the wrong type or value."""


def check_params(values: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """Validate ``values`` (e.g. ``globals()``) against ``spec``; return the checked subset.

    ``spec`` maps a name to a type (``int``, ``float``, ``str``, ``bool``, ``list``), a tuple of
    allowed values, or a ``(type, predicate, description)`` triple:

    >>> check_params(globals(), {"model": str, "n_samples": (int, lambda n: n > 0, "a positive integer"),
    ...                          "device": ("cpu", "cuda", "mps")})
    """
    out = {}
    for name, rule in spec.items():
        if name not in values:
            raise ParameterError(f"parameter {name!r} is missing from the parameters cell")
        v = values[name]
        if isinstance(rule, tuple) and len(rule) == 3 and isinstance(rule[0], type) and callable(rule[1]):
            typ, ok, desc = rule
            if not _is(v, typ) or not ok(v):
                raise ParameterError(f"parameter {name}={v!r} ({type(v).__name__}): expected {desc}")
        elif isinstance(rule, tuple):
            if v not in rule:
                raise ParameterError(f"parameter {name}={v!r}: expected one of {list(rule)}")
        elif isinstance(rule, type):
            if not _is(v, rule):
                raise ParameterError(f"parameter {name}={v!r} is a {type(v).__name__}; expected {rule.__name__} "
                                     f"(papermill: -p {name} VALUE, or -y '{{{name}: VALUE}}' for lists)")
        out[name] = v
    return out


def _is(v: Any, typ: type) -> bool:
    if typ is float:
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if typ is int:
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, typ)
