"""Unit tests of ``arithmech/table1/verdicts.py``."""
from __future__ import annotations


def test_verdict_rules_on_known_intervals():
    """Protects: the verdict rules as the chapter states them, on hand-made intervals (margin 5 points)."""
    from arithmech.table1.verdicts import rule_verdict
    assert [rule_verdict("within", lo, hi, 0.05) for lo, hi in ((-0.04, 0.03), (0.06, 0.2), (-0.1, 0.02))] == \
        ["holds", "does not hold", "inconclusive"]
    assert [rule_verdict("above0", lo, hi, 0.05) for lo, hi in ((0.01, 0.1), (0.0, 0.0), (-0.02, 0.03))] == \
        ["holds", "does not hold", "inconclusive"]
    assert [rule_verdict("above0_or_below_m", lo, hi, 0.05) for lo, hi in ((0.01, 0.2), (-0.1, 0.04), (-0.1, 0.1))] == \
        ["holds", "does not hold", "inconclusive"]
    assert [rule_verdict("above_minus_m", lo, hi, 0.05) for lo, hi in ((-0.04, 0.0), (-0.3, -0.06), (-0.2, 0.0))] == \
        ["holds", "does not hold", "inconclusive"]


def _run(values: dict) -> dict:
    return {"results": {m: {"value": sum(v) / len(v), "items": v, "metric": "accuracy (acc_norm, cloze)", "n": len(v),
                            "chance": 0.25} for m, v in values.items()}}


def test_deciding_measures_need_a_base_interval_clear_of_chance():
    """Protects: "a measure whose base interval touches chance does not decide" — for an accuracy
    the interval's lower end must lie above chance, for a loss its upper end below chance; a measure without
    a chance level always decides."""
    from arithmech.table1.verdicts import deciding
    base = {"hellaswag": {"metric": "accuracy (acc_norm, cloze)", "ci": [0.40, 0.54], "chance": 0.25},
            "mmlu": {"metric": "accuracy (acc_norm, cloze)", "ci": [0.20, 0.31], "chance": 0.25},
            "lm_loss": {"metric": "nats/token (mean over chunks)", "ci": [2.7, 2.9], "chance": 10.8},
            "carry": {"metric": "accuracy", "ci": [0.0, 0.02]}}
    assert deciding(base, ["hellaswag", "mmlu", "lm_loss", "carry", "absent"]) == ["hellaswag", "lm_loss", "carry"]


def test_old_collapse_gate_is_half_the_margin_over_chance():
    """Protects: the earlier gate (``collapsed_point``, kept to show what it did) — a run whose point
    estimate keeps under half of base's margin over chance is collapsed (base 0.45, chance 0.25: 0.34 collapsed,
    0.36 not), for the pooled cloze measure too."""
    from arithmech.table1.verdicts import collapsed_point as collapsed
    base = _run({"hs": [1] * 45 + [0] * 55, "piqa": [1] * 45 + [0] * 55})
    low = _run({"hs": [1] * 34 + [0] * 66, "piqa": [1] * 34 + [0] * 66})
    ok = _run({"hs": [1] * 36 + [0] * 64, "piqa": [1] * 36 + [0] * 64})
    assert collapsed(low, base, "hs") and not collapsed(ok, base, "hs")
    assert collapsed(low, base, "cloze", ["hs", "piqa"]) and not collapsed(ok, base, "cloze", ["hs", "piqa"])


def _acc(k: int, n: int, chance: float) -> dict:
    return {"results": {"piqa": {"value": k / n, "items": [1] * k + [0] * (n - k), "n": n, "chance": chance,
                                 "metric": "accuracy (acc_norm, cloze)"}}}


def test_collapse_gate_needs_the_interval_below_half_the_margin():
    """Protects: the collapse gate reads the run's interval, not its point estimate. PIQA at
    56.5 % (113 of 200) against a base of 63.5 %, chance 50 %: the old gate fired (6.5 points kept of 13.5, under
    half), the new one does not (the run's Wilson interval reaches 63 %); a real collapse (45 %) still fires."""
    from arithmech.table1.verdicts import collapsed, collapsed_point
    base, noisy, gone = _acc(127, 200, 0.5), _acc(113, 200, 0.5), _acc(90, 200, 0.5)
    assert collapsed_point(noisy, base, "piqa") and not collapsed(noisy, base, "piqa")
    assert collapsed(gone, base, "piqa") and collapsed_point(gone, base, "piqa")
    assert not collapsed(base, base, "piqa")


def test_collapse_gate_on_a_loss_reads_its_chunks():
    """Protects the gate's other direction: a text loss collapses when its chunks' t interval lies wholly above the
    line half-way from base to chance (base 3.0, chance 11.0: line 7.0)."""
    from arithmech.table1.verdicts import collapsed
    rec = lambda xs: {"results": {"lm_loss": {"value": sum(xs) / len(xs), "items": xs, "n": len(xs), "chance": 11.0,
                                              "metric": "nats/token (mean over chunks)"}}}
    base = rec([2.9, 3.1] * 8)
    assert collapsed(rec([7.9, 8.1] * 8), base, "lm_loss")
    assert not collapsed(rec([5.0, 9.5] * 8), base, "lm_loss")        # mean 7.25, interval reaches below 7


def test_an_arms_level_interval_counts_its_test_items_once():
    """Protects the arms table's interval (the page once pooled 5 runs x 400 shared items as 2,000 independent ones,
    about 2.2 times too narrow): three runs that agree item for item, 50 of 100 right, get the width of 100 items
    (t over the items: +-0.099), not of 300 (Wilson over 300: +-0.056); at 0 or 1 the interval is never narrower than
    one run's Wilson nor outside [0, 1]; one run gets Wilson over its items; a loss run gets Student t over its
    chunks."""
    from arithmech.core.stats import crossed_interval, t_interval, wilson_interval
    from arithmech.table1.verdicts import level_interval
    run = [1.0] * 50 + [0.0] * 50
    lo, hi = level_interval([run, run, run], accuracy=True)
    assert (lo, hi) == crossed_interval([run, run, run])[1:]                 # wider than one run's Wilson here
    assert 0.19 < hi - lo < 0.21 and hi - lo > 1.7 * (wilson_interval(150, 300)[1] - wilson_interval(150, 300)[0])
    zero, one, rare = [0.0] * 100, [1.0] * 100, [0.0] * 99 + [1.0]
    assert level_interval([zero] * 3, accuracy=True) == wilson_interval(0, 100) and wilson_interval(0, 100)[1] > 0.03
    assert level_interval([one] * 3, accuracy=True) == wilson_interval(100, 100)      # never width 0 at the ends
    lo, hi = level_interval([rare, zero, zero], accuracy=True)
    assert lo == 0.0 and hi >= wilson_interval(1 / 3, 100)[1]                       # never below 0
    assert level_interval([run, run[:-1]], accuracy=True) == (None, None)          # different items: nothing to cross
    assert level_interval([run], accuracy=True) == wilson_interval(50, 100)
    assert level_interval([[2.0, 3.0, 4.0]], accuracy=False) == t_interval([2.0, 3.0, 4.0])[1:]
    assert level_interval([[2.0]], accuracy=False) == (None, None)
