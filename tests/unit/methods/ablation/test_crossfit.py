"""The cross-fitted knockout's bookkeeping on constructed per-cluster effects and rows: the folds, each fold's
ranking, the pooling with its interval, and the verdicts the knockout rules draw from it."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from arithmech.identify.knockout_claims import crossfit_verdict
from arithmech.methods.ablation import crossfit as cf

HEADS = ["0.0", "0.1", "1.0", "1.1"]


def effects(rows):
    """effects_clusters.csv rows ``(cluster, n, e00, e01, e10, e11)``."""
    return pd.DataFrame([{"task": "addition", "cluster": c, "n": n, **dict(zip(HEADS, e))} for c, n, *e in rows])


def test_fold_ranking_is_the_prompt_weighted_mean_of_the_training_clusters():
    """Protects the folds' ranking: Σ n_c·e_c / Σ n_c over the training clusters only, most negative first, ties by
    (layer, head). Here a: (1·[-1,0,0,0] + 3·[0,-1,0,-0.5]) / 4 = [-.25, -.75, 0, -.375]; cluster c is left out, so its
    huge effect on head 1.0 changes nothing."""
    c = effects([("a", 1, -1, 0, 0, 0), ("b", 3, 0, -1, 0, -0.5), ("c", 5, 0, 0, -100, 0)])
    assert cf.fold_ranking(c, ["a", "b"]) == [(0, 1), (1, 1), (0, 0), (1, 0)]
    assert cf.fold_ranking(c, ["c"])[0] == (1, 0)
    tie = effects([("a", 1, 0, 0, 0, 0)])
    assert cf.fold_ranking(tie, ["a"]) == [(0, 0), (0, 1), (1, 0), (1, 1)]  # all equal: (layer, head) order
    with pytest.raises(ValueError):
        cf.fold_ranking(c, ["z"])


def test_every_cluster_is_held_out_once_and_never_ranks_its_own_fold():
    """Protects the cross-fit's design: the folds partition the clusters (sizes within one, seeded: the same seed the
    same folds), each fold's top k is the ranking of the clusters outside it (so no ranked cluster is held out in
    its own fold), and its draws avoid its top k and the key heads."""
    rows = [(f"addition:{i}:{i + 1}", 1 + i % 3, *[(-1) ** (i + j) * (i + 1) * (j + 1) / 10 for j in range(4)])
            for i in range(10)]
    c = effects(rows)
    folds = cf.plan(c, key=[(1, 1)], k=2, n_random=5, seed=0)
    held = [x for f in folds for x in f.held]
    assert sorted(held) == sorted(c.cluster) and len(held) == len(set(held))
    assert sorted(len(f.held) for f in folds) == [3, 3, 4]
    assert cf.fold_of(c.cluster, seed=0) == cf.fold_of(list(reversed(c.cluster)), seed=0)
    assert cf.fold_of(c.cluster, seed=0) != cf.fold_of(c.cluster, seed=1)
    for f in folds:
        train = [x for x in c.cluster if x not in f.held]
        assert not set(train) & set(f.held)
        assert list(f.top) == cf.fold_ranking(c, train)[:2]
        for d in f.random + f.matched:
            assert len(d) == 2 and not set(d) & (set(f.top) | {(1, 1)})


def rows(*values, heads=""):
    """A knockout_crossfit.csv row of ``fold, order, seed, k, cluster, n, correct, ld``."""
    return dict(zip(cf.COLUMNS, ("addition", *values, heads)))


def frame(n_random=1):
    """Two folds, one cluster each: fold 0 holds cluster a (2 prompts), fold 1 cluster b (6)."""
    out = []
    for f, c, n in ((0, "a", 2), (1, "b", 6)):
        out += [rows(f, "nothing-out", -1, 0, c, n, n, 3.0)]
        out += [rows(f, "effect-rank", -1, 2, c, n, [1, 0][f], [1.0, -1.0][f], ["0.0 0.1", "0.0 1.0"][f])]
        out += [rows(f, "random-rank", s, 2, c, n, n - s, 2.0 + s) for s in range(n_random)]
    out += [rows(0, "layer-matched", 0, 2, "a", 2, 2, 2.5)]  # only fold 0 has one: no pooled layer-matched draw
    return pd.DataFrame(out, columns=cf.COLUMNS)


def test_pooled_readings_are_ratios_of_sums_over_every_held_out_cluster():
    """Protects the pooling against literals: top 2 out, accuracy (1 + 0) / (2 + 6) = 0.125 and logit difference
    (2·1 + 6·(−1)) / 8 = −0.5; random draw s pools both folds: (2 − s + 6 − s) / 8 and 2 + s; a draw not in every
    fold is left out; the bootstrap interval over the 2 clusters spans the clusters' own readings; the folds' tops
    and their overlap (0.0 in both, three heads in any)."""
    p = cf.pooled(frame(n_random=2))
    assert (p.n, p.clusters, p.k) == (8, 2, 2)
    assert p.top_acc.value == pytest.approx(0.125) and p.top_ld.value == pytest.approx(-0.5)
    assert p.random_acc == pytest.approx((1.0, 0.75)) and p.random_ld == pytest.approx((2.0, 3.0))
    assert p.matched_acc == () and (p.intact_acc, p.intact_ld) == (1.0, 3.0)
    assert p.top_acc.lo == pytest.approx(0.0) and p.top_acc.hi == pytest.approx(0.5)
    assert p.top_ld.lo == pytest.approx(-1.0) and p.top_ld.hi == pytest.approx(1.0)
    assert p.tops == (("0.0", "0.1"), ("0.0", "1.0")) and p.overlap() == (1, 3)


def reading(v, lo, hi):
    return cf.Reading(v, lo, hi)


def diff(v, lo, hi, sets=20):
    """A constructed paired difference: the same reading pooled and in each of three folds."""
    return cf.Paired(reading(v, lo, hi), tuple(cf.FoldDiff(f, 130, 10, 20, sets, reading(v, lo, hi)) for f in range(3)))


DRAWS = tuple(0.8 + 0.005 * i for i in range(20))  # mean 0.8475, 5th percentile 0.80475: bound -0.04275 from the mean


def made(clusters=30, top=0.1, d=(-0.7, -0.75, -0.65), matched=(), md=(-0.5, -0.6, -0.4), sets=20, draws=DRAWS):
    """A pooled cross-fit: accuracies (``top``, the draws, their paired difference ``d``) and logit differences
    three times the draws' (top -1.0, difference -4 [-4.5, -3.5]); layer-matched draws ``matched`` with ``md``."""
    return cf.CrossFit(8, 400, clusters, (("1.0",), ("1.0",), ("1.1",)), 1.0, 3.0, reading(top, top, top),
                       reading(-1.0, -1.5, -0.5), draws, tuple(x * 3 for x in draws), matched,
                       tuple(x * 3 for x in matched), diff(*d, sets=sets), diff(-4, -4.5, -3.5, sets=sets),
                       diff(*md, sets=sets) if matched else None, diff(-4, -4.5, -3.5, sets=sets) if matched else None)


def test_the_verdict_reads_the_paired_difference_against_the_bounds_from_the_draws_mean():
    """Protects the rule on constructed readings. The bounds, measured from the draws' mean 84.75 %: the lowest draw
    -4.75 points, the 5th percentile -4.275. A top 8 below every draw whose difference's upper end (-65) lies below
    -4.275: holds; an upper end at -1 (lower -10): inconclusive; a lower end at -4.27 (at or above -4.275): does not hold; at -4.29: inconclusive; the
    interval clear of the bound but the top 8 (81 %) above the lowest draw: inconclusive; 19 clusters: inconclusive;
    a fold with 19 distinct head sets: inconclusive on the logit difference, not on accuracy (the text gives the
    logit difference that test); a layer-matched difference that does not hold sinks the verdict."""
    assert crossfit_verdict(made(), "acc")[1] is True
    assert crossfit_verdict(made(d=(-0.05, -0.1, -0.01)), "acc")[1] is None
    assert crossfit_verdict(made(d=(0.0, -0.0427, 0.02)), "acc")[1] is False
    assert crossfit_verdict(made(d=(-0.0428, -0.0429, 0.02)), "acc")[1] is None  # just below the bound
    assert crossfit_verdict(made(top=0.81, d=(-0.2, -0.3, -0.1)), "acc")[1] is None
    assert crossfit_verdict(made(clusters=19), "acc")[1] is None
    assert crossfit_verdict(made(sets=19), "ld")[1] is None and crossfit_verdict(made(sets=19), "acc")[1] is True
    assert crossfit_verdict(made(matched=DRAWS, md=(0.1, 0.0, 0.2)), "acc")[1] is False
    assert crossfit_verdict(made(matched=DRAWS), "acc")[1] is True and crossfit_verdict(made(), "ld")[1] is True
    text = crossfit_verdict(made(), "acc")[0]
    assert "400 held-out prompts from 30 problem clusters" in text and "(0 in every fold's, 2 in any)" in text
    assert "paired by cluster: -70 [-75, -65] points (by fold -70 / -70 / -70)" in text
    assert "vs -5 points to the lowest draw, -4 points to the 5th percentile" in text
    assert "layer-matched: not run" in text and "20/20/20 distinct head sets by fold" in text


def hand(n_random=2):
    """Fold 0 holds a (2 prompts) and b (4), fold 1 c (1) and d (3). Top 8 right: a 0, b 2, c 0, d 3; the random draws
    right: a 2 and 1, b, c and d all. Each cluster's difference: a 0 - 0.75, b 0.5 - 1, c 0 - 1, d 1 - 1; logit
    differences the same numbers. Fold 1's two draws are one head set in two orders."""
    out, heads = [], {0: ["2.0 2.1", "3.0 3.1"], 1: ["2.0 2.1", "2.1 2.0"]}
    for f, c, n, top, rnd in ((0, "a", 2, 0, (2, 1)), (0, "b", 4, 2, (4, 4)), (1, "c", 1, 0, (1, 1)), (1, "d", 3, 3, (3, 3))):
        out += [rows(f, "nothing-out", -1, 0, c, n, n, 3.0)]
        out += [rows(f, "effect-rank", -1, 2, c, n, top, top / n, heads="0.0 0.1")]
        out += [rows(f, "random-rank", s, 2, c, n, rnd[s], rnd[s] / n, heads=heads[f][s]) for s in range(n_random)]
    return pd.DataFrame(out, columns=cf.COLUMNS)


def brute(values, n, strata):
    """Every equally likely stratified resample (each stratum's m clusters drawn m times in order, all m^m ways in
    each, every combination across strata): the set of prompt-weighted means."""
    groups = [[i for i, s in enumerate(strata) if s == t] for t in dict.fromkeys(strata)]
    out = set()
    for pick in itertools.product(*(itertools.product(g, repeat=len(g)) for g in groups)):
        idx = [i for p in pick for i in p]
        out.add(sum(n[i] * values[i] for i in idx) / sum(n[i] for i in idx))
    return out


def test_the_paired_difference_and_its_within_fold_interval_against_a_hand_reference():
    """Protects the estimand the knockout rules decide with, against numbers by hand: pooled (2·-0.75 + 4·-0.5 +
    1·-1 + 3·0) / 10 = -0.45 (= the top 8's pooled 0.5 minus the draws' mean (1.0 + 0.9) / 2); fold 0 -3.5 / 6,
    fold 1 -0.25. The resampling keeps each fold's clusters in their fold: its interval's ends are the extremes of
    the 16 stratified resamples enumerated (each end has probability 1/16, above the 2.5 % the interval cuts off):
    -5/6 (a, a with c, c) and -2/7 (b, b with d, d), never -1 (c four times, a resample across the folds); each fold's
    the extremes of its own 4. Distinct head sets counted per fold: 2 and 1."""
    p = cf.pooled(hand())
    d = [-0.75, -0.5, -1.0, 0.0]
    for m in ("acc", "ld"):
        r = getattr(p, f"random_{m}_diff")
        assert r.diff.value == pytest.approx(-0.45) and r.diff.value == pytest.approx(
            getattr(p, f"top_{m}").value - sum(getattr(p, f"random_{m}")) / 2)
        every = brute(d, [2, 4, 1, 3], [0, 0, 1, 1])
        assert (min(every), max(every)) == pytest.approx((-5 / 6, -2 / 7))
        assert (r.diff.lo, r.diff.hi) == pytest.approx((min(every), max(every)))
        across = min(brute(d, [2, 4, 1, 3], [0, 0, 0, 0]))  # the four clusters resampled as one stratum
        assert across == pytest.approx(-1.0) and across < r.diff.lo
        f0, f1 = r.folds
        assert (f0.fold, f0.n, f0.clusters, f0.draws, f0.sets) == (0, 6, 2, 2, 2)
        assert (f1.fold, f1.n, f1.clusters, f1.draws, f1.sets) == (1, 4, 2, 2, 1)
        assert (f0.diff.value, f0.diff.lo, f0.diff.hi) == pytest.approx((-3.5 / 6, -0.75, -0.5))
        assert (f1.diff.value, f1.diff.lo, f1.diff.hi) == pytest.approx((-0.25, -1.0, 0.0))
    assert p.matched_acc_diff is None and p.matched_ld_diff is None  # no layer-matched draw: not run
    assert cf.pooled(hand()) == p  # one seed: the same numbers again


def test_identical_top_and_draws_give_a_difference_of_exactly_zero():
    """Protects the pairing: draws whose rows are the top 8's own (every cluster, every fold) differ from it by
    exactly 0, pooled and in each fold, with an interval of width 0, whatever the clusters' spread."""
    f = hand()
    top = f[f.order == "effect-rank"]
    same = pd.concat([f[f.order != "random-rank"]] + [top.assign(order="random-rank", seed=s) for s in range(4)])
    p = cf.pooled(same)
    for r in (p.random_acc_diff, p.random_ld_diff):
        assert (r.diff.value, r.diff.lo, r.diff.hi) == (0.0, 0.0, 0.0)
        assert all((x.diff.value, x.diff.lo, x.diff.hi) == (0.0, 0.0, 0.0) for x in r.folds)


def test_the_step_knocks_out_what_the_rules_read():
    """Protects the step against drifting from its rules: it knocks out K heads with MIN_DRAWS draws per fold, the
    numbers the knockout rules decide with."""
    from arithmech.identify import knockout_claims

    assert (cf.K, cf.DRAWS) == (knockout_claims.K, knockout_claims.MIN_DRAWS)
