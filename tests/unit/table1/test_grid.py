"""Table 1's grids (arithmech.table1.grid): bracketing, extension, the validation frontier, and the
single-rate rule the earlier verdicts used."""
from __future__ import annotations

from arithmech.table1.grid import bracket_side, choose, extension, frontier_rates, replicated


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
