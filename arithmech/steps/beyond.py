"""Beyond direct effects: the ``beyond`` step (``python -m arithmech beyond``), after identify.

On a seeded subset of identify's reference samples (``prompts.jsonl``), with the same END caches:

* exact path patching, EAP and EAP-IG of every head and MLP side by side, timed in one run, and the
  largest misses of EAP re-computed with norms / MLP gates frozen (:mod:`arithmech.methods.attribution`)
  → ``eap.csv``;
* upstream path patching of every earlier sender into the q, k and v of the top-``k`` receivers (key
  heads, or the ``k`` heads of most negative effect when none passes the threshold)
  (:mod:`arithmech.methods.upstream`) → ``upstream.csv``;
* the total effect of the counterfactual (``X_c`` instead of ``X_r``) on the answer logit, the
  methods' wall times and the agreement summary → the ``beyond`` record of ``run.json``.

>>> r = run(model="embedded", results="results", receivers=5, ig_steps=8, n_samples=64)
>>> r["eap"].head(); r["upstream"].head(); r["summary"]["eap"]["spearman_all"]
"""
from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from arithmech.core import results as R

from arithmech.data import pairs
from arithmech.data import pairs as D
from arithmech.methods import attribution as A
from arithmech.methods import upstream as U
from arithmech.methods.patching import end_cache, split_cache


def check_args(receivers: int, ig_steps: int, n_samples: int, n_misses: int = 5) -> None:
    """Bad numbers fail here, before any file is read or model loaded."""
    for name, v in (("receivers", receivers), ("ig_steps", ig_steps), ("n_samples", n_samples)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}={v!r}: need a positive integer")
    if not isinstance(n_misses, int) or n_misses < 0:
        raise ValueError(f"n_misses={n_misses!r}: need a non-negative integer")


def inputs(folder: Path, n_samples: int, seed: int) -> tuple[pd.DataFrame, dict, list[D.Sample]]:
    """identify's ``effects.csv``, ``key_heads.json`` and a seeded subset of ``n_samples`` of its prompts,
    read and checked through the results contract."""
    effects = R.read(folder, "effects.csv")
    kh = R.read(folder, "key_heads.json")
    samples = pairs.samples(folder)
    if not samples:
        raise ValueError(f"{folder / 'prompts.jsonl'} holds no reference prompts: nothing to patch")
    rng = np.random.default_rng(seed)
    return effects, kh, [samples[i] for i in sorted(rng.permutation(len(samples))[:n_samples])]


def beyond(model, tok, samples: list[D.Sample], effects: pd.DataFrame, key_heads: dict, receivers: int = 5,
           ig_steps: int = 8, n_misses: int = 5, batch_size: int = 64) -> dict:
    """The step's computations on loaded ``model`` (see the module docstring). Returns ``eap``,
    ``upstream`` (DataFrames), ``misses``, ``summary`` (with ``times``) and ``receivers``."""
    t0 = time.perf_counter()
    ans = D.answer_ids(tok, samples)
    clean_p, corrupt_p = [s.clean for s in samples], [s.corrupt for s in samples]
    clean, corrupt = split_cache(end_cache(model, tok, clean_p + corrupt_p, torch.cat([ans, ans]), batch_size),
                                 len(samples))
    times = {"caches_s": time.perf_counter() - t0}
    cmp = A.compare(model, clean, corrupt, ans, ig_steps, key_heads.get("threshold", -0.05))
    times.update(cmp["times"])
    misses = A.diagnose(model, clean, corrupt, ans, cmp["frame"], n_misses) if n_misses else pd.DataFrame()
    eap = cmp["frame"]
    if not misses.empty:
        eap = eap.merge(misses[["layer", "head", "miss", "miss_norm_frozen", "miss_gate_frozen", "miss_both_frozen",
                                "cause"]], on=["layer", "head"], how="left")
    recs, source = U.receivers_from(effects, key_heads, receivers)
    t1 = time.perf_counter()
    up = U.upstream_fast(model, tok, clean_p, clean, corrupt, ans, recs, batch_size) if recs else {}
    times["upstream_s"] = time.perf_counter() - t1
    H = model.config.num_attention_heads
    logit_o = clean.answer_logit
    upf = U.frame(up, logit_o, H) if up else pd.DataFrame(columns=["receiver", "path", "sender", "effect"])
    total = (corrupt.answer_logit - logit_o) / logit_o
    n = len(samples)
    summary = {**cmp["summary"], "n_samples": n, "ig_steps": ig_steps,
               "receivers": [f"{l}.{h}" for l, h in recs],
               "receivers_from": source,
               "n_key_heads_identify": len(key_heads.get("heads", [])),
               "total_effect": {"mean": float(total.mean()), "se": float(total.std() / np.sqrt(n)) if n > 1 else None,
                                "definition": "(logit of {C} on X_c - on X_r) / on X_r, mean over samples"},
               "times": {k: round(v, 3) for k, v in times.items()}}
    return {"eap": eap, "upstream": upf, "misses": misses, "summary": summary, "receivers": recs}


def run(model: str = "embedded", results: str | Path = "results", receivers: int = 5, ig_steps: int = 8,
        n_samples: int = 128, seed: int = 0, device: str = "cpu", dtype: str = "float32", n_misses: int = 5,
        batch_size: int = 64, overwrite: bool = False) -> dict:
    """The step end to end: checks, reads identify's files, loads the model, computes, writes ``eap.csv``
    and ``upstream.csv`` through :func:`arithmech.core.results.write_step`. Returns :func:`beyond`'s dict
    plus ``folder``."""

    from arithmech.core.models import load_model
    check_args(receivers, ig_steps, n_samples, n_misses)
    folder = R.model_folder(results, model)
    R.check_writable(folder, "beyond", overwrite)
    effects, kh, samples = inputs(folder, n_samples, seed)
    t0 = time.time()
    torch.manual_seed(seed)
    net, tok, _ = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = beyond(net, tok, samples, effects, kh, receivers, ig_steps, n_misses, batch_size)
    record = {"parameters": dict(model=model, receivers=receivers, ig_steps=ig_steps, n_samples=n_samples, seed=seed,
                                 device=device, dtype=dtype, n_misses=n_misses, batch_size=batch_size),
              "summary": out["summary"],
              "versions": R.versions(),
              "wall_s": round(time.time() - t0, 2), "torch_threads": torch.get_num_threads(),
              "peak_memory": R.peak_memory()}
    R.write_step(folder, "beyond", {"eap.csv": out["eap"], "upstream.csv": out["upstream"]}, record, model=model)
    return {**out, "folder": folder, "model": net, "tok": tok}


def ensure(model: str = "embedded", results: str | Path = "results", recompute: bool = False,
           identify_samples: int = 512, **params) -> dict:
    """The step's results for ``model``: read from its folder when ``run.json`` records a ``beyond`` run made
    from the identify files now there (their recorded sha256 match) with ``params`` (:func:`run`'s arguments: ``receivers``, ``ig_steps``, ``n_samples``, ``seed``, ``device``,
    ``dtype``, ...), else computed by :func:`run`. Identify's files come first: the Identify chapter's (or
    the SmolLM2 appendix's, which ship with the repository); where none exist, the book's identify run is
    made (:func:`arithmech.steps.identify.ensure_identify`, ``identify_samples`` pairs per operation).

    Returns ``{"model", "summary", "eap", "upstream", "n_layers"}``."""
    folder = R.model_folder(results, model)
    if not R.exists(folder, "key_heads.json"):
        from arithmech.steps.identify import ensure_identify
        ensure_identify(model, results, device=params.get("device", "cpu"), dtype=params.get("dtype", "float32"),
                        seed=params.get("seed", 0), n_samples=identify_samples)
    if recompute or not R.made_with(folder, "beyond", {"model": model, **params}):   # incl. identify re-run since
        run(model=model, results=results, overwrite=True, **params)
    eap = R.read(folder, "eap.csv")                              # checked read; summary() would read it again
    return {"model": model, "summary": R.read_run(folder)["steps"]["beyond"]["summary"], "eap": eap,
            "upstream": R.read(folder, "upstream.csv"),
            "n_layers": int(eap["layer"].max()) + 1}


def summary(folder: str | Path) -> dict:
    """The ``beyond`` record's summary from ``run.json`` (after the files were checked by :func:`read`)."""
    R.read(folder, "eap.csv")
    rec = R.read_run(folder)["steps"].get("beyond")
    if rec is None:
        raise FileNotFoundError(f"{folder} has no beyond step in run.json: run `python -m arithmech beyond` first")
    return rec["summary"]


# ------------------------------------------------------------------------------------------ CLI
def _cli(a) -> None:
    out = run(model=a.model, results=a.results, receivers=a.receivers, ig_steps=a.ig_steps, n_samples=a.n_samples,
              seed=a.seed, device=a.device, dtype=a.dtype, n_misses=a.n_misses, overwrite=a.overwrite)
    s = out["summary"]
    t = s["times"]
    print(f"{s['n_samples']} samples, {s['n_senders']} senders: exact {t['exact_s']:.2f} s, EAP {t['eap_s']:.2f} s, "
          f"EAP-IG ({s['ig_steps']} steps) {t['eap_ig_s']:.2f} s (caches {t['caches_s']:.2f} s)")
    for m in ("eap", "eap_ig"):
        print(f"{m}: Spearman {s[m]['spearman_all']:+.3f} (heads {s[m]['spearman_heads']:+.3f}), top-{s['top']} "
              f"overlap {s[m]['top_overlap']}, key heads {s[m]['key_overlap']}/{s[m]['key_union']}")
    print(f"upstream into {', '.join(s['receivers']) or 'no receiver'} ({s['receivers_from']}): {t['upstream_s']:.2f} s")
    print(f"wrote eap.csv, upstream.csv to {out['folder']}")


def add_cli(subparsers, name: str = "beyond") -> None:
    from arithmech.core.inputs import common_arguments
    from arithmech.core.inputs import POSITIVE
    from arithmech.core.inputs import NON_NEGATIVE
    s = subparsers.add_parser(name, help="EAP / EAP-IG vs exact path patching, upstream head→head patching; "
                              "reads identify's files")
    common_arguments(s, n_samples=128)
    s.add_argument("--receivers", type=POSITIVE, default=5, help="top-k receivers (key heads, else top heads by effect)")
    s.add_argument("--ig-steps", type=POSITIVE, default=8, help="EAP-IG steps along the X_r → X_c path")
    s.add_argument("--n-misses", type=NON_NEGATIVE, default=5, help="EAP's largest misses to diagnose")
    s.set_defaults(func=_cli)
