"""The CUDA code paths, checked against the CPU on the embedded model (run only where a GPU is lent).

CI has no GPU, so nothing else exercises ``--device cuda``. This script, run once on a lent GPU machine,
records in ``benchmarks/results/gpu_check.json``:

* **identify parity** — path patching of every head and MLP (``identify`` without knockout, 64 pairs per
  operation, seed 0) on the CPU and on CUDA in float32: the largest absolute difference of the per-head
  effect, whether the key heads and the top-10 ranking agree; and CUDA in bfloat16 (the dtype the appendix
  recommends for 7B+ models): the Spearman correlation of its effects with float32's and its key heads;
* **precise SFT on CUDA** — one short run of ``finetune --mode precise --heads top-8`` (float32, then with
  ``--bf16`` autocast): it trains, the untouched weights stay bit-identical (checked by the runner's own
  record: ``tuned_parameters``), its loss and its measured CUDA peak (30 steps, 40 items per benchmark).

Usage (from the repository root, on the GPU machine; writes only under ``--out``)::

    python benchmarks/gpu_check.py --out benchmarks/results/gpu_check.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

from arithmech.core import results as R
from arithmech.identify import run as identify
from arithmech.identify.config import Identify


def run_identify(root: Path, device: str, dtype: str) -> tuple[pd.DataFrame, list[str], float]:
    folder = root / f"{device}-{dtype}"
    t0 = time.time()
    identify.run(Identify(model_name="embedded", n_samples=64, seed=0, results=str(folder), device=device,
                          dtype=dtype, knockout=False, transfer=False))
    model_dir = R.model_folder(folder, "embedded")          # where identify wrote (the same resolution)
    eff, kh = R.read(model_dir, "effects.csv"), R.read(model_dir, "key_heads.json")
    return eff, [f"{h['layer']}.{h['head']}" for h in kh["heads"]], round(time.time() - t0, 1)


def heads_of(eff: pd.DataFrame) -> pd.DataFrame:
    e = eff[(eff.task == "all") & (eff["head"].astype(str) != "mlp")]
    return e.set_index(["layer", "head"]).sort_index()


def finetune(root: Path, extra: list[str], device: str = "cuda") -> dict:
    out = root / f"{device}-float32"
    cmd = [sys.executable, "-m", "arithmech", "finetune", "--model", "embedded", "--results", str(out),
           "--mode", "precise", "--heads", "top-8", "--train-data", "embedded", "--benchmarks", "toy",
           "--max-steps", "30", "--limit", "40", "--device", device, "--tag", "gpu" + ("-bf16" if extra else ""), *extra]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        return {"command": " ".join(cmd[1:]), "rc": p.returncode, "stderr": p.stderr[-1500:]}
    folder = R.model_folder(out, "embedded")
    rec = json.loads(next((folder / "finetune").glob(f"precise-gpu{'-bf16' if extra else ''}.json")).read_text())
    tr = rec["train"]
    return {"command": "python -m arithmech " + " ".join(cmd[3:]).replace(str(root), "<tmp>"), "rc": 0,
            "wall_s": round(time.time() - t0, 1), "steps": tr["steps"], "train_loss": tr["train_loss"],
            "first_loss": (tr.get("loss_history") or [[None, None]])[0][1],
            "tuned_parameters": rec["tuned_parameters"], "total_parameters": rec["total_parameters"],
            "peak_memory": tr.get("peak_memory")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device here: this check runs only on a GPU machine", file=sys.stderr)
        sys.exit(2)
    import transformers
    out: dict = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                 "transformers": transformers.__version__,
                 "command": "python benchmarks/gpu_check.py --out benchmarks/results/gpu_check.json"}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runs = {k: run_identify(root, *k.split("-")) for k in ("cpu-float32", "cuda-float32", "cuda-bfloat16")}
        cpu, gpu, bf = (heads_of(runs[k][0]) for k in runs)
        col = "effect"
        diff = (cpu[col] - gpu[col]).abs()
        out["identify"] = {
            "n_samples": 64, "seconds": {k: v[2] for k, v in runs.items()},
            "key_heads": {k: v[1] for k, v in runs.items()},
            "cpu_vs_cuda_float32": {"max_abs_effect_diff": float(diff.max()), "n_heads": int(len(diff)),
                                    "same_key_heads": runs["cpu-float32"][1] == runs["cuda-float32"][1],
                                    "same_top10": list(cpu[col].nsmallest(10).index) == list(gpu[col].nsmallest(10).index)},
            "cuda_bfloat16_vs_float32": {"spearman": float(gpu[col].corr(bf[col], method="spearman")),
                                         "max_abs_effect_diff": float((gpu[col] - bf[col]).abs().max()),
                                         "same_key_heads": runs["cuda-float32"][1] == runs["cuda-bfloat16"][1]}}
        save(a.out, out)                                           # what is done so far survives a timeout
        out["precise_sft_cuda"] = {"float32": finetune(root, [])}
        save(a.out, out)
        out["precise_sft_cuda"]["bf16_autocast"] = finetune(root, ["--bf16"])
    save(a.out, out)
    print(json.dumps(out, indent=1, default=str))


def save(path: str, out: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(out, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
