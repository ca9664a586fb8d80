"""The rules that score the method against the planted model (arithmech/planted/rules.py): three-way verdicts
from intervals, and rules committed before the results they decide."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from arithmech.planted import rules

ROOT = Path(__file__).resolve().parents[3]
SCORES = "results/planted/planted_score/scores.json"


def score(recall=(1.0, 1.0, 1.0), precision=(1.0, 1.0, 1.0), clusters=40) -> dict:
    part = lambda v: dict(zip(("value", "lo", "hi"), v))
    return {"clusters": clusters, "recall": part(recall), "precision": part(precision)}


def test_recovery_passes_only_when_both_whole_intervals_clear_their_thresholds():
    """Protects the recovery rule: both intervals above their bars pass; one interval across a bar is inconclusive;
    one wholly below fails; a method that names no head fails; too few problem clusters is not testable."""
    assert rules.recovers(score()) == rules.PASS
    assert rules.recovers(score(recall=(2 / 3, 1 / 3, 1.0))) == rules.INCONCLUSIVE
    assert rules.recovers(score(precision=(0.5, 0.4, 0.55))) == rules.FAIL
    assert rules.recovers(score(recall=(0.0, 0.0, 0.0), precision=(None, 0.0, 1.0))) == rules.FAIL
    assert rules.recovers(score(clusters=rules.MIN_CLUSTERS - 1)) == rules.NOT_TESTABLE


def test_knockout_rule_reads_the_planted_drop_above_and_the_random_drop_below():
    """Protects the knockout criteria's directions: the movers' drop must clear its bar from above, the random
    control's stay under its own."""
    ko = {"clusters": 40, "drop_planted": (0.6, 0.5, 0.7), "drop_random": (0.0, 0.0, 0.0)}
    assert rules.knockout_verdicts(ko) == {"knockout-planted": rules.PASS, "knockout-random": rules.PASS}
    ko |= {"drop_planted": (0.1, 0.05, 0.15), "drop_random": (0.04, 0.0, 0.08)}
    assert rules.knockout_verdicts(ko) == {"knockout-planted": rules.FAIL, "knockout-random": rules.INCONCLUSIVE}


def test_the_rules_hash_changes_with_a_threshold(monkeypatch):
    """Protects the record of which rules decided a result: the hash covers every threshold."""
    before = rules.rules_sha256()
    monkeypatch.setattr(rules, "RECALL_MIN", 0.61)
    assert rules.rules_sha256() != before


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()


def test_shipped_scores_were_committed_after_the_rules_and_decided_under_them():
    """Protects rules before results: the committed planted scores were added in a commit that descends from (and
    differs from) the commit that first added the rules (followed across renames), and record the rules' current
    hash."""
    if not _git("rev-parse", "--is-inside-work-tree"):
        pytest.skip("not a git work tree")
    added = _git("log", "--follow", "--diff-filter=A", "--format=%H", "--", "arithmech/planted/rules.py").splitlines()
    if not added or not _git("ls-files", SCORES):
        pytest.skip("the rules or the scores are not committed yet")
    first = added[-1]
    commit = _git("log", "--diff-filter=A", "--format=%H", "--", SCORES).splitlines()[-1]
    assert commit != first, f"{SCORES} was committed with the rules"
    assert subprocess.run(["git", "-C", str(ROOT), "merge-base", "--is-ancestor", first, commit]).returncode == 0
    assert json.loads((ROOT / SCORES).read_text())["rules_sha256"] == rules.rules_sha256()


def test_the_seeds_rule_needs_every_seed_and_three_of_them():
    """Protects the rule across training seeds: pass only when every seed passes, fail only when every seed fails,
    a seed that is inconclusive counts as not passing, fewer than three seeds decide nothing; the rule adds no
    threshold, so the hash the shipped results were decided under stays."""
    assert rules.across_seeds([rules.PASS] * 3) == rules.PASS and rules.across_seeds([rules.FAIL] * 4) == rules.FAIL
    assert rules.across_seeds([rules.PASS, rules.PASS, rules.INCONCLUSIVE]) == "mixed: 2 of 3 seeds pass"
    assert rules.across_seeds([rules.PASS, rules.FAIL, rules.FAIL]) == "mixed: 1 of 3 seeds pass"
    assert rules.across_seeds([rules.PASS, rules.PASS]) == rules.NOT_TESTABLE
    assert "SEEDS_RULE" not in rules.rules_record()["thresholds"]
