"""arithmech: interpreting and improving LLMs in arithmetic calculation (Zhang et al., ICML 2024).

identify (path patching, knockout) → analyze (attention by role, MLP projections) →
fine-tune (precise SFT of key heads), on any Llama-family model, by default on the
embedded arithmetic model shipped with the package.

The names below are imported on first use (PEP 562), so ``python -m arithmech`` can check its
arguments without importing torch first (a bad argument is refused in well under 2 s).
"""

import importlib

__all__ = ["load_model", "Geometry", "Trace", "TraceDict"]
__version__ = "0.1.0"
_WHERE = {
    "load_model": "arithmech.core.models",
    "Geometry": "arithmech.core.models",
    "Trace": "arithmech.core.trace",
    "TraceDict": "arithmech.core.trace",
}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'arithmech' has no attribute {name!r}")
