"""Identify with solved examples (``--shots K``) against zero-shot identify, per kept prompt, side by side in one run.

Few-shot prompts are longer (K examples before each query), but a weak calculator answers more of them
right. What a reader pays is the time **per kept X_r**, the prompts identify can use. Runs of ``identify`` on
the same task, seed and settings (the book's scale, ``arithmech.identify.config.BOOK_SCALE``), one after the
other in this process, **without the knockout and the transfer**: those run a fixed number of prompts per
task (``knockout_samples``), whatever the yield, so they are a cost per task, not per kept prompt (a
zero-shot top-up at a ~6 % yield made the first version of this benchmark run past 40 minutes). What is
timed is drawing, the X_r filter (answer token, greedy whole answer, X_c check) and path patching of every
head and MLP:

* ``zero-shot``: ``shots=0``;
* ``few-shot, S sets``: ``shots=K`` with S sets of examples per template, for each S of ``--example-sets``
  (default ``16 1``). With 16 sets (identify's default, what the book ships) a template's prompts cycle
  through 16 example texts, so at 512 draws hardly two prompts of one batch share a prefix, and the KV-cache
  reuse of ``arithmech.core.prefix`` has little to reuse. With one set every prompt of a template shares its
  examples, and a batch of one template runs them once. Its equality with whole runs is tested in
  ``tests/parity/core/test_prefix.py``.

``ratio = (few-shot seconds / its kept) / (zero-shot seconds / its kept)``, one per set count; issue #22 asks
for <= 1.3. Writes ``benchmarks/results/fewshot.json``.

    python benchmarks/bench_fewshot.py --model smollm2-135m --task addition --shots 4 --n-samples 512
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
from arithmech.data import shots as shots_module
from arithmech.identify.config import BOOK_SCALE
from arithmech.identify.pipeline import identify

OUT = Path(__file__).parent / "results" / "fewshot.json"
ROWS = {"on a cached prefix": 0, "whole": 0}
"""Rows of END-only forwards (predictions, patching's END caches) by how they ran, counted around
:meth:`arithmech.core.prefix.SharedPrefix.forward` (what the reuse had to work with)."""


def _counting(forward):
    def wrapped(self, ids, **kw):
        key = self.key(ids)
        ROWS["on a cached prefix" if key is not None and key in self.kv else "whole"] += ids.shape[0]
        return forward(self, ids, **kw)
    return wrapped


def one(model, tok, task: str, shots: int, n: int, seed: int, sets: int = shots_module.EXAMPLE_SETS) -> tuple[dict, object]:
    ROWS.update(dict.fromkeys(ROWS, 0))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = identify(model, tok, task, n_samples=n, seed=seed, shots=shots, example_sets=sets,
                       **{**BOOK_SCALE, "knockout": False}, transfer=False)
    s = time.perf_counter() - t0
    kept = sum(len(v) for v in res.tasks.values())
    return {"shots": shots, **({"example_sets": sets} if shots else {}), "seconds": round(s, 2), "kept": kept, "drawn": n,
            "seconds_per_kept": round(s / max(kept, 1), 4), "forward_rows": dict(ROWS),
            "phases": {k: round(v, 2) for k, v in res.timings.items()}}, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--task", default="addition")
    ap.add_argument("--shots", type=int, default=4)
    ap.add_argument("--n-samples", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--example-sets", type=int, nargs="+", default=[shots_module.EXAMPLE_SETS, 1],
                    help="sets of examples per template, one few-shot run each (default: 16 1)")
    a = ap.parse_args()
    if a.shots < 1 or any(x < 1 for x in a.example_sets) or a.n_samples < 1:
        raise SystemExit("error: --shots, --n-samples and every --example-sets must be at least 1")
    torch.manual_seed(a.seed)
    prefix.SharedPrefix.forward = _counting(prefix.SharedPrefix.forward)
    model, tok, _ = load_model(a.model, attn_implementation="sdpa")
    zero, _ = one(model, tok, a.task, 0, a.n_samples, a.seed)
    runs = {"zero-shot": zero}
    for sets in a.example_sets:
        runs[f"few-shot, {sets} set{'s' if sets > 1 else ''}"], _ = one(model, tok, a.task, a.shots, a.n_samples, a.seed, sets)
    per_kept = lambda r: r["seconds_per_kept"] / zero["seconds_per_kept"]
    out = {"model": a.model, "task": a.task, "n_samples": a.n_samples, "seed": a.seed,
           "scale": {**BOOK_SCALE, "knockout": False, "transfer": False},
           "runs": runs,
           "ratio_per_kept": {name: round(per_kept(r), 3) for name, r in runs.items() if name != "zero-shot"},
           "machine": {"cpus": os.cpu_count(), "threads": torch.get_num_threads(), "platform": platform.machine()},
           "command": f"python benchmarks/bench_fewshot.py --model {a.model} --task {a.task} --shots {a.shots} "
                      f"--n-samples {a.n_samples} --seed {a.seed} --example-sets {' '.join(map(str, a.example_sets))}"}
    atomic_json(OUT, out)
    print(json.dumps({"ratio_per_kept": out["ratio_per_kept"]}))
    for name, r in out["runs"].items():
        print(f"{name:>20}: {r['seconds']:8.1f} s, kept {r['kept']:4d} of {r['drawn']}, {r['seconds_per_kept']:.3f} s per kept, "
              f"rows on a cached prefix {r['forward_rows']['on a cached prefix']} of {sum(r['forward_rows'].values())}")


if __name__ == "__main__":
    main()
