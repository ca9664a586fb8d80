"""Precise vs full SFT: train samples/s and peak memory, same model, batch and Trainer settings, one run.

    python benchmarks/bench_finetune.py                          # embedded model + a bigger random Llama
    python benchmarks/bench_finetune.py --models embedded --steps 8
    python benchmarks/bench_finetune.py --models random-16x512 --device cuda

Each (model, mode) runs in a fresh subprocess, so the peak-memory numbers do not inherit the
allocator state of the previous run. Both modes get the same model weights (seed), the same
batches and :func:`arithmech.finetune.runner.training_args`; samples/s is the steady state (first optimizer
step excluded). Heads: the embedded model's top-k from ``results/embedded/key_heads.json`` when it
exists, else (and for random models) the paper's LLaMA2-7B key heads (Table 4, ours) scaled to the
model's layers and heads, so the lowest trained layer sits at the same relative depth (11/32).
Beside each measured ratio, :func:`compute_ratio` gives the FLOP ceiling for that model and lowest
trained layer. Writes ``benchmarks/results/finetune.json``.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "finetune.json"


def scaled_paper_heads(n_layers: int, n_heads: int, k: int) -> list[tuple[int, int]]:
    """The paper's LLaMA2-7B key heads (32 layers x 32 heads) mapped onto an ``n_layers x n_heads`` model."""
    from arithmech.experiments.paper import KEY_HEADS
    out = []
    for l, h in KEY_HEADS["table4_ours"] + KEY_HEADS["table4_gsm8k"]:
        x = (l * n_layers // 32, h * n_heads // 32)
        if x not in out:
            out.append(x)
    return out[:k]


def build(model: str, device: str, seed: int):
    """``(model, rows, heads)``: the network, training rows and the heads precise SFT tunes."""
    from arithmech.core.results import model_folder
    from arithmech.finetune.runner import ranked_components, tokenize_pairs, train_pairs
    from arithmech.core.models import load_model
    torch.manual_seed(seed)
    if model.startswith("random-"):
        from transformers import LlamaConfig, LlamaForCausalLM
        L, d = map(int, model[len("random-"):].split("x"))
        cfg = LlamaConfig(vocab_size=16000, hidden_size=d, intermediate_size=int(d * 2.6875), num_hidden_layers=L,
                          num_attention_heads=d // 64, num_key_value_heads=d // 64, max_position_embeddings=256)
        cfg._attn_implementation = "sdpa"
        net = LlamaForCausalLM(cfg).to(device).eval().requires_grad_(False)
        g = torch.Generator().manual_seed(seed)
        rows = [{"input_ids": (x := torch.randint(4, 16000, (64,), generator=g).tolist()), "labels": x}
                for _ in range(512)]
        return net, rows, scaled_paper_heads(L, d // 64, k=8)
    net, tok, geo = load_model(model, device=device, attn_implementation="sdpa")
    rows = tokenize_pairs(tok, train_pairs("embedded", seed, n=512))
    try:
        heads, _ = ranked_components(model_folder(ROOT / "results", model))
        heads = heads[:8]
    except FileNotFoundError:
        heads = scaled_paper_heads(geo.n_layers, geo.n_heads, k=8)
    return net, rows, heads


def worker(model: str, mode: str, steps: int, batch: int, device: str, seed: int) -> dict:
    """One (model, mode) measurement, in this process."""
    from arithmech.finetune.adapter import HeadSpec
    from arithmech.finetune.runner import make_trainer, train_measured, training_args
    net, rows, heads = build(model, device, seed)
    spec = HeadSpec(heads=tuple(heads)) if mode == "precise" else None
    with tempfile.TemporaryDirectory() as tmp:
        args = training_args(tmp, lr=1e-4, batch_size=batch, micro_batch_size=batch, max_steps=steps, warmup=0.0,
                             seed=seed, device=device, logging_steps=10**6)
        net.train()
        trainer = make_trainer(net, mode, args, rows, _Tok(), spec)
        tuned = sum(p.numel() for p in net.parameters() if p.requires_grad)
        r = train_measured(trainer, device)
    lowest = min(l for l, _ in heads)
    return {"predicted_compute_ratio": round(_ratio_of(net, lowest), 2), "samples_per_second": r["samples_per_second"], "peak_memory": r["peak_memory"], "steps": r["steps"],
            "tuned_parameters": tuned, "total_parameters": sum(p.numel() for p in net.parameters()),
            "heads": [list(h) for h in heads], "lowest_trained_layer": lowest}


def compute_ratio(n_layers: int, d_model: int, n_heads: int, n_kv: int, head_dim: int, d_ff: int, vocab: int,
                  lowest_layer: int) -> float:
    """Full-over-precise FLOPs per training token, the ceiling of the samples/s ratio from compute alone.

    Per token, a layer's forward costs ``f = 2 (d·H·dh + 2 d·KV·dh + H·dh·d + 3 d·d_ff)`` and the
    unembedding ``u = 2 d V`` (attention scores and norms left out). Full SFT: forward plus a
    backward that computes input and weight gradients, ``3 (L f + u)``. Precise SFT: the same forward,
    then input gradients only, through the unembedding and the layers from the lowest trained one up
    (the slices' weight gradients are negligible): ``L f + 2 u + (L - lowest) f``. Optimizer steps are
    left out. LLaMA2-7B with the paper's lowest key-head layer 11 gives 1.80: the paper's 3.3x on
    8 A100s also holds the memory and communication that full SFT of 7B parameters costs.
    """
    f = 2 * (d_model * n_heads * head_dim + 2 * d_model * n_kv * head_dim + n_heads * head_dim * d_model
             + 3 * d_model * d_ff)
    u = 2 * d_model * vocab
    L = n_layers
    return 3 * (L * f + u) / (L * f + 2 * u + (L - lowest_layer) * f)


def _ratio_of(net, lowest: int) -> float:
    c = net.config
    hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    return compute_ratio(c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads, hd,
                         c.intermediate_size, c.vocab_size, lowest)


class _Tok:
    pad_token_id = 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="embedded,random-16x512")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    p.add_argument("--worker", nargs=2, metavar=("MODEL", "MODE"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.worker:
        print("RESULT " + json.dumps(worker(*a.worker, a.steps, a.batch, a.device, a.seed)))
        return
    t0, runs = time.time(), []
    for model in a.models.split(","):
        res = {}
        for mode in ("full", "precise"):
            cmd = [sys.executable, __file__, "--worker", model, mode, "--steps", str(a.steps), "--batch", str(a.batch),
                   "--device", a.device, "--seed", str(a.seed), "--threads", str(a.threads)]
            out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            line = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
            if out.returncode or not line:
                raise RuntimeError(f"{model} {mode} failed:\n{out.stderr[-3000:]}")
            res[mode] = json.loads(line[0][len("RESULT "):])
        f, pr = res["full"], res["precise"]
        runs.append({"model": model, "batch": a.batch, "steps": a.steps, "full": f, "precise": pr,
                     "speedup_samples_per_second": round(pr["samples_per_second"] / f["samples_per_second"], 2),
                     "predicted_compute_ratio": pr["predicted_compute_ratio"],
                     "peak_memory_ratio_full_over_precise": round(
                         f["peak_memory"]["peak_bytes"] / max(pr["peak_memory"]["peak_bytes"], 1), 2),
                     "tuned_parameter_fraction": round(pr["tuned_parameters"] / pr["total_parameters"], 5)})
        print(f"{model}: precise {pr['samples_per_second']:.1f} vs full {f['samples_per_second']:.1f} samples/s "
              f"({runs[-1]['speedup_samples_per_second']}x); peak memory {pr['peak_memory']['peak_bytes'] / 2**20:.0f} "
              f"vs {f['peak_memory']['peak_bytes'] / 2**20:.0f} MiB", flush=True)
    import transformers
    report = {"benchmark": "precise vs full SFT, same model, batch and Trainer settings", "device": a.device,
              "torch_threads": torch.get_num_threads(), "cpu": platform.processor() or platform.machine(),
              "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
              "date": time.strftime("%Y-%m-%d %H:%M"), "wall_s": round(time.time() - t0, 1), "runs": runs,
              "paper": "LLaMA2-7B on 8xA100: 50 vs 15 samples/s (3.3x); LLaMA2-13B: 34 vs 8 (4.3x)",
              "predicted_compute_ratio_llama2_7b": round(compute_ratio(32, 4096, 32, 32, 128, 11008, 32000, 11), 2),
              "note": "predicted_compute_ratio: full-over-precise FLOPs per token (compute_ratio), the most a "
                      "samples/s ratio can reach from compute alone when neither mode is memory-bound"}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=2))
    tmp.replace(OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
