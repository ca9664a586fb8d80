"""The account rules (arithmech/accounts/rules.py): three-way verdicts from intervals, not-testable conditions, and
rules committed before the results they decide."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from arithmech.accounts import rules

ROOT = Path(__file__).resolve().parents[3]


def numbers(**over) -> dict:
    """A complete ``numbers`` dict where every deciding criterion passes."""
    n = dict(
        key_heads=2, clusters_cf=40, den_mlp=(-2.0, -2.5, -1.5), den_heads=(-1.0, -1.2, -0.8),
        rho_mlp=(0.05, -0.05, 0.15), rho_heads=(0.8, 0.6, 1.0),
        f_denominator=3.0, ld_clean=5.0, b1_k=10, width=512,
        class_rate=(0.8, 0.7, 0.9), null_rate=0.1, assoc_clusters=60, assoc_diff=(0.5, 0.2, 0.8),
        periodic_wins=(0.3, 0.2, 0.4),
        probes=[{"testable": True, "kappa": 0.9, "null_quantile": 0.3}], spectrum_mlp=0.7, spectrum_baseline=0.5,
        clusters_removal=60,
        removal_mlp=dict(full_drop=3.0, periodic_drop=2.0, random_q95=1.0, random_median=0.8, diff=(1.0, 0.5, 1.5)),
        removal_attn=dict(full_drop=3.0, periodic_drop=0.5, random_q95=1.0, random_median=0.8, diff=(-0.3, -0.6, -0.1)),
        operand_values=9, digit_tokens=True,
        subspace={"all": (-2.0, -2.5, -1.5), "ratio": (0.9, 0.85, 0.95), "dim": 9},
    )
    n.update(over)
    return n


def test_every_account_passes_on_numbers_made_to_pass_and_d_is_not_testable_on_one_digit_operands():
    """Protects the verdict logic: H, B and F pass when every deciding interval lies on the pass side; D is not
    testable with 9 operand values tokenized digit by digit, while its descriptive D2 is still scored."""
    d = rules.decide(numbers())
    assert {a: d[a]["verdict"] for a in "HBF"} == {"H": rules.PASS, "B": rules.PASS, "F": rules.PASS}
    assert d["D"]["verdict"] == rules.NOT_TESTABLE and d["D"]["criteria"]["D2"] == rules.PASS
    assert d["F"]["criteria"]["F3-attn"] == rules.FAIL and d["B"]["criteria"]["B/F"] == rules.FAIL


def test_intervals_that_straddle_a_threshold_are_inconclusive_and_a_failed_criterion_fails_the_account():
    """Protects the three-way rule: an interval across the threshold is inconclusive (never a pass), an interval on
    the wrong side fails the criterion and the account."""
    assert rules.side((0.3, 0.1, 0.6), 0.25, above=False) == rules.INCONCLUSIVE
    assert rules.side((0.5, 0.4, 0.6), 0.25, above=False) == rules.FAIL
    d = rules.decide(numbers(key_heads=0))
    assert d["H"]["verdict"] == rules.FAIL and d["H"]["criteria"]["H1"] == rules.FAIL
    d = rules.decide(numbers(assoc_diff=(0.1, -0.1, 0.3)))
    assert d["B"]["criteria"]["B3"] == rules.INCONCLUSIVE and d["B"]["verdict"] == rules.INCONCLUSIVE


def test_not_testable_conditions_are_applied():
    """Protects the stated preconditions: no operand effect to compare (H), too few associated problems (B3), a
    subspace removal that moves nothing (F3) and no testable probe (F1) are not testable, not failures."""
    d = rules.decide(numbers(den_mlp=(-0.1, -0.3, 0.1)))
    assert d["H"]["criteria"]["H2"] == rules.NOT_TESTABLE and d["H"]["verdict"] == rules.NOT_TESTABLE
    assert rules.decide(numbers(assoc_clusters=5))["B"]["criteria"]["B3"] == rules.NOT_TESTABLE
    rm = dict(full_drop=0.1, periodic_drop=0.0, random_q95=0.0, random_median=0.0, diff=(0, 0, 0))
    assert rules.decide(numbers(removal_mlp=rm))["F"]["criteria"]["F3"] == rules.NOT_TESTABLE
    assert rules.decide(numbers(probes=[{"testable": False, "kappa": 1, "null_quantile": 0}]))["F"]["criteria"]["F1"] \
        == rules.NOT_TESTABLE
    assert rules.decide(numbers(null_rate=0.45))["B"]["criteria"]["B2"] == rules.FAIL      # not twice the permuted rate


def test_the_rules_hash_changes_with_a_threshold(monkeypatch):
    """Protects the record of which rules decided a result: the hash covers every threshold."""
    before = rules.rules_sha256()
    monkeypatch.setattr(rules, "R2_MIN", 0.31)
    assert rules.rules_sha256() != before


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()


def test_shipped_signatures_were_committed_after_the_rules_and_decided_under_them():
    """Protects rules before results: every committed ``signatures.json`` of ``results/*/accounts/`` was added in a
    commit that descends from (and differs from) the commit that added the rules, and records the rules' current
    hash, or an earlier version's (``R.EARLIER_SHA256``, logged in the changelog) whose verdicts the current rules
    give its numbers unchanged."""
    if not _git("rev-parse", "--is-inside-work-tree"):
        pytest.skip("not a git work tree")
    added = _git("log", "--diff-filter=A", "--format=%H", "--", "arithmech/accounts/rules.py").splitlines()
    if not added:
        pytest.skip("the rules are not committed yet")
    first = added[-1]
    for path in sorted((ROOT / "results").glob("*/accounts/signatures.json")):
        rel = str(path.relative_to(ROOT))
        if not _git("ls-files", rel):
            continue
        commit = _git("log", "--diff-filter=A", "--format=%H", "--", rel).splitlines()[-1]
        assert commit != first, f"{rel} was committed with the rules"
        assert subprocess.run(["git", "-C", str(ROOT), "merge-base", "--is-ancestor", first, commit]).returncode == 0
        sig = json.loads(path.read_text())
        if sig["rules_sha256"] != rules.rules_sha256():  # an earlier version's result stands while its verdicts do
            assert sig["rules_sha256"] in rules.EARLIER_SHA256, rel
            assert rules.decide(sig["numbers"]) == sig["verdicts"], f"{rel}: the current rules move its verdicts"
