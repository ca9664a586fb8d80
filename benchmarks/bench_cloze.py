"""Cloze scoring: the context run once and shared by the choices, against one forward per choice, side by side.

Both score the same items of a cloze set (:mod:`arithmech.evals.cloze`) on the same model in one run:

* **per choice** — the way the project scored cloze items before issue #23
  (:func:`arithmech.evals.scoring.continuation_logprobs`): every ``context + choice`` is its own row,
  rows batched by length with left padding, the whole sequence through the model and ``W_U``;
* **shared context** — :func:`arithmech.evals.cloze.choice_logprobs`: each item is one row, its context
  once and every choice after it, a mask keeping the choices apart (``W_U`` only where a score is read).

The ratio is per-choice seconds / shared-context seconds on the same items; the largest difference of the
summed log-probabilities is reported beside it (the parity test bounds it). Sets with 4 choices
(HellaSwag, MMLU) are the issue's target (≥ 3×). Writes ``benchmarks/results/cloze.json``.

    python benchmarks/bench_cloze.py --model smollm2-135m --n 64
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import torch
import transformers

from arithmech.core.atomic import atomic_json
from arithmech.core.models import load_model
from arithmech.evals import cloze
from arithmech.evals.scoring import continuation_logprobs

OUT = Path(__file__).parent / "results" / "cloze.json"


def bench(net, tok, name: str, n: int, batch_size: int) -> dict:
    items = cloze.sample(name, n, seed=1)
    flat = [(it.context, c) for it in items for c in it.choices]
    t0 = time.perf_counter()
    per, _ = continuation_logprobs(net, tok, [p for p, _ in flat], [c for _, c in flat], batch_size=batch_size)
    per_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    shared = cloze.choice_logprobs(net, tok, items, batch_size=batch_size)
    shared_s = time.perf_counter() - t0
    flat_shared = [x for row in shared for x in row]
    return {"set": name, "items": len(items), "choices": len(flat), "batch_size": batch_size,
            "per_choice_s": round(per_s, 2), "shared_context_s": round(shared_s, 2),
            "speedup": round(per_s / shared_s, 2),
            "max_abs_diff_logprob": max(abs(a - b) for a, b in zip(per, flat_shared)),
            "same_acc_norm": cloze.accuracy(items, [per[i:i + len(it.choices)] for i, it in
                                                    zip(_starts(items), items)]) == cloze.accuracy(items, shared)}


def _starts(items):
    out, k = [], 0
    for it in items:
        out.append(k)
        k += len(it.choices)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--n", type=int, default=64, help="items per set")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--sets", default="hellaswag,mmlu,arc_easy,piqa")
    a = ap.parse_args()
    net, tok, _ = load_model(a.model, attn_implementation="sdpa")
    with torch.no_grad():
        cloze.choice_logprobs(net, tok, cloze.sample("arc_easy", 4), 4)       # warm-up, not timed
        runs = [bench(net, tok, s, a.n, a.batch_size) for s in a.sets.split(",")]
    atomic_json(OUT, {"benchmark": "cloze scoring: context run once vs one forward per choice (same items, one run)",
                      "model": a.model, "dtype": "float32", "device": "cpu", "attention": "sdpa",
                      "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
                      "load_average_at_end": [round(x, 2) for x in os.getloadavg()], "processor": platform.machine(),
                      "torch": torch.__version__, "transformers": transformers.__version__,
                      "command": f"python benchmarks/bench_cloze.py --model {a.model} --n {a.n}", "runs": runs})
    for r in runs:
        print(f"{r['set']}: {r['speedup']}x ({r['per_choice_s']} s vs {r['shared_context_s']} s, "
              f"max |diff| {r['max_abs_diff_logprob']:.1e})")


if __name__ == "__main__":
    main()
