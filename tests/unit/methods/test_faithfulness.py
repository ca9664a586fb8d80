"""The rule of ``circuit-faithful``, version 7 (arithmech.methods.faithfulness_rule.faithful_verdict, decided by
arithmech.circuits.claims.circuit_faithful): the bounded recovery in both directions, on synthetic rows whose
verdict is known by construction."""
from __future__ import annotations

import pandas as pd
import pytest

from arithmech.circuits.claims import circuit_faithful
from arithmech.claims.evidence import Missing
from arithmech.methods import faithfulness as methods_faithfulness
from arithmech.methods.faithfulness_rule import MIN_CLUSTERS, RANDOM, RULE_LEVEL, faithful_verdict

DRAWS = 20


def _frame(cands: dict, band_hi: float = 0.3, clusters: int = MIN_CLUSTERS) -> pd.DataFrame:
    """``cands[(order, n)] = {method: (value, lo, hi)}`` plus ``DRAWS`` random circuits per (method, n) whose
    recovery runs evenly from 0 to ``band_hi / 0.95`` (so their 95th percentile is ``band_hi``); the unclipped
    recovery equals the clipped one, every prompt used, as many used problem clusters as ``clusters``."""
    rows = []
    abl = {"noising": "mean", "denoising": "x_r"}
    base = dict(task="all", share=0.0, lo=-3.0, hi=3.0, n_used=40, n_prompts=40, n_clusters=clusters,
                n_used_clusters=clusters, level=RULE_LEVEL, over_one=0.0, baseline="b", split="held-out")
    for (order, n), by in cands.items():
        pos = "operands" if order == "operands" else "end"
        for m, (v, lo, hi) in by.items():
            rows.append(dict(base, method=m, ablation=abl[m], order=order, draw=-1, n=n, recovery=v, recovery_lo=lo,
                             recovery_hi=hi, recovery_raw=v, recovery_raw_lo=lo, recovery_raw_hi=hi, components="x",
                             positions=pos))
            for d in range(DRAWS):
                r = band_hi / 0.95 * d / (DRAWS - 1)
                rows.append(dict(base, method=m, ablation=abl[m], order=RANDOM[order], draw=d, n=n, recovery=r,
                                 recovery_lo=r, recovery_hi=r, recovery_raw=r, recovery_raw_lo=r, recovery_raw_hi=r,
                                 components="", positions=pos))
    return pd.DataFrame(rows, columns=methods_faithfulness.COLUMNS)


GOOD, BAD, MID = (0.9, 0.85, 0.95), (0.4, 0.3, 0.5), (0.8, 0.7, 0.9)


def _all(by_n: dict, cross=(BAD, BAD)) -> dict:
    """Every candidate measured: the top n for n = 1..10 (``by_n[n] = (noising, denoising)``, BAD where absent) and
    the cross-position circuit."""
    out = {("top", n): dict(zip(("noising", "denoising"), by_n.get(n, (BAD, BAD)))) for n in range(1, 11)}
    return {**out, ("operands", 6): dict(zip(("noising", "denoising"), cross))}


def test_the_three_outcomes():
    """Protects the rule's three outcomes: a candidate faithful in both directions holds; every candidate failing
    in some direction does not hold; a candidate straddling 80% leaves it inconclusive; too few problem clusters
    decide nothing."""
    v = lambda c, **kw: faithful_verdict(_frame(c, **kw), "all")["holds"]
    assert v(_all({2: (GOOD, GOOD)})) is True
    assert v(_all({1: (BAD, GOOD), 2: (GOOD, BAD)})) is False
    assert v(_all({2: (MID, GOOD)})) is None
    assert v(_all({2: (GOOD, GOOD)}), clusters=MIN_CLUSTERS - 1) is None
    partial = {k: c for k, c in _all({}).items() if k[1] <= 6 or k[0] == "operands"}      # --n-max 6
    assert v(partial) is None and v(_all({})) is False          # an unmeasured candidate has not failed


def test_denoising_is_read_not_only_noising():
    """Protects against the old behaviour (versions 1–4 read noising alone): a circuit faithful under noising but
    insufficient under denoising does not hold; the same circuit sufficient under denoising holds."""
    assert faithful_verdict(_frame(_all({3: (GOOD, BAD)})), "all")["holds"] is False
    assert faithful_verdict(_frame(_all({3: (GOOD, GOOD)})), "all")["holds"] is True


def test_the_random_band_and_the_cross_position_candidate():
    """Protects the comparison with random circuits of the same kind: above 80% but inside the band fails; a
    cross-position circuit (order ``operands``) is a candidate read against its own layer-matched draws; a
    missing direction leaves a candidate undecided; sizes above k_max are not candidates."""
    inside = _frame(_all({1: (GOOD, GOOD)}), band_hi=0.97)
    assert faithful_verdict(inside, "all")["holds"] is False
    cross = faithful_verdict(_frame(_all({}, cross=(GOOD, GOOD))), "all")
    assert cross["holds"] is True and cross["best"]["order"] == "operands"
    assert cross["best"]["noising"]["band_hi"] == pytest.approx(0.3)
    one = _frame({("top", 1): {"noising": GOOD}})
    assert faithful_verdict(one, "all")["holds"] is None
    big = _frame({**_all({}), ("top", 11): {"noising": GOOD, "denoising": GOOD}})
    assert faithful_verdict(big, "all")["holds"] is False


class _Ctx:
    def __init__(self, frame):
        self.frame = frame

    def faithfulness(self):
        return self.frame

    def primary(self):
        return ("all",)


V6 = ["recovery_raw", "recovery_raw_lo", "recovery_raw_hi", "over_one", "n_used_clusters", "level", "baseline"]


@pytest.mark.parametrize("drop", [["recovery", "recovery_lo", "recovery_hi", "n_used", "positions"] + V6, V6,
                                  ["recovery_raw"], ["positions"]])
def test_old_files_are_missing_not_decided(drop):
    """Protects the version boundaries: a faithfulness.csv written before version 5 (no ``recovery``), before
    version 7 (no unclipped recovery, its intervals at 95%) or before the cross-position circuit (no ``positions``,
    once read as all at END) makes the decider raise Missing (inconclusive, with a re-run hint), never a verdict on
    what it lacks."""
    old = _frame(_all({2: (GOOD, GOOD)})).drop(columns=drop)
    with pytest.raises(Missing, match="before rule version 7.*re-run"):
        circuit_faithful(_Ctx(old))
    assert faithful_verdict(old, "all")["holds"] is None
    assert faithful_verdict(_frame(_all({2: (GOOD, GOOD)})), "all")["holds"] is True      # the same, whole


def test_intervals_at_another_level_decide_nothing():
    """Protects the rule's level: a file whose intervals are at 95% (not 1 − 0.05/11) is stale, not decided."""
    f = _frame(_all({2: (GOOD, GOOD)})).assign(level=0.95)
    r = faithful_verdict(f, "all")
    assert r["holds"] is None and "0.95" in r["stale"][0]
