"""Unit tests of ``arithmech/report/views/fewshot.py``: the SmolLM2 appendix's zero-shot and few-shot runs side by side,
read from the shipped folders and checked against the files read directly."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from arithmech.claims.evidence import Context
from arithmech.core.stats import wilson_interval
from arithmech.data.floors import not_passed
from arithmech.report.views import fewshot

FOLDER = Path(__file__).resolve().parents[4] / "results" / "smollm2-135m"
FOLDERS = {"zero-shot": FOLDER / "zero-shot", "4-shot": FOLDER}
RUNS = {label: Context(folder) for label, folder in FOLDERS.items()}  # each run's step Results, read once


def test_yield_rows_are_the_runs_own_counts():
    """Protects the side-by-side's first table: per run and operation, the pairs drawn and X_r kept are
    run.json's (both runs drew the pairs their own parameters ask for, the same number), the distinct X_r ranked on
    are prompts.jsonl's distinct prompts, and a task's control reads as the claims recompute it (zero-shot addition:
    48 % over distinct problems, where the run's own floor failed it at 64 %; its simultaneous interval [23 %, 78 %]
    over its 21 problem clusters straddles the 50 % bound, so the control reads it undecided (version 6: on 31
    ordered problems, [23 %, 74 %]), not failed)."""
    y = fewshot.yield_rows(RUNS)
    drawn = set()
    for label, folder in FOLDERS.items():
        record = json.loads((folder / "run.json").read_text())["steps"]["identify"]
        samples, n = record["samples"], record["parameters"]["n_samples"]
        drawn.add(n)
        control = Context(folder).control()                          # recomputed from prompts.jsonl
        rows = [json.loads(line) for line in (folder / "prompts.jsonl").read_text().splitlines()]
        for op, s in samples.items():
            r = y[(y.prompts == label) & (y.operation == op)].iloc[0]
            assert r.drawn == s["n_drawn"] == n and r["kept X_r"].startswith(f"{s['n_kept']} (")
            assert r["distinct X_r ranked on"] == len({p["clean"] for p in rows if p["op"] == op})
            assert r.control.startswith("fails") == (control["status"][op] == "fails")
            assert (r.control == "passes") == (op in control["pooled"] and op not in not_passed(control))
        if label == "zero-shot":
            r = y[(y.prompts == label) & (y.operation == "addition")].iloc[0]
            assert r.control.startswith("undecided on 21 problem clusters: ") and "[23%, 78%]" in r.control  # v7
            assert r["floor over distinct problems"].startswith("48% (op, carried, b")
            assert r["conditioned floor as run (each prompt from the others)"] == "64%"
    assert len(drawn) == 1


def test_circuit_rows_read_the_pooled_knockout_at_k():
    """Protects the knockout columns: the top-8 point, its n and its split are knockout.csv's rows of the pooled
    task at END, its interval the claims' (Wilson over the problem clusters, not the file's over prompts), the random band spans the 5th to 95th percentile of the random draws at the same k, and each
    pooled task's own prompts are listed, 0 for one without rows (a held-out draw that found nothing)."""
    c = fewshot.circuit_rows(RUNS).set_index("prompts")
    for label, folder in FOLDERS.items():
        ko = pd.read_csv(folder / "knockout.csv")
        d = ko[(ko.task == "all") & (ko.positions == "end") & (ko.kind == "head") & (ko.k == 8)]
        key, rnd = d[d.order == "effect-rank"].iloc[0], d[d.order == "random-rank"]
        pooled = json.loads((folder / "key_heads.json").read_text())["control"]["pooled"]
        own = {t: int(ko[(ko.task == t) & (ko.kind == "sanity")].n.max()) if (ko.task == t).any() else 0 for t in pooled}
        assert c.loc[label, "n prompts"] == (f"{key.n} (pooled from the tasks' own: "
                                             + ", ".join(f"{t} {m}" for t, m in own.items()) + ")")
        assert c.loc[label, "top 8 out"].startswith(f"{key.accuracy:.0%} (")
        m = int(key.n_clusters)                                  # the claims' interval: Wilson over the clusters
        lo, hi = wilson_interval(key.accuracy * m, m)
        assert c.loc[label, "top 8 out"].endswith(f"{lo:.0%}–{hi:.0%}, Wilson over {m} problem clusters)")
        assert c.loc[label, "8 random out (5–95%)"] == (f"{rnd.accuracy.quantile(0.05):.0%}–"
                                                        f"{rnd.accuracy.quantile(0.95):.0%} ({len(rnd)} draws)")
        split = json.loads((folder / "run.json").read_text())["steps"]["identify"]["parameters"]["knockout_split"]
        assert c.loc[label, "knockout prompts"] == f"{key.split} (problems never ranked on)" == f"{split} (problems never ranked on)"


def test_changed_lines_name_each_claim_whose_verdict_differs():
    """Protects the SmolLM2 box's "decided again" line: one line per claim whose verdict differs between the first
    run and another, naming both verdicts; none for a run beside itself."""
    (a, fa), (b, fb) = RUNS.items()
    assert fewshot.changed_lines({a: fa, "again": fa}) == []
    v = fewshot.verdict_rows(RUNS, fewshot.CLAIMS + fewshot.ANALYZE_CLAIMS)
    differ = v[v[a] != v[b]]
    lines = fewshot.changed_lines(RUNS)
    assert lines == [f"{r['claim']}: {r[a]} → {r[b]} ({b})" for _, r in differ.iterrows()]
    assert len(differ) > 0, "the fixture's two runs should disagree somewhere for this test to bite"
