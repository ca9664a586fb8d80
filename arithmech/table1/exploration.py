"""What the confirmation reads of the exploration: its 149 records by grid point, and the rates its rules choose.

:func:`exploration` reads every run ``finetune/table1.json`` lists, each record checked; :func:`choose_rates` picks the
rates by the protocol's rules, on the validation items alone (:mod:`arithmech.table1.protocol`).
"""

from __future__ import annotations

import json
from pathlib import Path

from arithmech.core import records, safe_read


def table1_plan(folder: Path) -> dict:
    return json.loads(safe_read.read_text(folder / "finetune" / "table1.json", folder))


def exploration(folder: Path) -> dict[tuple[str, float], list[dict]]:
    """Every exploratory run listed by ``finetune/table1.json``, by ``(arm, rate)``, each record checked."""
    out: dict[tuple[str, float], list[dict]] = {}
    for arm, a in table1_plan(folder)["arms"].items():
        for row in a["grid_rows"]:
            mode, tag = row["tag"].split("-", 1)
            out.setdefault((arm, row["lr"]), []).append(records.read_finetune(folder, mode, tag))
    return out


def _val(runs: list[dict]) -> float:
    return sum(r["parameters"]["validation"]["carry"]["value"] for r in runs) / len(runs)


def choose_rates(runs: dict[tuple[str, float], list[dict]], min_runs: int = 3) -> dict:
    """The exploration's rates by the module's rules, from validation carry alone (replicated rates: at least
    ``min_runs`` runs)."""
    val = {k: _val(v) for k, v in runs.items() if len(v) >= min_runs}
    key = max((v, lr) for (a, lr), v in val.items() if a == "precise-key")[1]
    target = val[("precise-key", key)]
    equal = min((abs(v - target), lr) for (a, lr), v in val.items() if a == "full")[1]
    return {
        "key": key,
        "equal-gain": equal,
        "validation_carry": {f"{a}@{lr:g}": round(v, 4) for (a, lr), v in sorted(val.items())},
        "full": max((v, lr) for (a, lr), v in val.items() if a == "full")[1],  # only for the power calculation
    }


def pilot_rate(val_by_rate: dict[float, float]) -> float:
    """A pilot's rate: the highest validation carry; a tie goes to the lower rate."""
    return max(val_by_rate.items(), key=lambda kv: (kv[1], -kv[0]))[0]
