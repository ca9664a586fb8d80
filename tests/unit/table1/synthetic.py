"""Synthetic Table 1 records: a results folder an arms run could have written, built from a few numbers
per run, so the curve rules and the old single-rate rules can be read on the same records.

``write(folder, arms, chosen)``: ``arms`` maps an arm to ``{rate: [run, …]}``, each run ``(addition, subtraction,
general)`` accuracies on the test items (the carry items alternate addition and subtraction, as
:func:`arithmech.data.splits.carry_items` does; ``general``: both cloze sets' accuracy); ``chosen``: the rate the
old rules read per arm (its ``runs``). Base: carry 0 %, HellaSwag 50 % (chance 25 %), PIQA 70 % (chance 50 %).
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from arithmech.core import records
from arithmech.core.stats import wilson_interval

N_CARRY, N_CLOZE = 400, 400
SETS = {"hellaswag": 0.25, "piqa": 0.5}
BASE_GENERAL = {"hellaswag": 0.5, "piqa": 0.7}


SWAP = 0.02


def _items(p: float, n: int, rng: random.Random, key: str = "") -> list[int]:
    """``n`` items of accuracy ``p``: the items a fixed difficulty order (per ``key``) puts first are the ones right,
    as a fine-tune keeps most of what it got right; then :data:`SWAP` of the items trade places, per run."""
    order = list(range(n))
    random.Random(f"order:{key}:{n}").shuffle(order)
    k = max(0, min(n, round(p * n)))
    right, wrong = order[:k], order[k:]
    for _ in range(round(SWAP * n)):
        if right and wrong:
            i, j = rng.randrange(len(right)), rng.randrange(len(wrong))
            right[i], wrong[j] = wrong[j], right[i]
    its = [0] * n
    for i in right:
        its[i] = 1
    return its


def _measure(its: list[int], metric: str = "accuracy", chance: float | None = None) -> dict:
    out = {"metric": metric, "value": sum(its) / len(its), "n": len(its), "ci": list(wilson_interval(sum(its), len(its))),
           "items": its}
    if chance is not None:
        out["chance"] = chance
    return out


def results(add: float, sub: float, general: float | dict, rng: random.Random) -> dict:
    a, s = _items(add, N_CARRY // 2, rng, "add"), _items(sub, N_CARRY // 2, rng, "sub")
    out = {"carry": _measure([x for pair in zip(a, s) for x in pair])}
    for name, ch in SETS.items():
        g = general[name] if isinstance(general, dict) else BASE_GENERAL[name] + general
        out[name] = _measure(_items(g, N_CLOZE, rng, name), "accuracy (acc_norm, cloze)", ch)
    out["lm_loss"] = {"metric": "nats/token (mean over chunks)", "value": 3.0, "n": 4, "ci": [2.9, 3.1],
                      "items": [2.9, 3.1, 3.0, 3.0], "chance": 10.8}
    return out


def _val_items(val: float, seed: int) -> list[int]:
    """200 validation items at accuracy ``val`` (the first ones right; a run's seed moves one item), so a run's
    validation gain over base (0 %) and its interval are what its ``val`` says."""
    k = max(0, min(200, round(200 * val) + (seed % 2)))
    return [1] * k + [0] * (200 - k)


def record(mode: str, tag: str | None, arm: str, lr, seed: int, draw, res: dict, val: float = 0.6) -> dict:
    return records.finetune_record(
        model="synthetic", mode=mode, tag=tag, command="synthetic", seed=seed, device="cpu", dtype="float32",
        parameters={"arm": arm, "lr": lr, "draw": draw, "suite": "cpu",
                    "validation": {"carry": {"value": val, "n": 200, "items": _val_items(val, seed)}}},
        results=res)


def write(folder: Path, arms: dict, chosen: dict | None = None, seed: int = 0, shots: tuple | None = None,
          replicated: dict | None = None) -> Path:
    """The folder (``finetune/`` records and ``table1.json``); general changes are in accuracy units (−0.07: −7
    points on both cloze sets). ``shots``: ``(addition, subtraction)`` of a ``base-shots`` record (math only);
    ``replicated``: the plan's grid-point cut (group → the rates replicated beyond their first run)."""
    rng = random.Random(seed)
    (folder / "finetune").mkdir(parents=True, exist_ok=True)
    dump = lambda name, obj: (folder / "finetune" / name).write_text(json.dumps(obj))
    dump("base.json", record("base", None, "base", None, 0, None, results(0.0, 0.0, 0.0, rng), val=0.0))
    if shots:
        carry = results(*shots, 0.0, rng)["carry"]
        dump("base-shots.json", record("base", "shots", "base-shots", None, 0, None, {"carry": carry}))
    plan = {"suite": "cpu", "heads": {}, "runs": ["base"], "arms": {}}
    for arm, grid in arms.items():
        rows, name = [], arm.removeprefix("precise-")
        for lr, runs in grid.items():
            for i, (add, sub, gen) in enumerate(runs):
                random_arm = arm.startswith("precise-random")
                tag = (f"full-s{i}-lr{lr:.0e}" if arm == "full" else
                       f"precise-{name}{i if random_arm else ''}-s{i % 3}-lr{lr:.0e}")
                mode, _, rest = tag.partition("-")
                dump(f"{tag}.json", record(mode, rest, arm, lr, i % 3, i if random_arm else 0,
                                           results(add, sub, gen, rng), val=(add + sub) / 2))
                rows.append({"lr": lr, "seed": i % 3, "draw": i if random_arm else 0, "tag": tag,
                             "val_math": (add + sub) / 2, "val_nll": 1.0})
        pick = (chosen or {}).get(arm, next(iter(grid)))
        plan["arms"][arm] = {"grid": sorted(grid), "grid_rows": rows, "chosen_lr": pick, "interior": True,
                             "runs": [r["tag"] for r in rows if r["lr"] == pick]}
    if replicated is not None:
        plan["replicated"] = replicated
    dump("table1.json", plan)
    return folder


def jitter(add: float, sub: float, general: float, n: int = 3, sd: float = 0.01, seed: int = 0) -> list[tuple]:
    """``n`` runs around one grid point's accuracies (run-to-run spread ``sd``)."""
    rng = random.Random(f"{seed}:{add}:{sub}:{general}")
    return [(add + rng.gauss(0, sd), sub + rng.gauss(0, sd), general + rng.gauss(0, sd / 3)) for _ in range(n)]
