"""The accounts' box in the introduction: what it shows comes from the signatures file, account by account."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from arithmech.accounts import page, result
from arithmech.accounts.config import Chapter
from arithmech.accounts.rules import RULES, rules_sha256, rules_version

REPO = Path(__file__).resolve().parents[3]
SHIPPED = REPO / "results" / "smollm2-135m" / "accounts"


def test_findings_box_shows_each_accounts_verdict_from_its_file(tmp_path):
    """Protects the introduction's accounts box: one row per account with the file's verdict and criteria (edited
    in a copy, so a box that ignored the file would fail), a stale-rules note when the hash differs, no box where a
    model has no accounts results."""
    box = lambda name, label: "\n".join(
        page.findings_box(result.stored(Chapter(results=str(tmp_path / "results")).to_accounts(name)), label))
    dest = tmp_path / "results" / "smollm2-135m" / "accounts"
    shutil.copytree(SHIPPED, dest)
    sig = json.loads((dest / "signatures.json").read_text())
    if sig["rules_sha256"] != rules_sha256():  # decided under an earlier version whose verdicts stand
        note = box("smollm2-135m", "x")
        v = rules_version(sig["rules_sha256"])
        assert "same verdicts" in note and f"Decided under version {v} of the rules" in note, note
        assert f"version {rules_version(rules_sha256())}, the current one" in note
    sig["rules_sha256"] = rules_sha256()
    sig["verdicts"]["F"] = {"verdict": "pass", "criteria": {"F1": "pass", "F9": "inconclusive"}}
    (dest / "signatures.json").write_text(json.dumps(sig))
    shown = box("smollm2-135m", "SmolLM2-135M")
    rows = [l for l in shown.splitlines() if l.startswith("| ") and not l.startswith("| account")]
    assert len(rows) == len(RULES)
    assert "| F: Fourier features | **pass** | F1 pass, F9 inconclusive |" in rows
    assert "predate" not in shown
    sig["rules_sha256"] = "0" * 64
    (dest / "signatures.json").write_text(json.dumps(sig))
    assert "predate the current rules" in box("smollm2-135m", "x")
    assert box("embedded", "The embedded model") == ""
