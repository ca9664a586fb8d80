"""Print the claims table of one or more results folders, one line per rule: id, verdict, the numbers it was decided
on: how the shipped SmolLM2 runs are re-decided from their files, no model run.

    PYTHONPATH=$PWD python benchmarks/decide_claims.py results/smollm2-135m results/smollm2-135m/zero-shot
"""
from __future__ import annotations

import sys

from arithmech.claims.decide import claims
from arithmech.claims.evidence import Context


def main(folders: list[str]) -> None:
    for f in folders:
        print("== " + f)
        for _, r in claims(Context(f)).iterrows():
            print(f"{r.id:32s} {str(r.holds):6s} {r.here}")


if __name__ == "__main__":
    main(sys.argv[1:])
