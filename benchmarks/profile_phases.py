"""Where the time goes: identify's phases and one Table 1 run's phases, measured, written to
``benchmarks/results/profile_<what>.json`` (issue #39: "measure first").

    python benchmarks/profile_phases.py identify            # SmolLM2, the issue's command, run.json phases
    python benchmarks/profile_phases.py table1 --steps 40   # one SmolLM2 Table 1 run, phase by phase

``identify`` runs ``python -m arithmech identify --model smollm2-135m --task addition --n-samples 128
--seed 0`` in a fresh process (a temporary results folder) and copies ``run.json``'s phase times and peak
memory, with the wall time of the whole process.

``table1`` times the pieces of one run of ``table1`` (the ``cpu`` suite, the shipped ranking's top-8 heads):
training (``--steps`` optimizer steps of full SFT and of precise SFT at batch 16; the per-step time is
extrapolated to the run's 220 steps and said so), then each evaluation of the run on the trained
precise model: validation carry (exact match), its completion loss and text loss, test carry, each
cloze set, the test text loss. Every phase is timed with ``time.perf_counter`` in this one process.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
IDENTIFY = ["identify", "--model", "smollm2-135m", "--task", "addition", "--n-samples", "128", "--seed", "0"]


def machine() -> dict:
    import torch
    return {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(), "python": platform.python_version(),
            "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}


def run_identify(python: str = sys.executable, cwd: Path = ROOT, env: dict | None = None) -> dict:
    """The issue's identify command in a fresh process: wall seconds and ``run.json``'s phases."""
    with tempfile.TemporaryDirectory(prefix="arithmech-profile-") as tmp:
        out = Path(tmp) / "run"
        t0 = time.perf_counter()
        subprocess.run([python, "-m", "arithmech", *IDENTIFY, "--out", str(out)], cwd=cwd, check=True,
                       env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        rec = json.loads((out / "run.json").read_text())["steps"]["identify"]
        files = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "run.json"}
    return {"wall_s": round(wall, 1), "phases_s": rec.get("timings"), "peak_memory": rec.get("peak_memory"),
            "files": files}


SUB = {"draw held-out knockout prompts (eval_samples)": "ablation/run.py:.*\\(eval_samples\\)",
       "knockout curves (knockout_curve)": "ablation/curves.py:.*\\(knockout_curve\\)",
       "sanity rows (sanity_rows)": "ablation/run.py:.*\\(sanity_rows\\)",
       "reference pool (build_pool)": "ablation/pool.py:.*\\(build_pool\\)",
       "transfer (run_transfer)": "ablation/transfer.py:.*\\(run_transfer\\)",
       "model load (load_model)": "models.py:.*\\(load_model\\)",
       "every nn.Linear (torch._C._nn.linear)": "torch._C._nn.linear"}


def summarize_identify(prof: Path, out: Path, wall: float | None = None) -> dict:
    """What a profiled identify run spent: ``run.json``'s phases (``out``) and the cumulative seconds of the
    functions in :data:`SUB` from the cProfile file ``prof`` (cProfile's overhead included: compare shares)."""
    import pstats
    import re

    import pandas as pd
    rec = json.loads((out / "run.json").read_text())["steps"]["identify"]
    stats = pstats.Stats(str(prof)).stats
    sub = {}
    for name, pat in SUB.items():
        hits = [v[3] for (f, line, fn), v in stats.items() if re.search(pat, f"{f}:{line}({fn})")]
        sub[name] = round(max(hits), 1) if hits else None
    ko = pd.read_csv(out / "knockout.csv")
    rows = int((ko[ko.kind != "sanity"].n).sum())
    return {"command": "python -m arithmech " + " ".join(IDENTIFY) + " --out DIR",
            "wall_s_profiled": None if wall is None else round(wall, 1),
            "phases_s": rec.get("timings"), "peak_memory": rec.get("peak_memory"), "functions_s": sub,
            "knockout_end_rows": rows,
            "note": "knockout_end_rows: ablated END forwards of the curves (ablations x prompts); each is a "
                    "whole-model pass at one position with the full-vocabulary unembedding, so the curves cost "
                    "about rows x 2 x parameters FLOPs"}


def roofline(rows: int = 512, d: int = 576, reps: int = 20) -> dict:
    """This machine's float32 matrix-product rate (GFLOP/s) at SmolLM2's shapes: a batch of ``rows`` END rows
    through an MLP projection (576 → 1536) and the unembedding (576 → 49,152)."""
    import torch
    out = {}
    for name, n in (("mlp_576x1536", 1536), ("unembed_576x49152", 49152)):
        a, w = torch.randn(rows, d), torch.randn(n, d)
        torch.nn.functional.linear(a, w)
        t0 = time.perf_counter()
        for _ in range(reps):
            torch.nn.functional.linear(a, w)
        out[name] = round(2 * rows * d * n * reps / (time.perf_counter() - t0) / 1e9, 1)
    return out


def with_floor(got: dict, params: int = 134_515_008) -> dict:
    """``got`` plus the knockout curves' FLOPs and the seconds they need at this machine's best rate."""
    flops = got["knockout_end_rows"] * 2 * params
    rate = roofline()
    return {**got, "knockout_curve_tflop": round(flops / 1e12, 1), "matmul_gflops": rate,
            "knockout_curve_floor_s": round(flops / (max(rate.values()) * 1e9), 1)}


def profile_identify(prof: str | None = None, out: str | None = None) -> dict:
    """The command under cProfile in a fresh process (or, with ``prof`` and ``out``, a profile file and the
    results folder of a run already made that way)."""
    if prof and out:
        return summarize_identify(Path(prof), Path(out))
    with tempfile.TemporaryDirectory(prefix="arithmech-profile-") as tmp:
        run_dir, prof_file = Path(tmp) / "run", Path(tmp) / "identify.prof"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof_file), "-m", "arithmech", *IDENTIFY, "--out",
                        str(run_dir)], cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return summarize_identify(prof_file, run_dir, time.perf_counter() - t0)


def profile_table1(steps: int) -> dict:
    import torch

    from arithmech.core.models import load_model
    from arithmech.core.results import model_folder
    from arithmech.data.sentences import VALIDATION_TOPICS, generic_text
    from arithmech.data.splits import carry_items
    from arithmech.evals import cloze, measures
    from arithmech.evals.measures import completion_nll
    from arithmech.evals.scoring import greedy_exact
    from arithmech.evals.suites import CLOZE_SETS, cpu_sizes, get_suite
    from arithmech.finetune import adapter, runner
    from arithmech.finetune.data import tokenize_pairs
    from arithmech.identify.result import read_ranking
    from arithmech.paper import SFT

    suite, sizes = get_suite("cpu"), cpu_sizes()
    heads = read_ranking(model_folder(ROOT / "results", "smollm2-135m"))[0][:8]
    phases: dict = {}
    net = None
    for mode in ("full", "precise"):
        torch.manual_seed(0)
        net, tok, _ = load_model("smollm2-135m", attn_implementation="sdpa")
        rows = tokenize_pairs(tok, suite.train(steps * 16, 0, 0))
        spec = adapter.HeadSpec(heads=tuple(map(tuple, heads)), rescale=True) if mode == "precise" else None
        with tempfile.TemporaryDirectory() as tmp:
            args = runner.training_args(tmp, lr=3e-4, batch_size=16, micro_batch_size=16, max_steps=steps,
                                        warmup=SFT["warmup"], weight_decay=SFT["weight_decay"], seed=0)
            net.train()
            trainer = runner.make_trainer(net, mode, args, rows, tok, spec)
            t0 = time.perf_counter()
            trainer.train()
            dt = time.perf_counter() - t0
        phases[f"train_{mode}"] = {"steps": steps, "s": round(dt, 1), "s_per_step": round(dt / steps, 3),
                                   "extrapolated_220_steps_s": round(dt / steps * 220, 1)}
        if spec is not None:
            net = trainer.merged_model()
    net.eval().requires_grad_(False)

    def timed(name, fn):
        t0 = time.perf_counter()
        fn()
        phases[name] = {"s": round(time.perf_counter() - t0, 1)}

    val, test = carry_items("val", sizes["carry_val"], 0), carry_items("test", sizes["carry_test"], 0)
    timed("val_carry_exact_match", lambda: greedy_exact(net, tok, val, batch_size=64))
    timed("val_math_nll", lambda: completion_nll(net, tok, val))
    timed("val_text_loss", lambda: measures.lm_losses(net, tok, generic_text(VALIDATION_TOPICS)))
    timed("test_carry_exact_match", lambda: greedy_exact(net, tok, test, batch_size=64))
    for name in CLOZE_SETS:
        timed(f"test_cloze_{name}", lambda name=name: cloze.measure(net, tok, name, sizes[name], 0, None))
    timed("test_text_loss", lambda: measures.lm_loss_measure(net, tok, sizes["lm_tokens"]))
    ev = sum(v["s"] for k, v in phases.items() if not k.startswith("train"))
    return {"what": "one SmolLM2 Table 1 run of the cpu suite (arms), phase by phase, one process",
            "phases": phases, "evaluation_s": round(ev, 1),
            "run_s_full": round(phases["train_full"]["extrapolated_220_steps_s"] + ev, 1),
            "run_s_precise": round(phases["train_precise"]["extrapolated_220_steps_s"] + ev, 1)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=("identify", "table1"))
    ap.add_argument("--steps", type=int, default=40, help="table1: optimizer steps timed per mode")
    ap.add_argument("--from-profile", nargs=2, metavar=("PROF", "RUN_DIR"),
                    help="identify: summarize a cProfile file and the results folder of a run made under it")
    a = ap.parse_args(argv)
    got = with_floor(profile_identify(*(a.from_profile or ()))) if a.what == "identify" else profile_table1(a.steps)
    out = RESULTS / f"profile_{a.what}.json"
    out.write_text(json.dumps({**got, "machine": machine()}, indent=1) + "\n")
    print(json.dumps(got, indent=1))


if __name__ == "__main__":
    main()
