"""Fast vs reference path patching, side by side on the same samples, in one run.

Both implementations scan every head and every MLP (``L * (H + 1)`` senders) on the same
(X_r, X_c) pairs:

* reference — Algorithm 1 literally: one hooked forward of all samples per sender;
* fast — the default: all senders × samples from the clean END residual stream in one batch.

Each needs END caches of X_r and X_c first (the fast path caches both in one forward). Timed: end
to end (``path_patch``: caches + scan) and the scan alone (from the same caches). Writes
``benchmarks/results/patching.json`` with the wall times, both speedups and the largest difference
between the two methods' patched logits and effects.

    python benchmarks/bench_patching.py                      # embedded model + random 16x16x1024 Llama
    python benchmarks/bench_patching.py --n-embedded 64 --n-big 8

The headline is the scan ratio (the patching itself, which is what the two methods do
differently). The end-to-end ratio has a ceiling that no scan speed can lift: both methods first
run the clean and the counterfactual prompts once (two forward passes), and the reference then runs
one forward per sender, so it is about ``(senders + 2) / 2`` at most (batching shifts it a
little) — 28 for the embedded model's 54 senders, 137 for 272. The results file writes that ceiling beside each measured ratio.

Expected ratio of the scans: per sender the reference runs ``seq`` tokens through every layer, the
fast path one row through the MLPs after the sender, so (without per-forward overhead) the ratio is
about ``2 * seq * (attention + MLP cost) / MLP cost``: it grows with the prompt length.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
import warnings
from pathlib import Path

import torch

from arithmech.core.atomic import atomic_json
from arithmech.core.models import load_model
from arithmech.data import pairs as D
from arithmech.data.batches import answer_ids
from arithmech.evals.scoring import filter_correct
from arithmech.methods.patch_inputs import Inputs
from arithmech.methods.patching import end_cache, path_patch, path_patch_fast, path_patch_reference

OUT = Path(__file__).parent / "results" / "patching.json"


def random_llama(vocab: int, n_layers: int = 16, n_heads: int = 16, d_model: int = 1024, d_ff: int = 2816,
                 seed: int = 0):
    """A random fp32 Llama of the given shape (LLaMA-2's MLP ratio 2.6875 by default)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=d_model, intermediate_size=d_ff, num_hidden_layers=n_layers,
                      num_attention_heads=n_heads, num_key_value_heads=n_heads, max_position_embeddings=128)
    cfg._attn_implementation = "sdpa"           # as `python -m arithmech identify` loads models
    return LlamaForCausalLM(cfg).eval().requires_grad_(False)


def bench(model, tok, samples, label: str) -> dict:
    """Time both methods on ``samples``: end to end (``path_patch``: caches + scan) and the scan alone."""
    clean, corrupt = [s.clean for s in samples], [s.corrupt for s in samples]
    ans = answer_ids(tok, samples)
    t = {}
    t0 = time.perf_counter()
    fast = path_patch(model, tok, clean, corrupt, ans, method="fast")
    t["fast_end_to_end_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    c, x = end_cache(model, tok, clean, ans), end_cache(model, tok, corrupt)
    t["cache_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    path_patch_fast(model, c, x, ans)
    t["fast_scan_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = path_patch_reference(model, tok, Inputs(clean, c, x, ans))
    t["reference_scan_s"] = time.perf_counter() - t0
    t["reference_end_to_end_s"] = t["cache_s"] + t["reference_scan_s"]
    stable = c.answer_logit.cpu() > 0.1 * c.logit_std.cpu()          # effects are ratios: compare where defined
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d_eff = (fast.relative_change() - ref.relative_change())[stable].abs().max() if stable.any() else None
    cfg = model.config
    lens = [len(tok(p)["input_ids"]) for p in clean]
    return {
        "model": label, "layers": cfg.num_hidden_layers, "heads": cfg.num_attention_heads,
        "d_model": cfg.hidden_size, "d_ff": cfg.intermediate_size,
        "senders": cfg.num_hidden_layers * (cfg.num_attention_heads + 1), "n_samples": len(samples),
        "mean_tokens": round(sum(lens) / len(lens), 2), "length_groups": len(set(lens)),
        **{k: round(v, 3) for k, v in t.items()},
        "speedup_end_to_end": round(t["reference_end_to_end_s"] / t["fast_end_to_end_s"], 1),
        "speedup_scan": round(t["reference_scan_s"] / t["fast_scan_s"], 1),
        "end_to_end_ceiling": round((cfg.num_hidden_layers * (cfg.num_attention_heads + 1) + 2) / 2, 1),
        "max_abs_logit_diff": float((fast.logit_p - ref.logit_p).abs().max()),
        "max_abs_effect_diff": None if d_eff is None else float(d_eff), "effect_samples_compared": int(stable.sum()),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-embedded", type=int, default=32, help="samples on the embedded model")
    ap.add_argument("--n-big", type=int, default=4, help="samples on the random 16x16x1024 Llama")
    ap.add_argument("--task", default="all", help="templates the pairs come from (identify's default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    model, tok, _ = load_model("embedded", attn_implementation="sdpa")
    runs = []
    tpls = D.select_templates(a.task)
    tpls = random.Random(a.seed).sample(tpls, len(tpls))              # a seeded mix of templates and lengths
    samples, _ = D.make_pairs(tok, tpls, n=a.n_embedded, seed=a.seed, draw=D.Draw("first", 0, 1))
    samples, _ = filter_correct(model, tok, samples)
    runs.append(bench(model, tok, samples, "embedded"))
    print(json.dumps(runs[-1]), flush=True)
    big = random_llama(len(tok))
    samples, _ = D.make_pairs(tok, tpls, n=a.n_big, seed=a.seed, draw=D.Draw("first", 0, 1))
    runs.append(bench(big, tok, samples, "random-llama-16x16x1024"))
    print(json.dumps(runs[-1]), flush=True)
    import transformers
    result = {"benchmark": "path patching, fast vs reference (same samples, same caches, one run)",
              "task": a.task, "seed": a.seed, "dtype": "float32", "device": "cpu", "attention": "sdpa",
              "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
              "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
              "processor": platform.processor() or platform.machine(), "torch": torch.__version__,
              "transformers": transformers.__version__, "runs": runs}
    out = Path(a.out)
    atomic_json(out, result)
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
