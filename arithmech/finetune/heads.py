"""Which heads a fine-tune tunes: the ``--heads`` argument, checked against the model and identify's ranking.

:func:`parse_heads_arg` and :func:`parse_heads` read ``top-K`` or ``L.H,L.H`` (``top-K`` from a ranking handed in);
:func:`model_geometry` and :func:`check_heads_in_model` check the heads against the model's shape. The ranking itself
is read by identify's Result (:func:`arithmech.identify.result.read_ranking`: ``key_heads.json`` and ``effects.csv``,
their shape checked); :func:`arithmech.pipeline.ensure.ensure_ranking` runs identify first where a folder has no
ranking; the fine-tune step itself is :mod:`arithmech.table1.finetune`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from transformers import AutoConfig

from arithmech.core.models import Geometry, resolve

_PAIR = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


def parse_heads_arg(arg: str) -> int | list[tuple[int, int]]:
    """Syntax of ``--heads``: ``top-K`` gives ``K`` (an int >= 1); ``12.22,13.11`` gives ``[(12, 22), (13, 11)]``."""
    if not isinstance(arg, str) or not arg.strip():
        raise ValueError(f"--heads {arg!r}: use top-K (K >= 1) or a list of layer.head like 12.22,13.11")
    if arg.startswith("top-"):
        k = arg[4:]
        if not k.isdigit() or int(k) < 1:
            raise ValueError(f"--heads {arg}: K in top-K must be a whole number >= 1, e.g. top-8")
        return int(k)
    out = []
    for part in arg.split(","):
        m = _PAIR.match(part)
        if not m:
            raise ValueError(f"--heads {arg!r}: {part!r} is not layer.head; use top-K or a list like 12.22,13.11")
        out.append((int(m.group(1)), int(m.group(2))))
    return out


def check_heads_in_model(heads: Sequence[tuple[int, int]], geo: Geometry | None, what: str = "--heads") -> None:
    """Every ``(layer, head)`` is inside the model: ``0 <= layer < n_layers``, ``0 <= head < n_heads``."""
    if geo is None:
        return
    for l, h in heads:
        if not (0 <= l < geo.n_layers and 0 <= h < geo.n_heads):
            raise ValueError(
                f"{what}: head {l}.{h} is not in the model ({geo.n_layers} layers 0..{geo.n_layers - 1}, "
                f"{geo.n_heads} heads 0..{geo.n_heads - 1} per layer)"
            )


def model_geometry(model_name: str) -> Geometry | None:
    """Layers and heads from the model's ``config.json`` (``transformers.AutoConfig``; no weights are read).
    ``None`` when the config cannot be read here (a hub id without network): the ranges are then
    checked when the model loads."""
    source = resolve(model_name)  # FileNotFoundError for a missing embedded model / .gguf file
    if not (Path(source) / "config.json").is_file():
        return None
    try:
        return Geometry.from_config(AutoConfig.from_pretrained(source))
    except (OSError, ValueError, AttributeError) as e:
        raise ValueError(f"--model {model_name}: its config.json cannot be read ({e})") from None


def parse_heads(arg: str, ranking: list[tuple[int, int]] | None) -> list[tuple[int, int]]:
    """``top-32`` → the 32 best-ranked heads; ``12.22,13.11`` → those heads (syntax:
    :func:`parse_heads_arg`)."""
    want = parse_heads_arg(arg)
    if isinstance(want, int):
        if ranking is None or len(ranking) < want:
            raise ValueError(f"--heads {arg}: only {0 if ranking is None else len(ranking)} ranked heads available")
        return ranking[:want]
    return want
