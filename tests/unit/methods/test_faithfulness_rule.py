"""The gaps of ``circuit-faithful`` version 6 that version 7 closes (found by a hostile reading), each on
per-prompt arrays run through the writer (:func:`arithmech.methods.faithfulness.circuit_rows`) and the rule
(:func:`arithmech.methods.faithfulness_rule.faithful_verdict`): a case version 6 decided one way and version 7,
by construction, decides otherwise, with the row's numbers checked against a plain reference."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from arithmech.core.stats import bootstrap_ratio_intervals
from arithmech.methods import faithfulness, faithfulness_rule
from arithmech.methods.faithfulness_settings import FaithfulnessSettings, Rows

DRAWS = 20


def _rows(method, order, n, ratios, den, problems, draws):
    """One candidate's and its ``draws`` random circuits' rows: prompt ``k``'s numerator ``ratios[k] * den[k]``, each
    draw ``d`` a constant recovery ``draws[d]`` on every prompt."""
    den = torch.tensor(den, dtype=torch.float64)
    num = torch.stack([torch.tensor(ratios, dtype=torch.float64) * den] + [d * den for d in draws], 1)
    plan = [(order, -1, n, ((0, 0),))] + [(faithfulness_rule.RANDOM[order], r, n, ((1, r),)) for r in range(len(draws))]
    abl = {"noising": "mean", "denoising": "x_r"}[method]
    pos = "operands" if order == "operands" else "end"
    settings = FaithfulnessSettings(n_max=10, n_random=DRAWS, seed=0, n_boot=200, bootstrap="cluster",
                                      split="held-out", batch_size=64, converse_random=False)
    return faithfulness.circuit_rows(Rows("all", method, abl, pos, faithfulness.BASELINE[method]), plan, num, den, settings,
                          faithfulness.Units(problems, problems, len(set(problems))))


def _file(special: dict, n_prompts=40, problems=None, den=None, draws=None) -> pd.DataFrame:
    """Every candidate (top 1..10 and the cross-position circuit) in both directions; each clearly fails (per-prompt
    recovery 0.3) except ``special[(order, n)] = ratios``, run in both directions."""
    problems = problems or list(range(n_prompts))
    den = den or [1.0] * n_prompts
    draws = draws or list(np.linspace(0.0, 0.3, DRAWS))
    rows = []
    for order, n in [("top", n) for n in range(1, 11)] + [("operands", 6)]:
        ratios = special.get((order, n), [0.3] * n_prompts)
        for m in ("noising", "denoising"):
            rows += _rows(m, order, n, ratios, den, problems, draws)
    return pd.DataFrame(rows, columns=faithfulness.COLUMNS)


def _v6(frame: pd.DataFrame) -> bool | None:
    """Version 6's reading of a candidate-complete file whose only possible winner is the top 2: faithful iff both
    directions' clipped lower end is at or above 80% and above the random draws' 95th percentile (every prompt
    counted, no level, no unclipped mean)."""
    s = faithfulness_rule.summary(frame, "recovery")
    c = s[(s.order == "top") & (s.n == 2)]
    return bool(((c.lo >= 0.8) & (c.lo > c.band_hi)).all())


def test_clipping_alone_no_longer_makes_a_candidate_faithful():
    """Protects against A2 (clipping hides over-recovery): every prompt's circuit run gives twice its full effect. Clipped, each prompt is exactly 1 (version 6:
    faithful, holds); the unclipped mean is 2 with every prompt above 1, its interval entirely above 120%: the
    candidate over-recovers and fails, and with every other candidate failing the claim does not hold."""
    f = _file({("top", 2): [2.0] * 40})
    row = f[(f.order == "top") & (f.n == 2) & (f.method == "noising")].iloc[0]
    assert row.recovery == row.recovery_lo == row.recovery_hi == 1.0
    assert row.recovery_raw == pytest.approx(2.0) and row.over_one == 1.0 and row.recovery_raw_lo > faithfulness_rule.OVER
    assert _v6(f) is True
    r = faithfulness_rule.faithful_verdict(f, "all")
    assert r["holds"] is False and r["best"]["status"] is not True
    two = next(c for c in r["candidates"] if c["order"] == "top" and c["n"] == 2)
    assert two["status"] is False and "over-recovers" in two["why"]


def test_the_unclipped_mean_matches_a_plain_mean_and_modest_over_recovery_passes():
    """Protects A2's gate from over-reach and from under-reach (version 9): it is not a ban on any prompt above 1 —
    ratios alternating 0.9 and 1.3 clip to a mean of 0.95, have an unclipped mean of 1.1 (a plain mean) whose
    interval lies below 120%, and the candidate is faithful (its clipped lower end above 80% and the largest draw,
    0.3); but ratios alternating 0.9 and 1.5 (unclipped mean 1.2, interval reaching above 120%) are not shown not
    to over-recover: undecided (version 8, which asked only that the interval reach down to 120%, said faithful)."""
    ratios = [0.9, 1.3] * 20
    f = _file({("top", 2): ratios})
    row = f[(f.order == "top") & (f.n == 2) & (f.method == "denoising")].iloc[0]
    assert row.recovery == pytest.approx(np.mean(np.clip(ratios, 0, 1)))
    assert row.recovery_raw == pytest.approx(np.mean(ratios)) and row.over_one == 0.5
    assert row.recovery_raw_hi <= faithfulness_rule.OVER
    assert faithfulness_rule.faithful_verdict(f, "all")["holds"] is True
    wide = _file({("top", 2): [0.9, 1.5] * 20})
    row = wide[(wide.order == "top") & (wide.n == 2) & (wide.method == "denoising")].iloc[0]
    assert row.recovery_raw_lo <= faithfulness_rule.OVER < row.recovery_raw_hi
    assert faithfulness_rule.faithful_verdict(wide, "all")["holds"] is None


def test_clusters_are_counted_among_the_used_prompts():
    """Protects against A3 (clusters counted on all prompts): 48 prompts ask 32 problems (≥ 20), but the 32 with a positive effect ask only 16 (two prompts each);
    version 6 counted 32 and called the candidate faithful; version 7 counts 16: it cannot decide."""
    problems = [k // 2 for k in range(32)] + list(range(16, 32))
    den = [1.0] * 32 + [-1.0] * 16
    f = _file({("top", 2): [0.95] * 48}, n_prompts=48, problems=problems, den=den)
    row = f[(f.order == "top") & (f.n == 2)].iloc[0]
    assert row.n_clusters == 32 and row.n_used == 32
    assert row.n_used_clusters == len({p for p, d in zip(problems, den) if d > 0}) == 16 < faithfulness_rule.MIN_CLUSTERS
    assert _v6(f) is True and row.n_clusters >= faithfulness_rule.MIN_CLUSTERS        # version 6's gate passed
    r = faithfulness_rule.faithful_verdict(f, "all")
    assert r["holds"] is None and "16 problem clusters among the used prompts" in r["best"]["why"]


def test_a_candidate_resting_on_few_of_its_prompts_cannot_decide():
    """Protects against A4 (no gate on the share used): 100 prompts, each its own problem; only 30 have an effect to recover (30 clusters, enough), 30% of the
    prompts: version 6 decided on them (faithful); version 7 needs half of them used, so it cannot decide."""
    den = [1.0] * 30 + [-1.0] * 70
    f = _file({("top", 2): [0.95] * 100}, n_prompts=100, den=den)
    assert _v6(f) is True
    r = faithfulness_rule.faithful_verdict(f, "all")
    two = next(c for c in r["candidates"] if c["order"] == "top" and c["n"] == 2)
    assert r["holds"] is None and two["status"] is None and two["why"].startswith("cannot decide: 30 of 100 prompts")


def test_intervals_are_adjusted_over_the_candidates():
    """Protects against A5 (unadjusted intervals over 11 candidates): 30 prompts, half recovering 100% and half 72% (mean 86%). At 95% the lower end clears 80% (version 6:
    faithful); at 1 − 0.05/11 it does not, so no candidate is faithful and, the upper end above 80%, the claim is
    inconclusive. The row's interval is the bootstrap at that level and contains the 95% one."""
    ratios = [1.0, 0.72] * 15
    f = _file({("top", 2): ratios}, n_prompts=30)
    row = f[(f.order == "top") & (f.n == 2) & (f.method == "noising")].iloc[0]
    assert row.level == pytest.approx(1 - 0.05 / 11)
    rec, ones = torch.tensor(ratios, dtype=torch.float64)[:, None], torch.ones(30, dtype=torch.float64)
    lo95, hi95 = bootstrap_ratio_intervals(rec, ones, faithfulness.N_BOOT_RULE, 0.95, 0, list(range(30)))
    lo, hi = bootstrap_ratio_intervals(rec, ones, faithfulness.N_BOOT_RULE, faithfulness_rule.RULE_LEVEL, 0, list(range(30)))
    assert row.recovery_lo == pytest.approx(float(lo)) and row.recovery_hi == pytest.approx(float(hi))
    assert row.recovery_lo < 0.8 <= float(lo95) and float(hi95) <= row.recovery_hi
    assert faithfulness_rule.faithful_verdict(f, "all")["holds"] is None


def test_faithful_needs_more_than_the_largest_random_draw():
    """Protects against B6 (a 95th percentile of 20 draws): draws evenly from 0 to 0.95 (95th percentile 0.9025, largest 0.95) and a candidate at 93% on every prompt
    (interval exactly [93%, 93%]): above the 95th percentile, version 6 called it faithful; below the largest draw,
    version 7 does not, and it does not fail either (above the 95th percentile): inconclusive."""
    draws = list(np.linspace(0.0, 0.95, DRAWS))
    f = _file({("top", 2): [0.93] * 40}, draws=draws)
    b = faithfulness_rule.band(f, value="recovery").query("n == 2 and method == 'noising'").iloc[0]
    assert b.band_max == pytest.approx(max(draws)) and b.band_hi == pytest.approx(np.percentile(draws, 95))
    assert _v6(f) is True
    two = next(c for c in faithfulness_rule.faithful_verdict(f, "all")["candidates"] if c["order"] == "top" and c["n"] == 2)
    assert two["status"] is None and two["noising"]["lo"] == pytest.approx(0.93)


def test_a_candidate_with_too_few_random_circuits_cannot_decide():
    """Protects version 9's draw gate: a candidate whose random circuits number 3 (below
    MIN_DRAWS = 20) cannot decide, though its recovery (0.95 on every prompt) tops them all; with the usual 20 it is
    faithful. Version 8 stated "≥ 20 random circuits" and never checked it (3 draws topped: faithful)."""
    good = {("top", 2): [0.95] * 40}
    assert faithfulness_rule.faithful_verdict(_file(good), "all")["holds"] is True
    few = faithfulness_rule.faithful_verdict(_file(good, draws=[0.0, 0.1, 0.2]), "all")
    top2 = next(c for c in few["candidates"] if c["order"] == "top" and c["n"] == 2)
    assert top2["status"] is None and "3 random circuits" in top2["why"] and few["holds"] is None
