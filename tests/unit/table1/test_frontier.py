"""Unit tests of ``arithmech/table1/frontier.py``: the frontier top and how the pages name it."""
from __future__ import annotations

from arithmech.table1 import frontier
from arithmech.table1.frontier import curves_of
from arithmech.table1.result import Table1Result
from tests.unit.table1.synthetic import write


def test_the_top_label_says_how_close_the_pick_was(tmp_path):
    """Protects the headline's account of its frontier top (a hostile reading: the shown difference rests on a
    pick between two rates 0.2 points apart on validation): the top is the point with the highest mean validation
    accuracy, and its label gives that accuracy and the runner-up's (synthetic validation = mean of addition and
    subtraction: 3e-3 at 0.60, 1e-3 at 0.55, 9e-3 at 0.30)."""
    arms = {"precise-key": {1e-3: [(0.55, 0.55, 0.0)] * 3, 3e-3: [(0.6, 0.6, 0.0)] * 3, 9e-3: [(0.3, 0.3, 0.0)] * 3}}
    c = curves_of(Table1Result.load(write(tmp_path, arms)))
    t = frontier.top(c, "precise-key", "carry")
    assert t.lr == 3e-3 and frontier.picked_on(t, "carry") == 0.6
    assert frontier.top_label(c, t, "carry") == "precise-key 3e-03 (3 runs; top on validation 60.0% over 1e-03's 55.0%)"


def test_the_top_label_without_validation_scores_names_the_test_gain(tmp_path):
    """Protects the label's units: where no validation score was recorded the top is picked on the test gain over
    base, and the label says so in points (not as an accuracy)."""
    arms = {"precise-key": {1e-3: [(0.55, 0.55, 0.0)] * 3, 3e-3: [(0.6, 0.6, 0.0)] * 3}}
    c = curves_of(Table1Result.load(write(tmp_path, arms)))
    for p in c.points["precise-key"]:
        p.val_math = []
    t = frontier.top(c, "precise-key", "carry")
    gain, other = t.mean("carry"), c.points["precise-key"][0].mean("carry")
    assert frontier.top_label(c, t, "carry") == (f"precise-key 3e-03 (3 runs; top on test gain {100 * gain:+.1f} points over "
                                           f"1e-03's {100 * other:+.1f} points)")
