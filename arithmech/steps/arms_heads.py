"""Which heads each precise arm of Table 1 tunes (issue #40): the paper's ranking, the share rule, and two
random controls that share **no tuned parameter** with either.

* ``precise-key`` — the top ``k`` of the paper's ranking (``key_heads.json``'s heads, filled up by effect
  rank where fewer pass its threshold);
* ``precise-share`` — the heads the share rule names (``key_heads.json``'s ``by_share``: the heads that carry
  the answer-specific part of the effect), filled up to ``k`` by share rank (most negative share first) where
  fewer pass; the plan says how many passed;
* ``precise-random`` — ``k`` random heads matched to the key arm's layers (per key head, a free head of its
  layer, else of the nearest layer with one, lower first);
* ``precise-random-any`` — ``k`` random heads drawn from every layer.

**Grouped-query attention.** Precise SFT trains a query head's W_Q rows and W_O columns, and the K/V slices
of the key/value group it reads (:class:`arithmech.finetune.adapter.HeadSpec`'s ``kv_policy="any"``). Two
arms whose heads read one group therefore tune the same K/V slices. A random head is *free* only when its
group is read by no head of the key or share arm (:func:`free_heads`), so the random arms' tuned parameters
are disjoint from both (the earlier control shared 20–29 % of them: issue #40). Where a layer has no free
group the layer-matched draw moves to the nearest layer that has one (the plan records each draw's layers).

Each draw is seeded by its own index (``random-heads:<arm>:<draw>``), never by a training seed: draws and
training seeds vary independently.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Sequence

from arithmech.core import results as results_io
from arithmech.core.geometry import Geometry
from arithmech.core.inputs import quoted

Head = tuple[int, int]


def share_ranking(folder: str | Path, task: str) -> list[Head]:
    """Every head of ``task`` in ``effects.csv``, most negative ``share`` first (ties: layer, head)."""
    df = results_io.read(folder, "effects.csv")
    if "share" not in df.columns:
        raise ValueError(f"{quoted(Path(folder) / 'effects.csv')}: no share column (made before shares were measured), so "
                         "the precise-share arm has no ranking: re-run `python -m arithmech identify`")
    df = df[(df["task"] == task) & (df["head"] != "mlp")]
    rows = sorted(((float(s), int(l), int(h)) for s, l, h in zip(df["share"], df["layer"], df["head"])))
    return [(l, h) for _, l, h in rows]


def share_heads(passing: Sequence[Head], ranking: Sequence[Head], k: int) -> list[Head]:
    """The share rule's heads, filled up to ``k`` by share rank (``passing`` first, in its order)."""
    out = list(dict.fromkeys((int(h[0]), int(h[1])) for h in passing))[:k]
    out += [h for h in ranking if h not in out][:k - len(out)]
    return out


def groups(heads: Sequence[Head], geo: Geometry) -> set[tuple[int, int]]:
    """``(layer, kv group)`` of each head: the K/V slices precise SFT trains for it."""
    return {(l, geo.kv_head(h)) for l, h in heads}


def free_heads(geo: Geometry, avoid: Sequence[Head]) -> list[Head]:
    """Heads that share no tuned parameter with ``avoid``: not in it, and reading no group it reads."""
    taken = groups(avoid, geo)
    return [(l, h) for l in range(geo.n_layers) for h in range(geo.n_heads)
            if (l, geo.kv_head(h)) not in taken]


def layer_matched(layers: Sequence[int], free: Sequence[Head], rng: random.Random) -> list[Head]:
    """One free head per entry of ``layers``: of that layer, else of the nearest layer with one (lower first)."""
    out: list[Head] = []
    all_layers = sorted({l for l, _ in free})
    for layer in layers:
        for L in sorted(all_layers, key=lambda x: (abs(x - layer), x)):
            pool = [h for h in free if h[0] == L and h not in out]
            if pool:
                out.append(rng.choice(pool))
                break
        else:
            raise ValueError(f"only {len(free)} free heads: cannot draw {len(layers)} random heads")
    return sorted(out)


def random_draw(arm: str, draw: int, tuned: Sequence[Head], free: Sequence[Head]) -> list[Head]:
    """Draw ``draw`` of a random arm: ``precise-random`` matches ``tuned``'s layers, ``precise-random-any``
    takes ``len(tuned)`` free heads from any layer."""
    rng = random.Random(f"random-heads:{arm}:{draw}")
    if arm == "precise-random":
        return layer_matched([l for l, _ in tuned], free, rng)
    if arm == "precise-random-any":
        if len(free) < len(tuned):
            raise ValueError(f"only {len(free)} free heads: cannot draw {len(tuned)} random heads")
        return sorted(rng.sample(sorted(free), len(tuned)))
    raise ValueError(f"{arm!r} is not a random arm")
