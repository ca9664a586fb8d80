"""Shared heads of two identify runs and their knockout (paper Table 4, App. E: GSM8K-style data).

``overlap`` compares the top key heads of two runs; ``overlap_knockout`` knocks out the shared heads,
either run's own heads and either run's top heads on each run's data
(:func:`arithmech.methods.ablation.knockout.accuracy`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from arithmech.core.stats import wilson_interval
from arithmech.data.pairs import Sample
from arithmech.methods.ablation.curves import random_orders
from arithmech.methods.ablation.intervention import Forwards, MeanSource
from arithmech.methods.ablation.knockout import Ablation, Head, accuracy
from arithmech.methods.effects import ranking


def overlap(heads_a: Sequence[Head], heads_b: Sequence[Head], top: int = 10) -> dict:
    """Shared and run-specific heads among the ``top`` key heads of two runs (Table 4)."""
    a, b = [tuple(h) for h in heads_a[:top]], [tuple(h) for h in heads_b[:top]]
    shared = [h for h in a if h in b]
    return {
        "top": top,
        "a": a,
        "b": b,
        "shared": shared,
        "only_a": [h for h in a if h not in b],
        "only_b": [h for h in b if h not in a],
        "fraction_shared": len(shared) / max(1, len(b)),
    }


def overlap_knockout(
    model,
    tok,
    ov: dict,
    datasets: dict[str, tuple[Sequence[Sample], MeanSource]],
    forwards: Forwards = Forwards(),
    universe: Sequence[Head] = (),
    n_random: int = 0,
    seed: int = 0,
) -> pd.DataFrame:
    """Table 4: accuracy of each dataset after knocking out the shared heads, either run's specific
    heads and either run's top heads, each with its Wilson 95 % interval over the dataset's ``n`` prompts, and —
    the control — the accuracy after knocking out as many **random** heads: ``n_random`` seeded sets drawn from
    ``universe`` outside both runs' top heads (the treated components), the same sets on every dataset; the rows
    carry their mean and 5th/95th percentiles. A set of ``k`` heads is the first ``k`` of each seeded order, so the
    rows' bands share their draws (prefixes of the same orders) and are not independent of one another.
    ``datasets``: name → (X_r samples, their X_c means); ``forwards``:
    :func:`~arithmech.methods.ablation.knockout.knockout_topk`'s batching and positions."""
    sets = {"shared": ov["shared"], "only_a": ov["only_a"], "only_b": ov["only_b"], "top_a": ov["a"], "top_b": ov["b"]}
    orders = random_orders(universe, list(ov["a"]) + list(ov["b"]), n_random, seed) if universe else []
    if orders and len(orders[0]) < max(map(len, sets.values())):
        raise ValueError(
            f"{len(orders[0])} heads lie outside both top lists, fewer than the largest set knocked out "
            f"({max(map(len, sets.values()))}): no random control of its size (lower --top)"
        )
    sizes = sorted({len(h) for h in sets.values() if h})  # rows of one size share their random sets: run them once
    ablations = [Ablation()] + [Ablation.of(heads=h) for h in sets.values()]
    ablations += [Ablation.of(heads=o[:k]) for k in sizes for o in orders]
    rows = []
    for name, (samples, means) in datasets.items():
        acc = accuracy(model, tok, samples, means, ablations, forwards).tolist()
        n, base, first = len(samples), float(acc[0]), 1 + len(sets)
        band_of = {k: sorted(acc[first + i * len(orders) : first + (i + 1) * len(orders)]) for i, k in enumerate(sizes)}
        for (which, h), a in zip(sets.items(), acc[1:first]):
            lo, hi = wilson_interval(round(a * n), n)
            band = band_of.get(len(h), []) if h else []
            rows.append(
                {
                    "dataset": name,
                    "knocked_out": which,
                    "n_heads": len(h),
                    "n": n,
                    "base_accuracy": base,
                    "accuracy": a,
                    "ci_low": lo,
                    "ci_high": hi,
                    "relative_drop": (a - base) / base if base else float("nan"),
                    "random_sets": len(band),
                    "random_mean": sum(band) / len(band) if band else float("nan"),
                    "random_p05": _quantile(band, 0.05),
                    "random_p95": _quantile(band, 0.95),
                }
            )
    return pd.DataFrame(rows)


def _quantile(xs: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted ``xs`` (linear between order statistics, numpy's default); NaN for none."""
    if not xs:
        return float("nan")
    pos = q * (len(xs) - 1)
    lo = int(pos)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (pos - lo)


def counterfactual_overlap(
    operator_effects: pd.DataFrame, operand_effects: pd.DataFrame, task: str = "addition", top: int = 10
) -> dict:
    """Shared and specific heads among the ``top`` of the operator and the operand effect rankings of
    ``task`` (:func:`overlap`; ``a`` = operator, ``b`` = operand), with each head's
    relative change and logit difference under both counterfactuals."""
    ov = overlap(ranking(operator_effects, task)[0], ranking(operand_effects, f"{task} (operand)")[0], top)

    def look(eff, t, h):
        r = eff[(eff.task == t) & (eff.layer == h[0]) & (eff["head"].astype(str) == str(h[1]))].iloc[0]
        return {"effect": float(r.effect), "logit_diff": float(r.logit_diff)}

    heads = sorted(set(ov["a"]) | set(ov["b"]))
    ov["by_head"] = [
        {
            "head": f"{l}.{h}",
            "operator": look(operator_effects, task, (l, h)),
            "operand": look(operand_effects, f"{task} (operand)", (l, h)),
        }
        for l, h in heads
    ]
    return {
        **{k: ([f"{l}.{h}" for l, h in v] if isinstance(v, list) and k != "by_head" else v) for k, v in ov.items()},
        "task": task,
        "a_name": "operator",
        "b_name": "operand",
    }
