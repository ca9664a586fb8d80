"""Beyond direct effects: the ``beyond`` step (``python -m arithmech beyond``), after identify.

On a seeded subset of identify's reference samples (``prompts.jsonl``), with the same END caches:

* exact path patching, EAP and EAP-IG of every head and MLP side by side, timed in one run, and the
  largest misses of EAP re-computed with norms / MLP gates frozen (:mod:`arithmech.methods.attribution`)
  → ``eap.csv``;
* upstream path patching of every earlier sender into the top-``k`` receivers (key heads, or the ``k`` heads
  of most negative effect when none passes the threshold): their query at END and their keys and values at
  END and at the operand and operator positions (:mod:`arithmech.methods.upstream`) → ``upstream.csv``;
* the total effect of the counterfactual (``X_c`` instead of ``X_r``) on the answer logit, the
  methods' wall times and the agreement summary → the ``beyond`` record of ``run.json``.

>>> r = run(Config(model_name="embedded", results="results", receivers=5, ig_steps=8, n_samples=64))
>>> r.eap.head(); r.upstream.head(); r.summary["eap"]["spearman_all"]
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
import torch

from arithmech.circuits.config import Beyond as Config
from arithmech.circuits.result import BeyondResult as Result  # Result, read: the step protocol
from arithmech.circuits.result import read_beyond as read
from arithmech.core import admission, provenance, results
from arithmech.core.models import geometry, load_model
from arithmech.core.progress import Progress, announce
from arithmech.data import pairs as pairs_module
from arithmech.data.batches import answer_ids
from arithmech.data.splits import resampling_units
from arithmech.identify.config import Identify as IdentifyConfig
from arithmech.identify.result import bootstrap_unit, operations, ranked_inputs
from arithmech.methods import attribution, upstream
from arithmech.methods.patch_inputs import Inputs
from arithmech.methods.patching import end_cache, split_cache
from arithmech.paper import KEY_THRESHOLD


def check_args(receivers: int, ig_steps: int, n_samples: int, n_misses: int = 5) -> None:
    """Bad numbers fail here, before any file is read or model loaded."""
    for name, v in (("receivers", receivers), ("ig_steps", ig_steps), ("n_samples", n_samples)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}={v!r}: need a positive integer")
    if not isinstance(n_misses, int) or n_misses < 0:
        raise ValueError(f"n_misses={n_misses!r}: need a non-negative integer")


def beyond(
    model,
    tok,
    samples: list[pairs_module.Sample],
    effects: pd.DataFrame,
    key_heads: dict,
    config: Config,
    bootstrap: str,
) -> dict:
    """The step's computations on loaded ``model`` (see the module docstring), with ``config``'s receivers, EAP-IG
    points, misses, batch size and seed. Returns ``eap``, ``upstream`` (DataFrames), ``misses``, ``summary`` (with
    ``times``) and ``receivers``. ``bootstrap``: what the Spearman intervals resample (identify's recorded unit,
    :func:`arithmech.data.splits.resampling_units`)."""
    ig_steps, n_misses, batch_size = config.ig_steps, config.n_misses, config.batch_size
    t0 = time.perf_counter()
    ans = answer_ids(tok, samples)
    clean_p, corrupt_p = [s.clean for s in samples], [s.corrupt for s in samples]
    clean, corrupt = split_cache(
        end_cache(model, tok, clean_p + corrupt_p, torch.cat([ans, ans]), batch_size), len(samples)
    )
    times = {"caches_s": time.perf_counter() - t0}
    cmp = attribution.compare(
        model,
        clean,
        corrupt,
        ans,
        ig_steps,
        key_heads.get("threshold", KEY_THRESHOLD),
        seed=config.seed,
        clusters=resampling_units(samples, bootstrap),
    )
    times.update(cmp["times"])
    misses = attribution.diagnose(model, clean, corrupt, ans, cmp["frame"], n_misses) if n_misses else pd.DataFrame()
    eap = _with_misses(cmp["frame"], misses)
    recs, source = upstream.receivers_from(effects, key_heads, config.receivers)
    t1 = time.perf_counter()
    pairs_in = Inputs(clean_p, clean, corrupt, ans, corrupt_prompts=corrupt_p, roles=[s.positions for s in samples])
    up = upstream.upstream_fast(model, tok, pairs_in, recs, batch_size) if recs else {}
    times["upstream_s"] = time.perf_counter() - t1
    logit_o = clean.need("answer_logit")
    upf = _upstream_frame(up, logit_o, geometry(model).n_heads)
    n = len(samples)
    summary = {
        **cmp["summary"],
        "n_samples": n,
        "ig_steps": ig_steps,
        "receivers": [f"{l}.{h}" for l, h in recs],
        "receivers_from": source,
        "n_key_heads_identify": len(key_heads.get("heads", [])),
        "total_effect": _total_effect(logit_o, corrupt.need("answer_logit")),
        "times": {k: round(v, 3) for k, v in times.items()},
    }
    return {"eap": eap, "upstream": upf, "misses": misses, "summary": summary, "receivers": recs}


def _with_misses(eap: pd.DataFrame, misses: pd.DataFrame) -> pd.DataFrame:
    """EAP's rows with each head's miss diagnosis beside them (what freezing the norm, the gate or both leaves
    of the miss, and its cause), where there is one."""
    if misses.empty:
        return eap
    return eap.merge(
        misses[["layer", "head", "miss", "miss_norm_frozen", "miss_gate_frozen", "miss_both_frozen", "cause"]],
        on=["layer", "head"],
        how="left",
    )


def _upstream_frame(up: dict, logit_o, n_heads: int) -> pd.DataFrame:
    """The upstream paths' rows (:func:`upstream.frame`: relative to the answer logit ``logit_o``); none (the
    columns alone) without a receiver."""
    if up:
        return upstream.frame(up, logit_o, n_heads)
    return pd.DataFrame(columns=["receiver", "position", "path", "sender", "effect"])


def _total_effect(logit_o, logit_c) -> dict:
    """The counterfactual's total effect: the answer logit's relative change from X_r (``logit_o``) to X_c
    (``logit_c``), its mean over samples and standard error."""
    total = (logit_c - logit_o) / logit_o
    n = len(total)
    return {
        "mean": float(total.mean()),
        "se": float(total.std() / np.sqrt(n)) if n > 1 else None,
        "definition": "(logit of {C} on X_c - on X_r) / on X_r, mean over samples",
    }


def run(config: Config) -> Result:
    """The step end to end: reads identify's files, loads the model, computes, writes ``eap.csv`` and
    ``upstream.csv`` through :func:`arithmech.core.results.write_step`. Returns the :class:`Result` read back from
    them (:func:`read`)."""
    c = config
    folder = results.model_folder(c.results, c.model_name)
    results.check_writable(folder, "beyond", c.overwrite)
    ops = operations(c.operations, folder)
    effects, kh, samples = ranked_inputs(folder, c.n_samples, c.seed, ops)
    est = admission.check(c)  # refused here when it cannot fit, before the model loads
    t0 = time.time()
    torch.manual_seed(c.seed)
    announce("beyond", est.line() if est else "")
    with Progress("beyond", 1) as bar:
        model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = beyond(model, tok, samples, effects, kh, c, bootstrap_unit(folder))
        bar.advance()
    record = {
        "parameters": dict(
            model=c.model_name,
            receivers=c.receivers,
            ig_steps=c.ig_steps,
            n_samples=c.n_samples,
            seed=c.seed,
            device=c.device,
            dtype=c.dtype,
            n_misses=c.n_misses,
            batch_size=c.batch_size,
            operations=c.operations,
        ),
        "summary": {**out["summary"], "operations": ops or "all"},
        "versions": provenance.versions(),
        "wall_s": round(time.time() - t0, 2),
        "torch_threads": torch.get_num_threads(),
        "peak_memory": provenance.peak_memory(),
        "estimate": est.record() if est else None,
    }
    results.write_step(
        folder, "beyond", {"eap.csv": out["eap"], "upstream.csv": out["upstream"]}, record, model_name=c.model_name
    )
    return read(folder, c)


def needs(config: Config) -> tuple[str, IdentifyConfig]:
    """The file this step reads from identify, and the identify config (same model, seed, device) that makes it
    where it is absent (:func:`arithmech.pipeline.ensure.ensure`): the Identify chapter's, or the SmolLM2 appendix's,
    which ship with the repository, are there first."""
    return "key_heads.json", IdentifyConfig(
        model_name=config.model_name, results=config.results, seed=config.seed, device=config.device, dtype=config.dtype
    )


def summary(result: Result) -> str:
    """The command line's summary of :func:`run`'s result: timings, agreement with exact patching, receivers."""
    s = result.summary
    folder = results.model_folder(result.config.results, result.config.model_name)
    t = s["times"]
    lines = [
        f"{s['n_samples']} samples, {s['n_senders']} senders: exact {t['exact_s']:.2f} s, EAP {t['eap_s']:.2f} s, "
        f"EAP-IG ({s['ig_steps']} steps) {t['eap_ig_s']:.2f} s (caches {t['caches_s']:.2f} s)"
    ]
    lines += [
        f"{m}: Spearman {s[m]['spearman_all']:+.3f} (heads {s[m]['spearman_heads']:+.3f}), top-{s['top']} "
        f"overlap {s[m]['top_overlap']}, key heads {s[m]['key_overlap']}/{s[m]['key_union']}"
        for m in ("eap", "eap_ig")
    ]
    lines.append(
        f"upstream into {', '.join(s['receivers']) or 'no receiver'} ({s['receivers_from']}): {t['upstream_s']:.2f} s"
    )
    return "\n".join(lines + [f"wrote eap.csv, upstream.csv to {folder}"])
