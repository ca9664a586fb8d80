"""What the deciders read (arithmech.claims.evidence): the cluster-aware knockout interval."""
from __future__ import annotations

import pandas as pd
import pytest

from arithmech.claims import decide
from arithmech.claims.evidence import Context, cluster_interval
from arithmech.core import results
from arithmech.core.stats import wilson_interval


def _write_identify(folder, ko: pd.DataFrame) -> None:
    """An identify folder holding ``ko`` as its knockout.csv, with no key head and three flat effects."""
    eff = pd.DataFrame([{"task": "all", "layer": 0, "head": h, "effect": -0.1, "effect_lo": -0.11, "effect_hi": -0.09,
                         "logit_diff": -1.0, "n": 250} for h in ("0", "1", "mlp")])
    results.write_step(folder, "identify", {"prompts.jsonl": [{"clean": "1 + 2 =", "corrupt": "1 @ 2 =", "answer": "3",
                                                         "template": "t"}], "effects.csv": eff,
                                       "key_heads.json": {"task": "all", "heads": []}, "knockout.csv": ko},
                 {"parameters": {}})



def test_cluster_interval_counts_problems_not_prompts():
    """Protects the knockout intervals from 128 prompts of 25 problems read as 128 trials: with n_clusters the
    interval is Wilson's over the clusters (accuracy × clusters of clusters), checked against the formula by
    hand for 20% of 10 clusters, and wider than over the prompts; without the column the file's own interval."""
    row = pd.Series({"accuracy": 0.2, "n": 250, "ci_low": 0.15, "ci_high": 0.25, "n_clusters": 10})
    lo, hi, what = cluster_interval(row)
    z = 1.959964
    centre = (0.2 + z * z / 20) / (1 + z * z / 10)
    half = z * (0.2 * 0.8 / 10 + z * z / 400) ** 0.5 / (1 + z * z / 10)
    assert (lo, hi) == pytest.approx((centre - half, centre + half)) and what == "Wilson over 10 problem clusters"
    assert hi > 0.25 and (lo, hi) == wilson_interval(2, 10)
    assert cluster_interval(row.drop("n_clusters"))[:2] == (0.15, 0.25)


@pytest.mark.parametrize(
    ("clusters", "accuracy", "holds", "says"),
    [
        (20, 0.2, None, "42% (Wilson over 20 problem clusters)"),  # inside the band: inconclusive
        (40, 0.05, True, "17% (Wilson over 40 problem clusters)"),  # below every draw and the band: holds
        (10, 0.05, None, "fewer than 20 problem clusters (10): inconclusive"),  # below the one threshold
    ],
)
def test_knockout_verdict_reads_the_cluster_interval(tmp_path, clusters, accuracy, holds, says):
    """Protects knockout-key-vs-random versions 6 and 12: the top 8 out, below every random draw (40–59%) and with
    its prompt interval (upper 25% or less) below their 5th percentile, holds only where its Wilson interval over
    the problem clusters lies below that percentile too (20% of 20 clusters reaches 42%: inconclusive; 5% of 40
    reaches 17%: holds); and below 20 problem clusters (arithmech.data.answers.MIN_CLUSTERS) nothing is decided."""
    rows = [dict(task="all", kind="head", order="effect-rank", seed=-1, k=8, accuracy=accuracy, n=250, ci_low=0.02,
                 ci_high=0.25, n_clusters=clusters),
            dict(task="all", kind="head", order="effect-rank", seed=-1, k=0, accuracy=1.0, n=250, ci_low=0.98,
                 ci_high=1.0, n_clusters=clusters)]
    rows += [dict(task="all", kind="head", order="random-rank", seed=s, k=8, accuracy=0.4 + 0.01 * s, n=250,
                  ci_low=0.3, ci_high=0.5, n_clusters=clusters) for s in range(20)]
    ko = pd.DataFrame(rows).assign(positions="end", mean_source="pool", correct=lambda d: (d.accuracy * 250).astype(int))
    _write_identify(tmp_path, ko)
    row = decide.claims(Context(tmp_path), ["knockout-key-vs-random"]).iloc[0]
    assert row.holds is holds and says in row.here, row.here
    flat = decide.claims(Context(tmp_path), ["knockout-random-flat"]).iloc[0]  # random mean 49.5% vs intact 100%
    assert flat.holds is (None if clusters < 20 else False), flat.here

