"""arithmech: interpreting and improving LLMs in arithmetic calculation (Zhang et al., ICML 2024).

identify (path patching, knockout) → analyze (attention by role, MLP projections) →
fine-tune (precise SFT of key heads), on any Llama-family model, by default on the
embedded arithmetic model shipped with the package.

The public API (each name documented where it lives; the book's *API reference* page lists them):

>>> from arithmech import load_model, pairs, keep_correct, path_patch, knockout, attention_roles, precise_sft
>>> model, tok, geo = load_model("embedded")
>>> xs = keep_correct(model, tok, pairs(tok, "addition", n=64))
>>> fx = path_patch(model, tok, [s.clean for s in xs], [s.corrupt for s in xs], [s.answer for s in xs])

The names are imported on first use (PEP 562), so ``python -m arithmech`` can check its
arguments without importing torch first (a bad argument is refused in well under 2 s).
"""

import importlib

__version__ = "0.1.0"
_WHERE = {
    "load_model": "arithmech.core.models",
    "Geometry": "arithmech.core.models",
    "Trace": "arithmech.core.trace",
    "TraceDict": "arithmech.core.trace",
    **{
        name: "arithmech.api"
        for name in (
            "pairs",
            "keep_correct",
            "answer_ids",
            "sft_pairs",
            "completion_loss",
            "path_patch",
            "knockout",
            "attention_roles",
            "precise_sft",
        )
    },
}


__all__ = list(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'arithmech' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
