"""``python -m arithmech.smollm …``: the command recorded in the shipped SmolLM2 Table 1 results, kept as
an alias of the one CLI (no logic lives here; the model is a parameter there).

``table1 --out DIR`` → ``python -m arithmech table1 --model smollm2-135m --results DIR``; likewise
``lrgrid``, ``accuracy`` (→ ``accuracy-by-template``) and ``counterfactuals``.
"""
from __future__ import annotations

import sys

from arithmech.cli import main as _main

RENAMED = {"accuracy": "accuracy-by-template"}


def translate(argv: list[str]) -> list[str]:
    """The old argument list in the one CLI's terms: subcommand renamed, ``--out`` → ``--results``,
    ``--model smollm2-135m`` unless given."""
    if not argv:
        return ["--help"]
    out = [RENAMED.get(argv[0], argv[0])] + ["--results" if a == "--out" else
                                             "--results=" + a[6:] if a.startswith("--out=") else a for a in argv[1:]]
    if not any(a == "--model" or a.startswith("--model=") for a in out):
        out += ["--model", "smollm2-135m"]
    return out


if __name__ == "__main__":
    _main(translate(sys.argv[1:]))
