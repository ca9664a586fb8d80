"""Where the time goes: identify's phases and one Table 1 run's phases, measured, written to
``benchmarks/results/profile_<what>.json`` (issue #39: "measure first").

    python benchmarks/profile_phases.py identify            # SmolLM2, the issue's command, run.json phases
    python benchmarks/profile_phases.py table1 --steps 40   # one SmolLM2 Table 1 run, phase by phase

``identify`` runs ``python -m arithmech identify --model smollm2-135m --task addition --n-samples 128
--seed 0`` in a fresh process (a temporary results folder) and copies ``run.json``'s phase times and peak
memory, with the wall time of the whole process.

``table1`` times the pieces of one run of ``arms`` (the ``cpu`` suite, the shipped ranking's top-8 heads):
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


def profile_identify() -> dict:
    got = run_identify()
    got.pop("files")
    return {"command": "python -m arithmech " + " ".join(IDENTIFY) + " --out DIR", **got}


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
    from arithmech.paper import SFT
    from arithmech.steps.finetune import ranked_components

    suite, sizes = get_suite("cpu"), cpu_sizes()
    heads = ranked_components(model_folder(ROOT / "results", "smollm2-135m"))[0][:8]
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
    a = ap.parse_args(argv)
    got = profile_identify() if a.what == "identify" else profile_table1(a.steps)
    out = RESULTS / f"profile_{a.what}.json"
    out.write_text(json.dumps({**got, "machine": machine()}, indent=1) + "\n")
    print(json.dumps(got, indent=1))


if __name__ == "__main__":
    main()
