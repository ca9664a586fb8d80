"""The random heads of the confirmation's controls, drawn when the protocol is written and kept in it.

* :func:`random_any_matched` — heads of any layer that tune *exactly* as many parameters as the key heads under
  grouped-query attention (as many key/value groups as theirs, none of theirs, so no tuned parameter is shared);
* :func:`random_layer` — for each key head a non-key head of the same layer, for the Q/O-only arms (with K/V frozen
  no parameter is shared, so every layer can be matched, layer 20 of SmolLM2 included).

Each draw is seeded by its own index, never by a training seed.
"""

from __future__ import annotations

import random


def _groups(heads, group: int) -> set[tuple[int, int]]:
    return {(l, h // group) for l, h in heads}


def random_any_matched(key, n_layers: int, n_heads: int, group: int, draw: int) -> list[list[int]]:
    """``len(key)`` heads of any layer reading exactly as many key/value groups as ``key`` (so precise SFT tunes
    exactly as many parameters) and none of ``key``'s groups (so no tuned parameter is shared); seeded by ``draw``."""
    taken, want = _groups(key, group), len(_groups(key, group))
    free = [(l, h) for l in range(n_layers) for h in range(n_heads) if (l, h // group) not in taken]
    rng = random.Random(f"confirm:random-any-matched:{draw}")
    for _ in range(100_000):
        pick = sorted(rng.sample(free, len(key)))
        if len(_groups(pick, group)) == want:
            return [list(h) for h in pick]
    raise ValueError(f"no draw of {len(key)} free heads reads exactly {want} key/value groups")


def random_layer(key, n_heads: int, draw: int) -> list[list[int]]:
    """For each key head, a non-key head of the same layer (Q/O only: no parameter is shared); seeded by ``draw``."""
    rng = random.Random(f"confirm:random-layer:{draw}")
    out: list[tuple[int, int]] = []
    for layer in sorted(l for l, _ in key):
        pool = [(layer, h) for h in range(n_heads) if (layer, h) not in key and (layer, h) not in out]
        if not pool:
            raise ValueError(f"layer {layer} has no free head left")
        out.append(rng.choice(pool))
    return [list(h) for h in sorted(out)]
