"""Precise SFT (cached prefix and plain) vs full SFT: train samples/s, peak memory, optimizer state,
same model, rows, batch and Trainer settings, side by side in one run.

    python benchmarks/bench_finetune.py                          # SmolLM2-135M + a random 16-layer Llama
    python benchmarks/bench_finetune.py --models embedded --n-train 64 --epochs 3
    python benchmarks/bench_finetune.py --models smollm2-135m --heads smollm2-135m=22.8,27.4,18.5,16.7
    python benchmarks/bench_finetune.py --models random-16x512 --device cuda

Three arms per model: ``full`` (every parameter), ``precise`` (head slices, plain forward) and
``precise-cached`` (head slices, the frozen layers below the lowest trained one run once per row and
cached, :mod:`arithmech.finetune.prefix`). Each arm trains ``--epochs`` (default 3) over the same
``--n-train`` rows; samples/s is ``rows x epochs / train_runtime`` (the whole run, epoch 1's prefix
computation included) and also the steady state (first optimizer step excluded).

Each (model, mode) runs in a fresh subprocess, so the peak-memory numbers do not inherit the
allocator state of the previous run. Both modes get the same model weights (seed), the same
batches and :func:`arithmech.finetune.runner.training_args`; samples/s is the steady state (first optimizer
step excluded). Heads: the embedded model's top-k from ``results/embedded/key_heads.json`` when it
exists, else (and for random models) the paper's LLaMA2-7B key heads (Table 4, ours) scaled to the
model's layers and heads, so the lowest trained layer sits at the same relative depth (11/32).
``--heads MODEL=L.H,...`` names the heads for one model (e.g. Table 1's ranked top-8 on SmolLM2).
Beside each measured ratio, :func:`compute_ratio` gives the FLOP ceiling for that model and lowest
trained layer (``cached=True``: the bottom layers' forward left out too).
Writes ``benchmarks/results/finetune.json``.
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

from arithmech.core.atomic import atomic_json

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "finetune.json"


def scaled_paper_heads(n_layers: int, n_heads: int, k: int) -> list[tuple[int, int]]:
    """The paper's LLaMA2-7B key heads (32 layers x 32 heads) mapped onto an ``n_layers x n_heads`` model."""
    from arithmech.paper import KEY_HEADS
    out = []
    for l, h in KEY_HEADS["table4_ours"] + KEY_HEADS["table4_gsm8k"]:
        x = (l * n_layers // 32, h * n_heads // 32)
        if x not in out:
            out.append(x)
    return out[:k]


def build(model: str, device: str, seed: int, heads: list[tuple[int, int]] | None = None):
    """``(model, rows, heads)``: the network, 512 training rows and the heads precise SFT tunes."""
    from arithmech.core.models import load_model
    from arithmech.core.results import model_folder
    from arithmech.finetune.data import tokenize_pairs, train_pairs
    from arithmech.identify.result import read_ranking
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
        return net, rows, heads or scaled_paper_heads(L, d // 64, k=8)
    net, tok, geo = load_model(model, device=device, attn_implementation="sdpa")
    rows = tokenize_pairs(tok, train_pairs("embedded", seed, n=512))
    if heads:
        return net, rows, heads
    try:
        heads, _ = read_ranking(model_folder(ROOT / "results", model))
        heads = heads[:8]
    except FileNotFoundError:
        heads = scaled_paper_heads(geo.n_layers, geo.n_heads, k=8)
    return net, rows, heads


def worker(model: str, mode: str, n_train: int, epochs: float, batch: int, device: str, seed: int,
           heads: list[tuple[int, int]] | None = None) -> dict:
    """One (model, mode) measurement, in this process; ``mode``: full | precise | precise-cached."""
    from arithmech.finetune.adapter import HeadSpec
    from arithmech.finetune.runner import make_trainer, train_measured, training_args
    net, rows, heads = build(model, device, seed, heads)
    rows = rows[:n_train]
    spec = HeadSpec(heads=tuple(heads)) if mode != "full" else None
    with tempfile.TemporaryDirectory() as tmp:
        args = training_args(tmp, lr=1e-4, batch_size=batch, micro_batch_size=batch, epochs=epochs, warmup=0.0,
                             seed=seed, device=device, logging_steps=10**6)
        net.train()
        trainer = make_trainer(net, "full" if mode == "full" else "precise", args, rows, _Tok(), spec,
                               cache_prefix=mode == "precise-cached" if mode != "full" else None)
        tuned = sum(p.numel() for p in net.parameters() if p.requires_grad)
        r = train_measured(trainer, device)
        opt_bytes = sum(t.numel() * t.element_size() for st in trainer.optimizer.state.values()
                        for t in st.values() if torch.is_tensor(t) and t.dim() > 0)
        cache = getattr(trainer, "prefix", None)
    lowest = min(l for l, _ in heads)
    seqs = [len(r["input_ids"]) for r in rows]
    return {"predicted_compute_ratio": round(_ratio_of(net, lowest, cached=mode == "precise-cached"), 2),
            "samples_per_second": round(len(rows) * epochs / r["runtime_s"], 3),
            "steady_samples_per_second": r["samples_per_second"], "runtime_s": r["runtime_s"],
            "peak_memory": r["peak_memory"], "steps": r["steps"], "n_train": len(rows), "epochs": epochs,
            "mean_tokens_per_row": round(sum(seqs) / len(seqs), 1), "train_loss": r["train_loss"],
            "tuned_parameters": tuned, "total_parameters": sum(p.numel() for p in net.parameters()),
            "optimizer_state_bytes": opt_bytes,
            "optimizer_state_bytes_per_tuned_parameter": round(opt_bytes / tuned, 2),
            "prefix_cache": None if cache is None else {"rows": len(cache), "computed": cache.computed,
                                                        "bytes": cache.nbytes()},
            "heads": [list(h) for h in heads], "lowest_trained_layer": lowest}


def compute_ratio(n_layers: int,  # noqa: PLR0913 (a model's sizes, one by one)
                  d_model: int, n_heads: int, n_kv: int, head_dim: int, d_ff: int, vocab: int,
                  lowest_layer: int, cached: bool = False) -> float:
    """Full-over-precise FLOPs per training token, the ceiling of the samples/s ratio from compute alone.

    Per token, a layer's forward costs ``f = 2 (d·H·dh + 2 d·KV·dh + H·dh·d + 3 d·d_ff)`` and the
    unembedding ``u = 2 d V`` (attention scores and norms left out). Full SFT: forward plus a
    backward that computes input and weight gradients, ``3 (L f + u)``. Precise SFT: the same forward,
    then input gradients only, through the unembedding and the layers from the lowest trained one up
    (the slices' weight gradients are negligible): ``L f + 2 u + (L - lowest) f``. Optimizer steps are
    left out. LLaMA2-7B with the paper's lowest key-head layer 11 gives 1.80: the paper's 3.3x on
    8 A100s also holds the memory and communication that full SFT of 7B parameters costs.
    ``cached``: the bottom ``lowest`` layers' forward is cached (every epoch after the first), so precise
    costs ``2 (L - lowest) f + 2 u`` (LLaMA2-7B, lowest 11: 2.26; SmolLM2-135M, lowest 16: 2.59, its
    49k-token unembedding is as costly as 8 of its layers, so 3x is above the FLOP ceiling on that model).
    """
    f = 2 * (d_model * n_heads * head_dim + 2 * d_model * n_kv * head_dim + n_heads * head_dim * d_model
             + 3 * d_model * d_ff)
    u = 2 * d_model * vocab
    L = n_layers
    fwd = (L - lowest_layer) * f if cached else L * f
    return 3 * (L * f + u) / (fwd + 2 * u + (L - lowest_layer) * f)


def _ratio_of(net, lowest: int, cached: bool = False) -> float:
    c = net.config
    hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    return compute_ratio(c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads, hd,
                         c.intermediate_size, c.vocab_size, lowest, cached)


class _Tok:
    pad_token_id = 0


MODES = ("full", "precise", "precise-cached")


def _heads_arg(items: list[str]) -> dict[str, list[tuple[int, int]]]:
    out = {}
    for item in items:
        model, _, spec = item.partition("=")
        out[model] = [tuple(map(int, h.split("."))) for h in spec.split(",")]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="smollm2-135m,random-16x512")
    p.add_argument("--n-train", type=int, default=64)
    p.add_argument("--epochs", type=float, default=3)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    p.add_argument("--heads", action="append", default=[], help="MODEL=L.H,L.H,... (repeatable)")
    p.add_argument("--worker", nargs=2, metavar=("MODEL", "MODE"), help=argparse.SUPPRESS)
    a = p.parse_args()
    heads = _heads_arg(a.heads)
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.worker:
        print("RESULT " + json.dumps(worker(*a.worker, a.n_train, a.epochs, a.batch, a.device, a.seed,
                                            heads.get(a.worker[0]))))
        return
    t0, runs = time.time(), []
    for model in a.models.split(","):
        res = {}
        for mode in MODES:
            cmd = [sys.executable, __file__, "--worker", model, mode, "--n-train", str(a.n_train),
                   "--epochs", str(a.epochs), "--batch", str(a.batch), "--device", a.device, "--seed", str(a.seed),
                   "--threads", str(a.threads)] + [x for h in a.heads for x in ("--heads", h)]
            out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            line = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
            if out.returncode or not line:
                raise RuntimeError(f"{model} {mode} failed:\n{out.stderr[-3000:]}")
            res[mode] = json.loads(line[0][len("RESULT "):])
            print(f"  {model} {mode}: {res[mode]['samples_per_second']:.2f} samples/s", flush=True)
        f, pr, pc = res["full"], res["precise"], res["precise-cached"]
        sps = lambda r: r["samples_per_second"]
        runs.append({"model": model, "batch": a.batch, "n_train": a.n_train, "epochs": a.epochs, **res,
                     "speedup_cached_over_full": round(sps(pc) / sps(f), 2),
                     "speedup_plain_over_full": round(sps(pr) / sps(f), 2),
                     "speedup_cached_over_plain": round(sps(pc) / sps(pr), 2),
                     "predicted_compute_ratio": {"plain": pr["predicted_compute_ratio"],
                                                 "cached": pc["predicted_compute_ratio"]},
                     "peak_memory_ratio_full_over_cached": round(
                         f["peak_memory"]["peak_bytes"] / max(pc["peak_memory"]["peak_bytes"], 1), 2),
                     "optimizer_state_ratio_full_over_precise": round(
                         f["optimizer_state_bytes"] / max(pc["optimizer_state_bytes"], 1), 1),
                     "tuned_parameter_fraction": round(pr["tuned_parameters"] / pr["total_parameters"], 5)})
        print(f"{model}: precise cached {sps(pc):.1f}, plain {sps(pr):.1f}, full {sps(f):.1f} samples/s "
              f"(cached/full {runs[-1]['speedup_cached_over_full']}x); peak memory "
              f"{pc['peak_memory']['peak_bytes'] / 2**20:.0f} / {pr['peak_memory']['peak_bytes'] / 2**20:.0f} / "
              f"{f['peak_memory']['peak_bytes'] / 2**20:.0f} MiB", flush=True)
    import transformers
    report = {"benchmark": "precise SFT (cached prefix, plain) vs full SFT, same model, rows, batch and Trainer "
                           "settings, 3 arms side by side", "device": a.device,
              "command": "python benchmarks/bench_finetune.py " + " ".join(sys.argv[1:]),
              "torch_threads": torch.get_num_threads(), "cpu": platform.processor() or platform.machine(),
              "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
              "date": time.strftime("%Y-%m-%d %H:%M"), "wall_s": round(time.time() - t0, 1), "runs": runs,
              "paper": "LLaMA2-7B on 8xA100: 50 vs 15 samples/s (3.3x); LLaMA2-13B: 34 vs 8 (4.3x)",
              "predicted_compute_ratio_llama2_7b": round(compute_ratio(32, 4096, 32, 32, 128, 11008, 32000, 11), 2),
              "predicted_compute_ratio_llama2_7b_cached": round(
                  compute_ratio(32, 4096, 32, 32, 128, 11008, 32000, 11, cached=True), 2),
              "note": "predicted_compute_ratio: full-over-precise FLOPs per token (compute_ratio), the most a "
                      "samples/s ratio can reach from compute alone when neither mode is memory-bound"}
    atomic_json(OUT, report)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
