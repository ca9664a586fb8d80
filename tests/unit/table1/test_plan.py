"""Table 1's plan (arithmech.table1.plan): the grids (bracketing, extension, the validation frontier, the
single-rate rule the earlier verdicts used) and the precise arms' heads (the share arm and random controls that share
no tuned parameter with the key or share arm, grouped-query attention included)."""

from __future__ import annotations

from arithmech.core.geometry import Geometry
from arithmech.table1 import plan
from arithmech.table1.plan import bracket_side, choose, extension, frontier_rates, replicated


def _rows(pairs, loss=None):
    return [{"lr": lr, "val_math": m, "val_nll": 1.0, "val_loss": (loss or {}).get(lr, 1.0)} for lr, m in pairs]


def test_bracket_rule_on_known_curves():
    """Protects the rule written before the runs: an end is bracketed when its validation gain over base is at
    most half the arm's best; the low end is extended first; a grid where nothing is learned goes up. The
    shipped SmolLM2 precise-key seed-0 grid (0.21, 0.27, 0.315 at 3e-4, 1e-3, 3e-3; base 0) needs its low end
    and then its high end extended."""
    key = _rows([(3e-4, 0.21), (1e-3, 0.27), (3e-3, 0.315)])
    assert bracket_side(key, 0.0) == "low"
    assert bracket_side(key + _rows([(1e-4, 0.05)]), 0.0) == "high"
    assert bracket_side(key + _rows([(1e-4, 0.05), (9e-3, 0.035)]), 0.0) is None
    assert bracket_side(_rows([(1e-3, 0.0), (3e-3, 0.0), (1e-2, 0.0)]), 0.0) == "high"


def test_extension_by_the_grids_ratio():
    """Protects: one grid ratio past the asked end, one significant digit, never outside (0, 1)."""
    assert extension([1e-3, 3e-3, 1e-2], "high") == 3e-2 and extension([1e-3, 3e-3, 1e-2], "low") == 3e-4
    assert extension([0.1, 0.3, 0.9], "high") is None


def test_frontier_rates_are_the_undominated_ones():
    """Protects: a rate is on the validation frontier when no other rate's mean is at least as good in math and
    in text loss and better in one; seeds are averaged per rate first."""
    rows = _rows([(1e-4, 0.5), (1e-4, 0.6), (3e-4, 0.45), (1e-3, 0.2)], loss={1e-4: 2.0, 3e-4: 1.9, 1e-3: 1.8})
    assert frontier_rates(rows) == [1e-4, 3e-4, 1e-3]          # 1e-4: best math (0.55 mean), 1e-3: best loss
    rows = _rows([(1e-4, 0.4), (3e-4, 0.45), (1e-3, 0.2)], loss={1e-4: 2.0, 3e-4: 1.9, 1e-3: 2.1})
    assert frontier_rates(rows) == [3e-4]


def test_single_rate_rule():
    """Protects the earlier single-rate choice shown beside the frontier: the highest validation math accuracy;
    within 0.01 of it, the lowest validation loss."""
    rows = [{"lr": 1e-3, "val_math": 0.30, "val_nll": 2.0}, {"lr": 3e-3, "val_math": 0.305, "val_nll": 1.5},
            {"lr": 1e-2, "val_math": 0.20, "val_nll": 1.0}]
    assert choose(rows) == 3e-3


def test_the_cut_replicates_only_a_bracketed_grids_interior():
    """Protects the grid-point cut: with --no-replicate-ends a bracketed grid's two ends get no
    run beyond their first; an unbracketed grid, a grid without an interior, or the default keep every rate."""
    g = [3e-3, 1e-4, 3e-4, 1e-3]
    assert replicated(g, bracketed=True, ends=False) == [3e-4, 1e-3]
    assert replicated(g, bracketed=False, ends=False) == sorted(g)
    assert replicated(g, bracketed=True, ends=True) == sorted(g)
    assert replicated([1e-4, 3e-4], bracketed=True, ends=False) == [1e-4, 3e-4]


GEO = Geometry(n_layers=6, n_heads=8, n_kv_heads=2, head_dim=32, d_model=256, vocab_size=100)


def test_free_heads_share_no_key_value_group():
    """Protects the disjointness of the random arms: under kv_policy "any" a tuned head trains its group's K/V,
    so a head is free only when no avoided head reads its group; heads of another group of the same layer
    stay free (the earlier control drew from them and shared 20-29 % of the key arm's tuned parameters)."""
    avoid = [(2, 0), (2, 5), (4, 7)]                       # layer 2: both groups (0-3, 4-7); layer 4: group 1
    free = set(plan.free_heads(GEO, avoid))
    assert not {(2, h) for h in range(8)} & free
    assert {(4, h) for h in range(4)} <= free and not {(4, h) for h in range(4, 8)} & free
    assert len(free) == 6 * 8 - 8 - 4
    assert plan.groups(avoid, GEO) == {(2, 0), (2, 1), (4, 1)}


def test_random_draws_layer_matched_any_and_seeded_by_draw():
    """Protects: precise-random takes one free head per key head's layer (nearest layer where that layer has
    none left, lower first); precise-random-any takes k free heads of any layer; a draw is seeded by its arm and
    index (the same draw twice is the same heads; another index or arm differs), never by a training seed."""
    tuned = [(2, 0), (2, 1), (3, 4), (5, 0)]
    free = plan.free_heads(GEO, tuned)
    d0 = plan.random_draw("precise-random", 0, tuned, free)
    assert d0 == plan.random_draw("precise-random", 0, tuned, free) != plan.random_draw("precise-random", 1, tuned, free)
    assert sorted(l for l, _ in d0) == [2, 2, 3, 5] and set(d0) <= set(free)   # layer 2 group 1 is still free
    tight = plan.free_heads(GEO, [(2, 0), (2, 4)])                                # layer 2 has no free group
    assert sorted(l for l, _ in plan.layer_matched([2, 2], tight, __import__("random").Random(0))) == [1, 1]
    anyd = plan.random_draw("precise-random-any", 0, tuned, free)
    assert len(set(anyd)) == 4 and set(anyd) <= set(free) and anyd != plan.random_draw("precise-random-any", 3, tuned, free)


def test_share_heads_filled_by_share_rank():
    """Protects: the share arm tunes the heads the share rule names, in order, then fills up to k by share
    rank without repeating one."""
    assert plan.share_heads([(3, 1), (1, 2)], [(1, 2), (0, 0), (3, 1), (5, 5)], 3) == [(3, 1), (1, 2), (0, 0)]
    assert plan.share_heads([(3, 1), (1, 2), (4, 4)], [(0, 0)], 2) == [(3, 1), (1, 2)]


def test_layer_offsets_pair_the_layers_sorted():
    """Protects the page's account of the layer-matched draws: offsets are |layer difference| of the two sorted
    lists (the pairing with the least total distance), 0 where the layers match; a draw of another size is an
    error, not a silent truncation by zip."""
    assert plan.layer_offsets([(2, 0), (2, 1), (5, 0)], [(5, 3), (2, 7), (2, 4)]) == [0, 0, 0]
    assert plan.layer_offsets([(20, 1), (20, 2), (14, 2)], [(19, 0), (14, 5), (21, 0)]) == [0, 1, 1]
    with __import__("pytest").raises(ValueError, match="3 drawn heads for 2"):
        plan.layer_offsets([(1, 0), (2, 0)], [(1, 1), (2, 1), (3, 1)])


def test_random_draws_are_distinct_and_capped_at_the_sets_that_exist():
    """Protects the random arms in a model with few heads (the planted model: 4 layers x 4 heads, key heads 2.0-2.2):
    the draw rule's distinct sets are counted (layer-matched: 2.3 and two of layer 1's four heads, C(4, 2) = 6;
    any layer: C(13, 3) = 286), no set is drawn twice, and asking for more draws than sets exist gives every set once
    (capped), the first draws being the seeded ones in index order where those were already distinct."""
    geo = Geometry(n_layers=4, n_heads=4, n_kv_heads=4, head_dim=32, d_model=128, vocab_size=100)
    key = [(2, 0), (2, 1), (2, 2)]
    free = plan.free_heads(geo, key)
    layer = plan.possible_sets("precise-random", key, free)
    assert len(layer) == 6 and all((2, 3) in s and sorted(l for l, _ in s) == [1, 1, 2] for s in layer)
    assert len(plan.possible_sets("precise-random-any", key, free)) == 286
    sets, possible = plan.distinct_draws("precise-random", 10, key, free)
    assert possible == 6 and len(sets) == 6 and sorted(map(tuple, sets)) == sorted(map(tuple, layer))
    sets, possible = plan.distinct_draws("precise-random-any", 10, key, free)
    assert possible == 286 and len({tuple(s) for s in sets}) == 10
    seeded = [plan.random_draw("precise-random-any", d, key, free) for d in range(10)]
    if len({tuple(s) for s in seeded}) == 10:
        assert sets == seeded
    few, _ = plan.distinct_draws("precise-random", 3, key, free)
    assert len({tuple(s) for s in few}) == 3 and all(s in layer for s in few)
