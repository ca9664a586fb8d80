"""Unit tests of ``arithmech/report/fewshot.py``: the SmolLM2 appendix's zero-shot and few-shot runs side by side,
read from the shipped folders and checked against the files read directly."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from arithmech.report import fewshot

FOLDER = Path(__file__).resolve().parents[3] / "results" / "smollm2-135m"
RUNS = {"zero-shot": FOLDER / "zero-shot", "4-shot": FOLDER}


def test_yield_rows_are_the_runs_own_counts():
    """Protects the side-by-side's first table: per run and operation, the pairs drawn and X_r kept are
    run.json's, the distinct X_r are prompts.jsonl's distinct prompts, and a task's control reads as its
    key_heads.json says (like with like: both runs drew the same number of pairs)."""
    y = fewshot.yield_rows(RUNS)
    for label, folder in RUNS.items():
        samples = json.loads((folder / "run.json").read_text())["steps"]["identify"]["samples"]
        failed = json.loads((folder / "key_heads.json").read_text())["control"]["failed"]
        rows = [json.loads(line) for line in (folder / "prompts.jsonl").read_text().splitlines()]
        for op, s in samples.items():
            r = y[(y.prompts == label) & (y.operation == op)].iloc[0]
            assert r.drawn == s["n_drawn"] == 4096 and r["kept X_r"].startswith(f"{s['n_kept']} (")
            assert r["distinct X_r"] == len({p["clean"] for p in rows if p["op"] == op})
            assert r.control.startswith("fails") == (op in failed)


def test_circuit_rows_read_the_pooled_knockout_at_k():
    """Protects the knockout columns: the top-8 point, its n and its split are knockout.csv's rows of the pooled
    task at END, and the random band spans the 5th to 95th percentile of the random draws at the same k."""
    c = fewshot.circuit_rows(RUNS).set_index("prompts")
    for label, folder in RUNS.items():
        ko = pd.read_csv(folder / "knockout.csv")
        d = ko[(ko.task == "all") & (ko.positions == "end") & (ko.kind == "head") & (ko.k == 8)]
        key, rnd = d[d.order == "effect-rank"].iloc[0], d[d.order == "random-rank"]
        assert c.loc[label, "n prompts"] == key.n and c.loc[label, "top 8 out"].startswith(f"{key.accuracy:.0%} (")
        assert c.loc[label, "8 random out (5–95%)"] == (f"{rnd.accuracy.quantile(0.05):.0%}–"
                                                        f"{rnd.accuracy.quantile(0.95):.0%} ({len(rnd)} draws)")
        assert c.loc[label, "knockout prompts"] == "held-out (problems never ranked on)" == \
            f"{key.split} (problems never ranked on)"
