"""Identify with solved examples (``--shots K``) against zero-shot identify, per kept prompt, side by side in one run.

Few-shot prompts are longer (K examples before each query), but a weak calculator answers more of them
right, and every prompt of a template shares its examples, which run once per batch as a KV cache
(``arithmech.core.prefix``). What a reader pays is the time **per kept X_r**, the prompts identify can
use. Three runs of ``identify`` on the same task, seed and settings (the book's scale,
``arithmech.steps.config.BOOK_SCALE``), one after the other in this process:

* ``zero-shot``: ``shots=0``;
* ``few-shot``: ``shots=K`` with the shared prefix cached (what identify does);
* ``few-shot, no cache``: ``shots=K`` with every prompt run whole (``prefix.enabled(False)``).

``ratio = (few-shot seconds / its kept) / (zero-shot seconds / its kept)``; issue #22 asks for <= 1.3.
The two few-shot runs must give the same effects (their largest difference is recorded). Writes
``benchmarks/results/fewshot.json``.

    python benchmarks/bench_fewshot.py --model smollm2-135m --task addition --shots 4 --n-samples 128
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path

import torch

from arithmech.core import prefix
from arithmech.core.atomic import atomic_json
from arithmech.core.models import load_model
from arithmech.steps.config import BOOK_SCALE
from arithmech.steps.identify import identify

OUT = Path(__file__).parent / "results" / "fewshot.json"


def one(model, tok, task: str, shots: int, n: int, seed: int) -> tuple[dict, object]:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = identify(model, tok, task, n_samples=n, seed=seed, shots=shots, transfer=False, **BOOK_SCALE)
    s = time.perf_counter() - t0
    kept = sum(len(v) for v in res.tasks.values())
    return {"shots": shots, "seconds": round(s, 2), "kept": kept, "drawn": n,
            "seconds_per_kept": round(s / max(kept, 1), 4),
            "phases": {k: round(v, 2) for k, v in res.timings.items()}}, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--task", default="addition")
    ap.add_argument("--shots", type=int, default=4)
    ap.add_argument("--n-samples", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    model, tok, _ = load_model(a.model, attn_implementation="sdpa")
    zero, _ = one(model, tok, a.task, 0, a.n_samples, a.seed)
    few, res_few = one(model, tok, a.task, a.shots, a.n_samples, a.seed)
    with prefix.enabled(False):
        whole, res_whole = one(model, tok, a.task, a.shots, a.n_samples, a.seed)
    diff = float((res_few.effects.effect - res_whole.effects.effect).abs().max())
    out = {"model": a.model, "task": a.task, "n_samples": a.n_samples, "seed": a.seed, "scale": BOOK_SCALE,
           "runs": {"zero-shot": zero, "few-shot": few, "few-shot, no cache": whole},
           "ratio_per_kept": round(few["seconds_per_kept"] / zero["seconds_per_kept"], 3),
           "cache_speedup": round(whole["seconds"] / few["seconds"], 3),
           "max_effect_difference_cache_vs_whole": diff,
           "machine": {"cpus": os.cpu_count(), "threads": torch.get_num_threads(), "platform": platform.machine()},
           "command": f"python benchmarks/bench_fewshot.py --model {a.model} --task {a.task} --shots {a.shots} "
                      f"--n-samples {a.n_samples} --seed {a.seed}"}
    atomic_json(OUT, out)
    print(json.dumps({k: out[k] for k in ("ratio_per_kept", "cache_speedup", "max_effect_difference_cache_vs_whole")}))
    for name, r in out["runs"].items():
        print(f"{name:>20}: {r['seconds']:8.1f} s, kept {r['kept']:4d} of {r['drawn']}, {r['seconds_per_kept']:.3f} s per kept")


if __name__ == "__main__":
    main()
