"""The plan of Table 1's arms: which learning rates each arm runs, and which heads each precise arm tunes.

**Rates.** Table 1's learning-rate grids: which rates each arm runs, when a grid is *bracketed*, and which
rates get extra seeds. Every rule here reads **validation** scores only; the test items decide the verdicts
(:mod:`arithmech.table1.verdicts`), never which runs exist.

* **grids** (:data:`GRIDS`) — full SFT has its own; the precise arms (key, share, the random controls) share
  one grid, so every precise comparison is at matched rates.
* **bracketed** (:func:`bracket_side`) — an arm's grid is bracketed when both of its ends are past the useful
  range: at the lowest rate the validation math gain over base is at most half the arm's best gain (too low:
  little learned), and at the highest rate it is too (too high: the skill, or the model, collapses). An
  unbracketed end is extended by the grid's own ratio (:func:`extension`), up to ``max_extend`` times per arm;
  the precise grid is extended when any precise arm (key, share, or a random arm's first draw) needs it.
* **frontier rates** (:func:`frontier_rates`) — the rates on an arm's validation trade-off frontier (mean
  validation math accuracy up, mean validation text loss down: no other rate of the arm is at least as good on
  both and better on one) get seeds up to ``frontier_seeds``.
* **replicated rates** (:func:`replicated`) — with ``--no-replicate-ends``, a bracketed grid's two end rates
  keep their first run (they show the bracket) and get no further seeds, draws or frontier seeds: the rules read a
  point from 3 runs, so they decide on the interior rates, where an arm learns without collapsing. A cut of grid
  points to fit the machine, recorded in ``table1.json``; an unbracketed grid is never cut.
* the **single-rate choice** of the first runs (:data:`RULE`, :func:`choose`) is still computed and shown beside
  the frontier, as the choice the earlier verdicts hung on.
* the **confirmation's rates** (:func:`choose_rates`, :func:`pilot_rate`) — chosen by the protocol's rules
  (:mod:`arithmech.table1.protocol`) on the exploration's validation carry alone (:func:`exploration`: its runs by
  grid point).

**Heads.** Which heads each precise arm of Table 1 tunes: the paper's ranking, the share rule, and two
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
are disjoint from both (the earlier control shared 20–29 % of them). Where a layer has no free
group the layer-matched draw moves to the nearest layer that has one (the plan records each draw's layers).

Each draw is seeded by its own index (``random-heads:<arm>:<draw>``), never by a training seed: draws and
training seeds vary independently. **Draws are distinct** (:func:`distinct_draws`): a set already drawn is skipped
(the next index is tried), so no repeated set counts as a new draw; in a model with few heads the plan states how many
distinct sets the draw rule can make (:func:`possible_sets`: the planted model's 16 heads leave few) and caps the
draws there. Where the seeded draws were distinct already, the sets are the ones drawn before this rule.

:func:`plan_heads` writes every arm's heads into the runner's plan (:mod:`arithmech.table1.run`).

The confirmation's controls are drawn when its protocol is written and kept in it
(:mod:`arithmech.table1.protocol`), each seeded by its own index, never by a training seed:

* :func:`random_any_matched` — heads of any layer that tune *exactly* as many parameters as the key heads under
  grouped-query attention (as many key/value groups as theirs, none of theirs, so no tuned parameter is shared);
* :func:`random_layer` — for each key head a non-key head of the same layer, for the Q/O-only arms (with K/V frozen
  no parameter is shared, so every layer can be matched, layer 20 of SmolLM2 included).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from pathlib import Path

from arithmech.core.geometry import Geometry
from arithmech.core.inputs import quoted
from arithmech.finetune.heads import model_geometry
from arithmech.identify.result import Ranking, read_ranking
from arithmech.table1.result import Table1Result

PRECISE = ("precise-key", "precise-share", "precise-random", "precise-random-any")
RANDOM = ("precise-random", "precise-random-any")
ARMS = ("full",) + PRECISE
_P = {"toy": (1e-3, 3e-3, 1e-2), "planted": (3e-7, 1e-6, 3e-6), "cpu": (3e-4, 1e-3, 3e-3), "paper": (3e-4, 1e-3, 3e-3)}
_F = {"toy": (3e-4, 1e-3, 3e-3), "planted": (1e-7, 3e-7, 1e-6), "cpu": (3e-5, 1e-4, 3e-4), "paper": (3e-5, 1e-4, 3e-4)}
GRIDS = {s: {"full": _F[s], **{a: _P[s] for a in PRECISE}} for s in _P}
RULE = "highest validation math accuracy; among rates within 0.01 of it, the lowest validation math loss"
BRACKET = 0.5
BRACKET_RULE = (
    f"an end of an arm's grid is bracketed when its mean validation math gain over base is at most "
    f"{BRACKET} x the arm's best (seed 0, or a random arm's first draw); an unbracketed end is extended "
    "by the grid's ratio"
)


def grid_of(arm: str) -> str:
    """The grid ``arm`` runs on (:data:`GRIDS`, ``table1.json``'s ``replicated``): full SFT's own, ``"full"``, or the
    one the precise arms share, ``"precise"``."""
    return "full" if arm == "full" else "precise"


def lr_tag(lr: float) -> str:
    return f"{lr:.0e}"


def val_math(val: dict, suite) -> float:
    """Validation math accuracy: the suite's validation math items pooled (exact match)."""
    its = [x for k in suite.math if k in val for x in val[k]["items"]]
    return sum(its) / len(its)


def choose(rows: list[dict]) -> float:
    """:data:`RULE` over grid ``rows`` (``{"lr", "val_math", "val_nll"}``): the single-rate choice."""
    best = max(r["val_math"] for r in rows)
    return min((r for r in rows if r["val_math"] >= best - 0.01), key=lambda r: (r["val_nll"], r["lr"]))["lr"]


def extension(grid: Sequence[float], side: str) -> float | None:
    """One grid ratio beyond the ``side`` (``"low"`` / ``"high"``) end of the sorted ``grid``, rounded to one
    significant digit; ``None`` when it would leave (0, 1) or is already there."""
    g = sorted(grid)
    lr = float(f"{(g[0] ** 2 / g[1] if side == 'low' else g[-1] ** 2 / g[-2]):.0e}")
    return lr if 0 < lr < 1 and lr not in g else None


def means_by_rate(rows: Sequence[dict], key: str = "val_math") -> dict[float, float]:
    """Rate → the mean of ``key`` over ``rows`` at that rate."""
    by: dict[float, list[float]] = {}
    for r in rows:
        by.setdefault(r["lr"], []).append(r[key])
    return {lr: sum(v) / len(v) for lr, v in sorted(by.items())}


def bracket_side(rows: Sequence[dict], base: float) -> str | None:
    """The end of the grid to extend (``"low"``, then ``"high"``), or ``None`` when both ends are bracketed
    (module docstring). ``rows``: the first runs of every rate (``{"lr", "val_math"}``); ``base``: the base
    model's validation math accuracy."""
    m = means_by_rate(rows)
    best = max(m.values()) - base
    if best <= 0:  # nothing learned anywhere: the grid is too low
        return "high"
    lrs = sorted(m)
    if m[lrs[0]] - base > BRACKET * best:
        return "low"
    if m[lrs[-1]] - base > BRACKET * best:
        return "high"
    return None


def frontier_rates(rows: Sequence[dict]) -> list[float]:
    """The rates on the validation frontier of ``rows`` (``{"lr", "val_math", "val_loss"}``): no other rate's
    mean is at least as high in math and as low in text loss, and strictly better in one."""
    m, loss = means_by_rate(rows), means_by_rate(rows, "val_loss")
    out = []
    for lr in m:
        dominated = any(m[o] >= m[lr] and loss[o] <= loss[lr] and (m[o] > m[lr] or loss[o] < loss[lr]) for o in m)
        if not dominated:
            out.append(lr)
    return out


def replicated(grid: Sequence[float], bracketed: bool, ends: bool) -> list[float]:
    """The rates of the sorted ``grid`` that get runs beyond the first (module docstring): all of them, or without
    the two ends where ``ends`` is False and the grid is ``bracketed`` (and has an interior to keep)."""
    g = sorted(grid)
    return g if ends or not bracketed or len(g) < 3 else g[1:-1]


def exploration(t: Table1Result) -> dict[tuple[str, float], list[dict]]:
    """Every exploratory run of the arms run ``t`` (each arm's ``grid_rows``), by ``(arm, rate)``."""
    out: dict[tuple[str, float], list[dict]] = {}
    for arm, a in t.plan["arms"].items():
        for row in a["grid_rows"]:
            out.setdefault((arm, row["lr"]), []).append(t.record(row["tag"]))
    return out


def _val(runs: list[dict]) -> float:
    return sum(r["parameters"]["validation"]["carry"]["value"] for r in runs) / len(runs)


def choose_rates(runs: dict[tuple[str, float], list[dict]], min_runs: int = 3) -> dict:
    """The confirmation's rates by the protocol's rules, from validation carry alone (replicated rates: at least
    ``min_runs`` runs): precise-key's best rate, full's rate of equal gain, and full's best (for the power
    calculation only)."""
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


Head = tuple[int, int]


def share_ranking(folder: str | Path, task: str) -> list[Head]:
    """Every head of ``task`` in ``effects.csv``, most negative ``share`` first (ties: layer, head)."""
    df = Ranking(folder).effects
    if "share" not in df.columns:
        raise ValueError(
            f"{quoted(Path(folder) / 'effects.csv')}: no share column (made before shares were measured), so "
            "the precise-share arm has no ranking: re-run `python -m arithmech identify`"
        )
    df = df[(df["task"] == task) & (df["head"] != "mlp")]
    rows = sorted(((float(s), int(l), int(h)) for s, l, h in zip(df["share"], df["layer"], df["head"])))
    return [(l, h) for _, l, h in rows]


def share_heads(passing: Sequence[Head], ranking: Sequence[Head], k: int) -> list[Head]:
    """The share rule's heads, filled up to ``k`` by share rank (``passing`` first, in its order)."""
    out = list(dict.fromkeys((int(h[0]), int(h[1])) for h in passing))[:k]
    out += [h for h in ranking if h not in out][: k - len(out)]
    return out


def groups(heads: Sequence[Head], geo: Geometry) -> set[tuple[int, int]]:
    """``(layer, kv group)`` of each head: the K/V slices precise SFT trains for it."""
    return {(l, geo.kv_head(h)) for l, h in heads}


def free_heads(geo: Geometry, avoid: Sequence[Head]) -> list[Head]:
    """Heads that share no tuned parameter with ``avoid``: not in it, and reading no group it reads."""
    taken = groups(avoid, geo)
    return [(l, h) for l in range(geo.n_layers) for h in range(geo.n_heads) if (l, geo.kv_head(h)) not in taken]


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


def layer_offsets(tuned: Sequence[Head], draw: Sequence[Head]) -> list[int]:
    """How far a layer-matched ``draw`` sits from ``tuned``'s layers: ``|layer difference|`` of each pair, both
    sorted by layer (on a line, the pairing with the smallest total distance). All 0: the layers match exactly;
    a ``d`` where :func:`layer_matched` found no free head in a tuned head's layer and took one ``d`` layers away."""
    if len(tuned) != len(draw):
        raise ValueError(f"{len(draw)} drawn heads for {len(tuned)} tuned ones")
    return [abs(a - b) for (a, _), (b, _) in zip(sorted(tuned), sorted(draw))]


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


def possible_sets(arm: str, tuned: Sequence[Head], free: Sequence[Head], limit: int = 10_000) -> list[list[Head]]:
    """Every distinct head set :func:`random_draw` can return for ``arm`` (every choice of the draw rule, sorted),
    up to ``limit`` of them (a model with many heads has more: the list is then cut at ``limit``)."""
    if arm == "precise-random-any":
        return [sorted(c) for c in itertools.islice(itertools.combinations(sorted(free), len(tuned)), limit)]
    layers = [l for l, _ in tuned]
    all_layers = sorted({l for l, _ in free})
    found: set[tuple[Head, ...]] = set()

    def walk(i: int, out: list[Head]) -> None:
        if len(found) >= limit:
            return
        if i == len(layers):
            found.add(tuple(sorted(out)))
            return
        for L in sorted(all_layers, key=lambda x: (abs(x - layers[i]), x)):
            pool = [h for h in free if h[0] == L and h not in out]
            if pool:
                for h in pool:
                    walk(i + 1, out + [h])
                return

    walk(0, [])
    return [list(t) for t in sorted(found)]


def distinct_draws(arm: str, draws: int, tuned: Sequence[Head], free: Sequence[Head]) -> tuple[list[list[Head]], int]:
    """``(sets, possible)``: the first ``min(draws, possible)`` distinct sets of the seeded draws ``0, 1, 2, ...`` of
    ``arm`` (a repeat is skipped), where ``possible`` is how many distinct sets the rule can make (counted up to
    ``max(draws, 10,000)``); any the seeded draws miss after 1,000 tries a set are added in sorted order."""
    universe = possible_sets(arm, tuned, free, max(draws, 10_000))
    want = min(draws, len(universe))
    out: list[list[Head]] = []
    for d in range(1_000 * want):
        if len(out) == want:
            break
        h = random_draw(arm, d, tuned, free)
        if h not in out:
            out.append(h)
    out += [h for h in universe if h not in out][: want - len(out)]
    return out, len(universe)


# ------------------------------------------------------------------------------------ the plan
def key_and_ranked(folder: str | Path) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]]]:
    """``(heads passing identify's threshold, every head ranked best first, heads the share rule names)``."""
    ranked, _ = read_ranking(folder)
    kh = Ranking(folder).key_heads
    passing = [(h["layer"], h["head"]) for h in kh["heads"]]
    by_share = [(h["layer"], h["head"]) for h in (kh.get("by_share") or {}).get("heads", [])]
    return passing, ranked, by_share


def plan_heads(folder: Path, model_name: str, top_k: int, draws: int) -> dict:
    """Every precise arm's heads (:mod:`arithmech.table1.plan`) and how they were chosen."""
    passing, ranked, share_pass = key_and_ranked(folder)
    if len(ranked) < top_k:
        raise ValueError(f"--top-k {top_k}: {quoted(folder)} ranks only {len(ranked)} heads")
    geo = model_geometry(model_name)
    if geo is None:
        raise ValueError(
            f"--model {model_name}: its config.json cannot be read here, so the heads' key/value "
            "groups are unknown; use a local model folder"
        )
    task = Ranking(folder).key_heads["task"]
    key = ranked[:top_k]
    share = share_heads(share_pass, share_ranking(folder, task), top_k)
    free = free_heads(geo, key + share + passing + share_pass)
    n = "1 head passes" if len(passing) == 1 else f"{len(passing)} heads pass"
    plan: dict = {
        "tuned": [list(h) for h in key],
        "passing_threshold": [list(h) for h in passing],
        "selection": (
            f"{n} identify's threshold; the top {top_k} by rank are tuned"
            if len(passing) != top_k
            else "the heads passing identify's threshold"
        ),
        "share": [list(h) for h in share],
        "share_passing": [list(h) for h in share_pass],
        "share_selection": (
            f"{len(share_pass)} heads pass the share rule"
            + (f"; {top_k - len(share_pass)} more by share rank" if len(share_pass) < top_k else "")
        ),
        "gqa": (
            f"{geo.n_heads} query heads on {geo.n_kv_heads} key/value heads per layer: a random head "
            "is drawn only from the key/value groups no key or share head reads (precise SFT trains a group's "
            f"K/V slices when any of its heads is tuned), so the random arms share no tuned parameter with "
            f"them; {len(free)} of {geo.n_layers * geo.n_heads} heads are free"
        ),
        **{("random_draws" if a == "precise-random" else "random_any_draws"): [] for a in RANDOM},
        "distinct": {},
    }
    for a in RANDOM:
        sets, possible = distinct_draws(a, draws, key, free)
        plan["random_draws" if a == "precise-random" else "random_any_draws"] = [[list(h) for h in d] for d in sets]
        plan["distinct"][a] = {
            "requested": draws,
            "drawn": len(sets),
            "possible": possible if possible < max(draws, 10_000) else f"at least {possible}",
            "note": (
                f"{possible} distinct head sets exist under the draw rule: capped at {possible} draws"
                if possible < draws
                else f"{len(sets)} distinct sets (no set drawn twice)"
            ),
        }
    return plan


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
