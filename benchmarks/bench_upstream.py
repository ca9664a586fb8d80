"""Upstream path patching (head → head), fast vs the literal hooked reference, side by side in one run.

Both compute, on the same samples, the effect of every earlier sender along the path into the top-``k``
receivers' q at END and k and v at END and at the operand and operator positions
(``arithmech.methods.upstream``, ``arithmech.methods.upstream_reference``). The fast method runs
the whole scan; the reference (one forward per sender, then one per sender × receiver × path) runs on
a seeded subset of ``--ref-senders`` senders when given, spread over the layers (the layer-major list of
every sender cut into that many equal runs, one seeded draw from each; the reference is 4 forwards per
sender and 9 per sender and later receiver, and the full scan on SmolLM2 takes hours), and its time is **extrapolated** linearly
to every sender, per hooked forward:
``reference_full_s = reference_subset_s × forwards(all) / forwards(subset)``. The largest difference
between the two methods is taken over the subset. Writes ``benchmarks/results/upstream.json``.

The samples (a seeded subset of identify's ``prompts.jsonl``) and the receivers are those of the ``beyond``
step and chapter with the same ``--n-samples``, ``--receivers`` and ``--seed``.

    python benchmarks/bench_upstream.py --model smollm2-135m --results <identify folder> --n-samples 128 --ref-senders 12
    python benchmarks/bench_upstream.py --model embedded --results <identify folder> --n-samples 32
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
from pathlib import Path

import torch

from arithmech.core import results as R
from arithmech.core.atomic import atomic_json
from arithmech.core.models import load_model
from arithmech.data.batches import answer_ids
from arithmech.identify.result import ranked_inputs
from arithmech.methods import upstream as U
from arithmech.methods import upstream_reference as UR
from arithmech.methods.patch_inputs import Inputs
from arithmech.methods.patching import end_cache, split_cache

OUT = Path(__file__).parent / "results" / "upstream.json"


def forwards(senders, receivers) -> int:
    """Hooked forwards of the reference per batch: four per sender (END and the three role positions), nine per
    (sender, later receiver) (q, k, v at END; k, v at each role position)."""
    return sum(4 + 9 * sum(s[0] < r[0] for r in receivers) for s in senders)


def spread(every: list, k: int | None, seed: int) -> list:
    """``k`` of the layer-major ``every``, one seeded draw from each of ``k`` equal consecutive runs (all when
    ``k`` is None or not smaller), so the subset covers early and late layers alike."""
    if not k or k >= len(every):
        return list(every)
    rng, bounds = random.Random(seed), [round(i * len(every) / k) for i in range(k + 1)]
    return [every[rng.randrange(a, b)] for a, b in zip(bounds, bounds[1:])]


def bench(model_name: str, folder: Path, n_samples: int, k: int, ref_senders: int | None, seed: int) -> dict:
    effects, kh, samples = ranked_inputs(folder, n_samples, seed)
    net, tok, _ = load_model(model_name, attn_implementation="sdpa")
    ans = answer_ids(tok, samples)
    clean_p, corrupt_p = [s.clean for s in samples], [s.corrupt for s in samples]
    t0 = time.perf_counter()
    c, x = split_cache(end_cache(net, tok, clean_p + corrupt_p, torch.cat([ans, ans])), len(samples))
    cache_s = time.perf_counter() - t0
    recs, source = U.receivers_from(effects, kh, k)
    t0 = time.perf_counter()
    roles = [s.positions for s in samples]
    pairs_in = Inputs(clean_p, c, x, ans, corrupt_prompts=corrupt_p, roles=roles)
    fast = U.upstream_fast(net, tok, pairs_in, recs)
    fast_s = time.perf_counter() - t0
    cfg = net.config
    every = sorted({s for r in recs for s in U.senders_of(net, r)})
    subset = spread(every, ref_senders, seed)
    t0 = time.perf_counter()
    ref = UR.upstream_reference(net, tok, pairs_in, recs, senders=subset)
    ref_sub_s = time.perf_counter() - t0
    ref_full_s = ref_sub_s * forwards(every, recs) / forwards(subset, recs)
    diff = max(float((fast[r] - ref[r]).nan_to_num(0.0, 0.0, 0.0).abs().max() if not ref[r].isnan().all() else 0.0)
               for r in recs)
    compared = sum(int((~ref[r].isnan()).sum()) for r in recs)
    return {"model": model_name, "layers": cfg.num_hidden_layers, "heads": cfg.num_attention_heads,
            "n_samples": len(samples), "receivers": [f"{l}.{h}" for l, h in recs], "receivers_from": source,
            "senders_all": len(every), "senders_reference": len(subset),
            "reference_senders": [f"MLP {l}" if h == cfg.num_attention_heads else f"{l}.{h}" for l, h in subset],
            "forwards_all": forwards(every, recs), "forwards_reference": forwards(subset, recs),
            "extrapolation": "reference_full_s = reference_subset_s x forwards_all / forwards_reference (hooked "
                             "forwards per batch: 4 per sender + 9 per sender x later receiver)",
            "reference_extrapolated": len(subset) < len(every),
            "cache_s": round(cache_s, 3), "fast_s": round(fast_s, 3), "reference_subset_s": round(ref_sub_s, 3),
            "reference_full_s": round(ref_full_s, 1), "speedup": round(ref_full_s / fast_s, 1),
            "max_abs_logit_diff": diff, "values_compared": compared,
            "max_abs_effect_fast": max(float(fast[r].abs().max()) for r in recs)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--results", required=True, help="the model's results folder with identify's files")
    ap.add_argument("--n-samples", type=int, default=128)
    ap.add_argument("--receivers", type=int, default=5)
    ap.add_argument("--ref-senders", type=int, default=None, help="time the reference on this many senders")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    run = bench(a.model, R.model_folder(a.results, a.model), a.n_samples, a.receivers, a.ref_senders, a.seed)
    print(json.dumps(run), flush=True)
    out = Path(a.out)
    old = json.loads(out.read_text()) if out.exists() else {}
    runs = [r for r in old.get("runs", []) if r.get("model") != a.model] + [run]
    import transformers
    result = {"benchmark": "upstream path patching, fast vs literal reference (same samples, same caches, one run)",
              "dtype": "float32", "device": "cpu", "attention": "sdpa", "torch_threads": torch.get_num_threads(),
              "cpu_count": os.cpu_count(), "load_average_at_end": [round(v, 2) for v in os.getloadavg()],
              "processor": platform.processor() or platform.machine(), "torch": torch.__version__,
              "transformers": transformers.__version__, "runs": runs}
    atomic_json(out, result)
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
