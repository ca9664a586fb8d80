"""One SmolLM2 Table 1 run before and after issue #39's changes, side by side in one run of this script.

    python benchmarks/bench_table1_run.py                       # before = 892c80f, 30 steps per mode
    python benchmarks/bench_table1_run.py --before REV --steps 40

The code before the change is checked out into a temporary ``git worktree`` of ``--before`` and imported from
there; the code after is this tree. Each (tree, mode) trains ``--steps`` optimizer steps of the ``cpu`` suite's
rows (batch 16, the shipped ranking's top-8 heads for ``precise``) in a fresh subprocess, the trees alternating
(before full, after full, before precise, after precise), so a change of machine load hits both. The
per-step time is extrapolated to the 220 steps of a run. Evaluation is timed once per tree on the base model at
the suite's sizes (200 items per cloze set, 4,096 text tokens) in both trees, so ``ratio_run`` is the speed-up of the
same work; the after tree is also timed at ``table1``'s new defaults (100 and 2,048), reported apart
(``ratio_run_with_the_designs_test_sets``: the speed-up plus the cut of the test sets).
Writes ``benchmarks/results/table1_run.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "table1_run.json"

TRAIN = r"""
import json, sys, tempfile, time, torch
from arithmech.core.models import load_model
from arithmech.core.results import model_folder
from arithmech.evals.suites import get_suite
from arithmech.finetune import adapter, runner
from arithmech.finetune.data import tokenize_pairs
from arithmech.paper import SFT
from arithmech.identify.result import read_ranking
mode, steps, results = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.manual_seed(0)
net, tok, _ = load_model("smollm2-135m", attn_implementation="sdpa")
rows = tokenize_pairs(tok, get_suite("cpu").train(steps * 16, 0, 0))
heads = read_ranking(model_folder(results, "smollm2-135m"))[0][:8]
spec = adapter.HeadSpec(heads=tuple(map(tuple, heads)), rescale=True) if mode == "precise" else None
with tempfile.TemporaryDirectory() as tmp:
    args = runner.training_args(tmp, lr=3e-4, batch_size=16, micro_batch_size=16, max_steps=steps,
                                warmup=SFT["warmup"], weight_decay=SFT["weight_decay"], seed=0)
    net.train()
    trainer = runner.make_trainer(net, mode, args, rows, tok, spec)
    t0 = time.perf_counter()
    out = trainer.train()
    dt = time.perf_counter() - t0
print(json.dumps({"s": dt, "loss": out.training_loss}))
"""

EVAL = r"""
import json, sys, time, torch
from arithmech.core.models import load_model
from arithmech.evals.suites import CLOZE_SETS, get_suite
cloze, lm = int(sys.argv[1]), int(sys.argv[2])
S = get_suite("cpu")
sizes = {**S.sizes(), **{k: cloze for k in CLOZE_SETS}, "lm_tokens": lm}
net, tok, _ = load_model("smollm2-135m", attn_implementation="sdpa")
net.eval().requires_grad_(False)
t0 = time.perf_counter()
with torch.no_grad():
    S.evaluate(net, tok, "val", sizes, 0)
    S.evaluate(net, tok, "test", sizes, 0)
print(json.dumps({"s": time.perf_counter() - t0}))
"""


def run(code: str, tree: Path, *args) -> dict:
    from arithmech.evals.benchmarks import data_dir  # this tree's benchmark folder, for both trees
    env = {**os.environ, "PYTHONPATH": str(tree), "ARITHMECH_DATA": str(data_dir())}
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=tree, env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default="892c80f", help="the revision before the change")
    ap.add_argument("--steps", type=int, default=30, help="optimizer steps timed per tree and mode")
    a = ap.parse_args(argv)
    results = ROOT / "results"
    with tempfile.TemporaryDirectory(prefix="arithmech-before-") as tmp:
        before = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before), a.before], check=True,
                       capture_output=True)
        try:
            train = {}
            for mode in ("full", "precise"):
                for name, tree in (("before", before), ("after", ROOT)):
                    train[(name, mode)] = run(TRAIN, tree, mode, a.steps, results)
            ev = {"before": run(EVAL, before, 200, 4096), "after": run(EVAL, ROOT, 100, 2048),
                  "after_same_sizes": run(EVAL, ROOT, 200, 4096)}
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False)
    per_step = {f"{n}_{m}": v["s"] / a.steps for (n, m), v in train.items()}
    same = {"before": ev["before"]["s"], "after": ev["after_same_sizes"]["s"]}        # the speed-up: same test sets
    run_s = {f"{n}_{m}": per_step[f"{n}_{m}"] * 220 + same[n] for (n, m) in train}
    design_s = {m: per_step[f"after_{m}"] * 220 + ev["after"]["s"] for m in ("full", "precise")}
    res = {"what": "one SmolLM2 Table 1 run (cpu suite, 220 steps of batch 16): training extrapolated from "
                   f"{a.steps} steps per tree and mode, evaluation timed once per tree on the base model",
           "before": a.before, "steps_timed": a.steps, "train_s_per_step": per_step,
           "train_loss": {f"{n}_{m}": v["loss"] for (n, m), v in train.items()},
           "eval_s": {k: v["s"] for k, v in ev.items()}, "run_s": run_s,
           "ratio_train": {m: per_step[f"before_{m}"] / per_step[f"after_{m}"] for m in ("full", "precise")},
           "ratio_run": {m: run_s[f"before_{m}"] / run_s[f"after_{m}"] for m in ("full", "precise")},
           "run_s_with_the_designs_test_sets": design_s,
           "ratio_run_with_the_designs_test_sets": {m: run_s[f"before_{m}"] / design_s[m] for m in ("full", "precise")},
           "ratio_eval_same_sizes": ev["before"]["s"] / ev["after_same_sizes"]["s"],
           "machine": {"cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}}
    OUT.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
