"""The knockout on the planted model: heads mean-ablated at the last position, with its controls and floor.

Means are taken as :func:`arithmech.embedded.planted_truth.mean_ablation` takes them: over the prompts of one template
whose non-operand tokens stand at the same positions, at the last position only (then the movers' ablation makes the
prediction constant within a group). All ablated sets of a group run as one batch, one copy of the group per set
(:class:`Ablate`). The **guessing floor** is each group's majority share: the best a prediction blind to the operands
can do (per prompt: whether its answer's first digit is its group's most frequent one).

:func:`knockout` gives the table (nothing ablated, the movers, random sets of as many non-planted heads, every head,
the floor), each accuracy and each paired drop with a 95% cluster interval from one set of resamples
(:func:`arithmech.core.stats.bootstrap_mean_intervals`), and the per-item change of correctness with each single head
ablated, which the one-head knockout's rule reads (:func:`arithmech.planted.scoring.below`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from types import SimpleNamespace

import pandas as pd
import torch

from arithmech.core.stats import bootstrap_mean_intervals
from arithmech.data.splits import cluster
from arithmech.embedded import planted as planted_model
from arithmech.embedded import planted_truth
from arithmech.planted.config import PlantedScore as Config
from arithmech.planted.scoring import LEVEL, Head


class Ablate:
    """Forward-pre hooks on every ``o_proj``: rows ``r`` of the batch get the heads ``mask[r, layer]`` replaced at the
    last position by ``means[layer]`` ``(H, dh)`` (the batch holds one copy of a group's prompts per ablated set)."""

    def __init__(self, model, mask: torch.Tensor, means: dict[int, torch.Tensor]):
        self.model, self.mask, self.means = model, mask, means
        self.hooks: list = []

    def __enter__(self):
        for i, layer in enumerate(self.model.model.layers):
            self.hooks.append(layer.self_attn.o_proj.register_forward_pre_hook(self._hook(i)))
        return self

    def _hook(self, i: int):
        def hook(mod, args):
            x = args[0].clone()
            H = self.mask.shape[-1]
            last = x[:, -1].unflatten(-1, (H, -1))  # (rows, H, dh)
            x[:, -1] = torch.where(self.mask[:, i, :, None], self.means[i][None], last).flatten(1)
            return (x,)

        return hook

    def __exit__(self, *exc):
        for h in self.hooks:
            h.remove()


@torch.no_grad()
def knockout_outcomes(model, tok, items: Sequence[dict], sets: Sequence[Sequence[Head]]) -> tuple[torch.Tensor, list]:
    """``(correct, floor)``: ``correct`` ``(n, S)`` bool, whether the first answer token is right with set ``s``'s heads
    mean-ablated at the last position (module docstring; an empty set is the unablated model), ``floor`` ``(n,)`` bool,
    whether the item's answer starts with its group's most frequent first digit (ties: the smallest)."""
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    mask = torch.zeros(len(sets), L, H, dtype=torch.bool)
    for s, heads in enumerate(sets):
        for l, h in heads:
            mask[s, l, h] = True
    slots = set(planted_model.slot_ids(tok))
    groups: dict[tuple, list[int]] = {}
    for k, it in enumerate(items):
        ids = tok(it["prompt"])["input_ids"]
        groups.setdefault((it["template"], tuple(-1 if t in slots else t for t in ids)), []).append(k)
    correct = torch.zeros(len(items), len(sets), dtype=torch.bool)
    floor = [False] * len(items)
    gold = torch.tensor([tok(" " + it["target"], add_special_tokens=False)["input_ids"][0] for it in items])
    for idx in groups.values():
        ids = torch.tensor([tok(items[k]["prompt"])["input_ids"] for k in idx])
        with planted_truth._Capture(model) as cap:
            model(input_ids=ids)
        means = {i: cap.out[i][:, -1].unflatten(-1, (H, -1)).mean(0) for i in range(L)}  # (H, dh) per layer
        g = len(idx)
        with Ablate(model, mask.repeat_interleave(g, 0), means):
            pred = model(input_ids=ids.repeat(len(sets), 1)).logits[:, -1].argmax(-1).view(len(sets), g)
        correct[idx] = (pred == gold[idx][None]).T
        firsts = [items[k]["target"][0] for k in idx]
        top = min(set(firsts), key=lambda c: (-firsts.count(c), c))
        for k in idx:
            floor[k] = items[k]["target"][0] == top
    return correct, floor


def interval_row(values: torch.Tensor, clusters: list, n_boot: int, seed: int) -> list[tuple[float, float, float]]:
    """``(mean, lo, hi)`` of each column of ``values`` ``(n, C)``, one cluster bootstrap for all columns."""
    lo, hi = bootstrap_mean_intervals(values.double(), n_boot, LEVEL, seed, clusters)
    return [(float(m), float(a), float(b)) for m, a, b in zip(values.double().mean(0), lo, hi)]


def knockout(model, tok, c: Config, heads: list[Head]) -> tuple[dict, pd.DataFrame, torch.Tensor, list]:
    """The knockout table (none, the movers, ``n_random`` random non-planted sets of the movers' size, all heads, the
    guessing floor) and the per-head knockout's per-item drops. Returns ``(numbers, table, x, clusters)``: ``x``
    ``(n, L, H)`` per-item change of correctness with one head ablated (negative: it hurt)."""
    items = planted_model.split_items("in_distribution_small", c.seed, c.n_per_template)
    clusters = [cluster(SimpleNamespace(**it)) for it in items]
    others = [h for h in heads if h not in planted_model.PLANTED]
    rng = random.Random(f"planted-score-{c.seed}")
    draws = [sorted(rng.sample(others, len(planted_model.MOVERS))) for _ in range(c.n_random)]
    sets = [[], list(planted_model.MOVERS), *draws, heads, *[[h] for h in heads]]
    correct, floor = knockout_outcomes(model, tok, items, sets)
    ok = correct.double()
    base, movers = ok[:, 0], ok[:, 1]
    rand = ok[:, 2 : 2 + c.n_random].mean(1)
    every = ok[:, 2 + c.n_random]
    single = ok[:, 3 + c.n_random :]
    cols = torch.stack([base, movers, rand, every, torch.tensor(floor, dtype=torch.float64)], 1)
    acc = interval_row(cols, clusters, c.n_boot, c.seed)
    drops = interval_row(base[:, None] - cols[:, 1:4], clusters, c.n_boot, c.seed)
    conditions = [
        "none",
        "planted movers",
        f"random non-planted (mean of {c.n_random} draws)",
        "all heads",
        "guessing floor",
    ]
    ablated = [
        "",
        head_names(planted_model.MOVERS),
        f"{len(planted_model.MOVERS)} of {head_names(others)}",
        head_names(heads),
        "",
    ]
    rows = []
    for i, (name, what) in enumerate(zip(conditions, ablated)):
        d = drops[i - 1] if 1 <= i <= 3 else (None, None, None)
        rows.append(
            {"condition": name, "ablated": what, "accuracy": acc[i][0], "lo": acc[i][1], "hi": acc[i][2],
             "drop": d[0], "drop_lo": d[1], "drop_hi": d[2], "n": len(items), "clusters": len(set(clusters))}
        )  # fmt: skip
    numbers = {
        "clusters": len(set(clusters)),
        "n": len(items),
        "drop_planted": drops[0],
        "drop_random": drops[1],
        "random_draws": [head_names(d) for d in draws],
    }
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    x = (single - base[:, None]).view(len(items), L, H)
    return numbers, pd.DataFrame(rows), x, clusters


def head_names(heads: Sequence[Head]) -> str:
    return ", ".join(f"{l}.{h}" for l, h in heads)
