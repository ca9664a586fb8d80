"""Issue #39's identify command before and after the change, side by side in one run of this script.

    python benchmarks/bench_identify.py                  # before = 93d3567, SmolLM2, the issue's command
    python benchmarks/bench_identify.py --before REV --model embedded

The code before is checked out into a temporary ``git worktree`` of ``--before``; the code after is this tree.
Three runs of ``python -m arithmech identify --model M --task addition --n-samples 128 --seed 0``, one after
the other on the same machine: **before**, **after, cold** (an empty reference-pool cache: the pool is built
and stored) and **after, warm** (the pool of the cold run read back, as any later run with the same model,
templates and pool parameters reads it). Each run's wall time is measured around its process, its phases are
read from its ``run.json``; ``knockout.csv``, ``effects.csv`` and ``key_heads.json`` of the three runs are
compared byte for byte (the cache must not move a number). The model's dequantized folder stays shared (the
temporary cache folder links to it), so no run pays the GGUF conversion.
Writes ``benchmarks/results/identify_speed.json``.
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
OUT = ROOT / "benchmarks" / "results" / "identify_speed.json"
COMPARED = ("knockout.csv", "effects.csv", "key_heads.json")


def run(tree: Path, model: str, out: Path, cache: Path) -> dict:
    cmd = [sys.executable, "-m", "arithmech", "identify", "--model", model, "--task", "addition",
           "--n-samples", "128", "--seed", "0", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(tree), "ARITHMECH_CACHE": str(cache), "OMP_NUM_THREADS": "2"}
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    step = json.loads((out / "run.json").read_text())["steps"]["identify"]
    return {"wall_s": round(wall, 1), "phases_s": step["timings"],
            "peak_rss_bytes": step.get("peak_memory", {}).get("peak_rss_bytes")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default="93d3567", help="the revision before the change")
    ap.add_argument("--model", default="smollm2-135m")
    a = ap.parse_args(argv)
    from arithmech.core.names import CACHE_DIR
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        old = tmp / "before-tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(old), a.before], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def fresh(name: str) -> Path:          # an empty pool cache; the model's dequantized files shared
                cache = tmp / name
                cache.mkdir()
                for entry in (CACHE_DIR.iterdir() if CACHE_DIR.exists() else []):
                    if entry.name != "pool":
                        (cache / entry.name).symlink_to(entry)
                return cache
            # the before tree gets its own cache: a before tree that caches pools must not warm the after's
            res = {"before": run(old, a.model, tmp / "before", fresh("cache-before"))}
            cache = fresh("cache")
            res |= {"after_cold": run(ROOT, a.model, tmp / "cold", cache),
                    "pool_cache_bytes": sum(f.stat().st_size for f in (cache / "pool").glob("*.pt")),
                    "after_warm": run(ROOT, a.model, tmp / "warm", cache)}
            same = {f: len({(tmp / r / f).read_bytes() for r in ("before", "cold", "warm")}) == 1 for f in COMPARED}
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, check=True)
    size = res.pop("pool_cache_bytes")
    b = res["before"]
    doc = {"command": f"python -m arithmech identify --model {a.model} --task addition --n-samples 128 --seed 0 "
                      "--out DIR", "before": a.before, "runs": res,
           "ratio_cold": round(b["wall_s"] / res["after_cold"]["wall_s"], 2),
           "ratio_warm": round(b["wall_s"] / res["after_warm"]["wall_s"], 2),
           "byte_identical": same, "pool_cache_bytes": size,
           "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "date": time.strftime("%Y-%m-%d")}}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc, indent=1))
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
