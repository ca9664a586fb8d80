"""The memory estimate (:mod:`arithmech.core.estimate`) against the measured peak, step by step (issue #28, item 2).

Each case is one command of ``python -m arithmech`` on the embedded model, run in a fresh process so that the
high-water mark of resident memory (``ru_maxrss``, :func:`arithmech.core.memory.peak_rss_bytes`) is that case's
alone; the estimate is computed here from the same config, before anything runs. The ratio is estimate /
measured; the issue asks for 0.75-1.25 (within 25 %).

The baseline the model starts from (:data:`arithmech.core.estimate.BASELINE`: Python with the step's imports, a
model class built and one forward) is a measured constant, not fitted to these cases: the first case measures
it again (a 2-layer random Llama, one forward) and records both. Nothing else in the model is calibrated; each
term is counted from tensor shapes. Writes ``benchmarks/results/estimate.json``.

    OMP_NUM_THREADS=1 python benchmarks/bench_estimate.py
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arithmech.cli import build_parser
from arithmech.core import estimate as E
from arithmech.core import results as R
from arithmech.core.atomic import atomic_json
from arithmech.core.config import fields
from arithmech.pipeline.registry import STEPS

OUT = Path(__file__).parent / "results" / "estimate.json"
REPO = Path(__file__).resolve().parents[1]
# Runs the command line in this process and prints its peak RSS last, as one JSON line on stderr.
WRAP = ("import atexit, json, sys; from arithmech.core.memory import peak_rss_bytes; "
        "atexit.register(lambda: print(json.dumps({'peak_rss_bytes': peak_rss_bytes()}), file=sys.stderr)); "
        "from arithmech.cli import main; main(sys.argv[1:])")
BASELINE = ("import json, sys, torch; import arithmech.identify.run; from transformers import LlamaConfig, "
            "LlamaForCausalLM; from arithmech.core.memory import peak_rss_bytes; "
            "m = LlamaForCausalLM(LlamaConfig(vocab_size=50, hidden_size=40, intermediate_size=80, num_hidden_layers=2, "
            "num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64)).eval(); "
            "torch.no_grad()(m)(torch.ones(4, 8, dtype=torch.long)); "
            "print(json.dumps({'peak_rss_bytes': peak_rss_bytes()}), file=sys.stderr)")


def cases(work: Path) -> list[list[str]]:
    """Two or three sizes of each step; analyze, beyond and faithfulness read the identify files of the first case."""
    ident = str(work / "identify")
    return [
        ["identify", "--task", "addition", "--n-samples", "256", "--knockout-samples", "32", "--pool-size", "32",
         "--n-random", "2", "--out", ident],
        ["identify", "--task", "addition", "--n-samples", "1024", "--no-knockout", "--no-transfer", "--out", str(work / "i2")],
        ["identify", "--task", "addition", "--n-samples", "4096", "--no-knockout", "--no-transfer", "--out", str(work / "i3")],
        ["analyze", "--n-samples", "64", "--results", ident],
        ["analyze", "--n-samples", "256", "--batch-size", "256", "--results", ident, "--overwrite"],
        ["beyond", "--n-samples", "32", "--results", ident],
        ["beyond", "--n-samples", "256", "--ig-steps", "16", "--results", ident, "--overwrite"],
        ["faithfulness", "--n-samples", "32", "--n-max", "5", "--results", ident],
        ["faithfulness", "--n-samples", "128", "--results", ident, "--overwrite"],
        ["accuracy-by-template", "--n-per-template", "4", "--results", str(work / "a1")],
        ["accuracy-by-template", "--n-per-template", "64", "--results", str(work / "a2")],
        ["stability", "--task", "addition", "--seeds", "2", "--sizes", "64,256", "--kinds", "operator",
         "--results", str(work / "s1")],
        ["stability", "--task", "addition", "--seeds", "2", "--sizes", "256,2048", "--kinds", "operator",
         "--results", str(work / "s2")],
    ]


def config_of(argv: list[str]):
    """The step's config as the command line builds it (same defaults, same checks)."""
    a = build_parser().parse_args(argv)
    klass = STEPS[argv[0]].config
    return klass(**{name: getattr(a, name) for name, *_ in fields(klass)})


def recorded(config, command: str) -> E.Estimate | None:
    """The estimate the step made and recorded, with what it read before loading its model (faithfulness:
    identify's tasks, shots, pool size); ``None`` where it recorded none."""
    folder = Path(config.out) if getattr(config, "out", None) else R.model_folder(config.results, config.model_name)
    step = {"accuracy-by-template": "accuracy"}.get(command, command)
    rec = (R.read_run(folder)["steps"].get(step) or {}).get("estimate")
    return E.Estimate.from_record(step, rec) if rec else None


def measure(code: str, argv: list[str]) -> tuple[int, float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), "ARITHMECH_PROGRESS": "0"}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, cwd=REPO)
    if r.returncode:
        raise SystemExit(f"{' '.join(argv)} failed: {r.stderr.strip().splitlines()[-2:]}")
    peak = json.loads([x for x in r.stderr.splitlines() if x.startswith("{")][-1])["peak_rss_bytes"]
    return peak, time.perf_counter() - t0


def main() -> None:
    base, _ = measure(BASELINE, [])
    runs = []
    with tempfile.TemporaryDirectory(prefix="arithmech-estimate-") as tmp:
        for argv in cases(Path(tmp)):
            argv = argv[:1] + ["--model", "embedded"] + argv[1:]
            config = config_of(argv)
            before = E.estimate(config)                      # from the config alone: the command line's check
            peak, wall = measure(WRAP, argv)
            e = recorded(config, argv[0]) or before          # the step's own, with what it read before loading
            shown = " ".join(x if not x.startswith(tmp) else "TMP" + x[len(tmp):] for x in argv)
            runs.append({"command": f"python -m arithmech {shown}", "estimate_mib": round(e.peak_bytes / E.MiB, 1),
                         "estimate_from_config_mib": round(before.peak_bytes / E.MiB, 1),
                         "measured_mib": round(peak / E.MiB, 1), "ratio": round(e.peak_bytes / peak, 3),
                         "within_25_percent": abs(e.peak_bytes / peak - 1) <= 0.25, "peak_phase": e.peak_phase,
                         "above_baseline_estimate_mib": round((e.peak_bytes - E.BASELINE) / E.MiB, 1),
                         "above_baseline_measured_mib": round((peak - E.BASELINE) / E.MiB, 1),
                         "forwards_estimated": e.forwards, "wall_s": round(wall, 1)})
            print(json.dumps(runs[-1]), flush=True)
    ratios = [r["ratio"] for r in runs]
    atomic_json(OUT, {"benchmark": "estimated vs measured peak resident memory per step (one fresh process per case)",
                      "model": "embedded", "device": "cpu", "threads": 1,
                      "baseline": {"constant_mib": round(E.BASELINE / E.MiB, 1), "measured_mib": round(base / E.MiB, 1),
                                   "how": "python with arithmech.identify.run imported, a 2-layer random Llama built, "
                                          "one forward (the constant is this measurement, made once; not fitted)"},
                      "estimate": "the one the step recorded in run.json (what it showed and checked, with what it read "
                                  "before loading); estimate_from_config_mib: the command line's check, from the "
                                  "config alone",
                      "ratio_min": min(ratios), "ratio_max": max(ratios),
                      "within_25_percent": sum(r["within_25_percent"] for r in runs), "cases": len(runs),
                      "load_average_at_end": [round(x, 2) for x in os.getloadavg()], "processor": platform.machine(),
                      "command": "OMP_NUM_THREADS=1 python benchmarks/bench_estimate.py", "runs": runs})
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
