"""The crossfit step's input contract: a folder it cannot read is one line and exit 2 before any model loads, and a
shipped identify folder gives the prompts and clusters its knockout will fold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from arithmech.identify import crossfit

REPO = Path(__file__).resolve().parents[3]


def test_a_missing_identify_folder_is_one_line_and_exit_2():
    """Protects the command's contract: no identify files, one ``error:`` line and exit code 2, no model loaded."""
    p = subprocess.run(
        [sys.executable, "-m", "arithmech", "crossfit", "--model", "embedded", "--results", "/nonexistent-arithmech"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and "does not exist" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_the_shipped_addition_folder_gives_every_ranked_prompt_its_cluster():
    """Protects what the SmolLM2 run folded: addition's 467 ranking-side prompts in effects_clusters.csv's 30
    clusters (as many prompts as the file counts), no key head, and a label per prompt written as the file writes
    it."""
    task, clusters, samples, labels, key, _ = crossfit.inputs(REPO / "results" / "smollm2-135m" / "addition")
    assert (task, len(clusters), len(samples), key) == ("addition", 30, 467, [])
    assert set(labels) == set(clusters.cluster) and labels[0] == "addition:3:7"
