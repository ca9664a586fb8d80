"""The ``faithfulness`` step (``python -m arithmech faithfulness``), after identify: does the top-n circuit
recover the counterfactual's effect when run alone? (:mod:`arithmech.methods.faithfulness`.)

Reads identify's ``effects.csv`` (the ranking of the pooled task, heads and MLPs together) and ``run.json``
(the answer-token variant, solved examples, reference-pool size, seed, bootstrap unit), then on the same model:

* draws ``n_samples`` fresh **evaluation-side** X_r of the pooled tasks' templates — problems identify never
  ranked on, the X_r rules and the X_c check passed (:func:`arithmech.methods.ablation.run.eval_samples` with
  ``heldout=True``);
* rebuilds identify's reference pool (the same templates, size and seed: the same means as its knockout);
* adds the cross-position circuit (:mod:`arithmech.methods.faithfulness_sites`): the operand-reading heads of
  analyze's ``attention_roles.csv`` at the operand positions and END, identify's key heads at END, against
  layer-matched random circuits (left out, said so in the record, where analyze has not run);
* writes ``faithfulness.csv`` (:data:`arithmech.methods.faithfulness.COLUMNS`) and the step's record (the rule's
  outcome, :func:`arithmech.methods.faithfulness.faithful_verdict`, the endpoints' mean LDs, the resample tiers,
  the cross-position heads, wall time).

>>> out = run(Config(model_name="embedded"))
>>> out.record["rule"]["holds"], out.frame.head()
"""

from __future__ import annotations

import time
import warnings

import pandas as pd
import torch

from arithmech.circuits.config import Faithfulness as Config
from arithmech.circuits.result import FaithfulnessResult as Result  # Result, read: the step protocol
from arithmech.circuits.result import read_faithfulness as read
from arithmech.core import admission, provenance, results
from arithmech.core.models import load_model
from arithmech.core.progress import Progress, announce
from arithmech.data import pairs
from arithmech.identify.config import Identify as IdentifyConfig
from arithmech.identify.result import recorded_setting
from arithmech.methods import faithfulness as faithfulness_method
from arithmech.methods import faithfulness_rule
from arithmech.methods import faithfulness_sites as sites
from arithmech.methods.ablation import run as knockout_run
from arithmech.methods.ablation.pool import pool_prompts
from arithmech.methods.ablation.pool_cache import cached_pool
from arithmech.methods.ablation.settings import Prompts
from arithmech.methods.faithfulness_lds import sourced
from arithmech.methods.faithfulness_rule import faithful_verdict
from arithmech.methods.faithfulness_settings import FaithfulnessSettings
from arithmech.methods.prepare import task_templates

TARGET, K_MAX = (
    faithfulness_rule.TARGET,
    faithfulness_rule.K_MAX,
)  # the claim's rule (arithmech.analyze.claims, circuit-faithful)


def prompts_and_pool(model, tok, p: dict, n_samples: int, batch_size: int, ranked: list):
    """``(evaluation samples, reference-pool means, pool prompts)`` for identify's parameters ``p``; the evaluation
    prompts share no problem cluster with ``ranked`` (identify's X_r, ``prompts.jsonl``)."""
    tpls = [t for task in p["pooled"] for t in task_templates(task)[1]]
    kw = dict(draw=p["draw"])
    samples = knockout_run.eval_samples(
        model, tok, tpls, ranked, Prompts(n_samples, p["seed"], p["draw"], True, batch_size)
    )
    if not samples:
        raise ValueError("no evaluation-side X_r passed the X_r rules and the X_c check: nothing to measure")
    every = [t for task in p["tasks"] for t in task_templates(task)[1]]
    every += pairs.select_templates(p["heldout"]) if p.get("transfer", True) else []  # identify's pool, as built
    pool = pool_prompts(tok, every, p["pool_size"], p["seed"], **kw)
    return samples, cached_pool(model, tok, pool, batch_size=batch_size), pool


IDENTIFY_SETTINGS = (
    "ranked_task",
    "pooled",
    "answer_token",
    "shots",
    "example_sets",
    "pool_size",
    "n_boot",
    "bootstrap",
)
"""identify's recorded settings the step reads and records beside its own."""


def _check_n_max(c: Config, effects: pd.DataFrame, task: str) -> None:
    """Refuse an ``--n-max`` over half the components: random circuits of n are drawn outside the top n."""
    n_comp = int((effects.task == task).sum())
    if c.n_max > n_comp // 2:
        raise ValueError(
            f"--n-max {c.n_max}: the model has {n_comp} components; random circuits of n are drawn "
            f"outside the top n, so --n-max is at most {n_comp // 2}"
        )


def _sites_and_settings(c: Config, roles: pd.DataFrame | None, kh: dict, p: dict) -> tuple:
    """The heads the cross-position test reads (operand-reading heads from analyze's ``roles``, the key heads), the
    settings (identify's bootstrap) and the memory estimate, refused here when the run cannot fit.

    Returns ``(reading, key, settings, estimate)``.
    """
    reading = sites.reading_heads(roles) if roles is not None else []
    key = sites.key_heads(kh, p["ranked_task"])
    settings = FaithfulnessSettings.of(c, p.get("n_boot", 1000), p.get("bootstrap") or "prompt")  # identify's
    est = admission.check(
        c, tasks=len(p["pooled"]), n_boot=p.get("n_boot", 1000), pool_size=p["pool_size"], shots=p.get("shots", 0)
    )
    return reading, key, settings, est


def _with_cross_position(frame: pd.DataFrame, info: dict, rows: list, cp: dict) -> pd.DataFrame:
    """The curves' rows with the cross-position test's (``rows``); its info (``cp``) goes to
    ``info["cross_position"]`` with the ratio of the two noising denominators on the same prompts."""
    info["cross_position"] = cp
    frame = pd.concat([frame, pd.DataFrame(rows, columns=faithfulness_method.COLUMNS)], ignore_index=True)
    cp["full_effect_vs_end"] = (cp["ld_x_r"] - cp["ld_all_ablated_mean"]) / (
        info["ld_x_r"] - info["ld_all_ablated_mean"]
    )
    return frame


def _parameters(c: Config) -> dict:
    """The step's own settings as recorded (``run.json``)."""
    return dict(
        model=c.model_name,
        n_max=c.n_max,
        n_random=c.n_random,
        n_samples=c.n_samples,
        seed=c.seed,
        device=c.device,
        dtype=c.dtype,
        batch_size=c.batch_size,
    )


def run(config: Config) -> Result:
    """The step end to end (see the module docstring). Returns the :class:`Result` read back from what it wrote
    (:func:`read`; the rule's outcome and the prompts' info are in its ``record``)."""
    c = config
    folder = results.model_folder(c.results, c.model_name)
    results.check_writable(folder, "faithfulness", c.overwrite)
    effects = results.read(folder, "effects.csv")
    ranked = pairs.samples(folder)  # identify's X_r: their problems never evaluate
    p = recorded_setting(folder)
    _check_n_max(c, effects, p["ranked_task"])  # before the model loads
    roles = results.read(folder, "attention_roles.csv") if results.exists(folder, "attention_roles.csv") else None
    kh = results.read(folder, "key_heads.json")
    reading, key, settings, est = _sites_and_settings(c, roles, kh, p)  # before the model loads
    t0 = time.time()
    torch.manual_seed(c.seed)
    announce("faithfulness", est.line() if est else "")
    with Progress("faithfulness", 1) as bar:
        model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            samples, means, pool = prompts_and_pool(model, tok, p, c.n_samples, c.batch_size, ranked)
            samples, left = sourced(tok, samples, pool, means, settings)  # the prompts every curve reads
            t1 = time.time()
            frame, info = faithfulness_method.faithfulness(
                model, tok, samples, effects, p["ranked_task"], means, pool, settings
            )
            info["left_out_no_source"] = left
            t2 = time.time()
            if roles is None:
                info["cross_position"] = "not run: no attention_roles.csv (python -m arithmech analyze first)"
            elif reading or key:
                rows, cp = sites.cross_position(model, tok, samples, means, reading, key, p["ranked_task"], settings)
                frame = _with_cross_position(frame, info, rows, cp)
            else:
                info["cross_position"] = "not run: no operand-reading head and no key head"
        bar.advance()
    rule = faithful_verdict(frame, p["ranked_task"], TARGET, K_MAX)
    wall = time.time() - t0
    record = {
        "parameters": _parameters(c),
        "identify": {k: p.get(k) for k in IDENTIFY_SETTINGS},
        "prompts": "knockout_run.eval_samples(heldout=True) over the pooled tasks' templates, seed = identify's; "
        "no problem cluster of identify's prompts.jsonl",
        "means": means.describe(),
        "info": info,
        "rule": rule,
        "wall_s": round(wall, 2),
        "timings": {
            "prompts_and_pool_s": round(t1 - t0, 2),
            "circuits_s": round(t2 - t1, 2),
            "cross_position_s": round(time.time() - t2, 2),
        },
        "torch_threads": torch.get_num_threads(),
        "versions": provenance.versions(),
        "peak_memory": provenance.peak_memory(),
        "estimate": est.record() if est else None,
    }
    results.write_step(folder, "faithfulness", {"faithfulness.csv": frame}, record, model_name=c.model_name)
    return read(folder, c)


def needs(config: Config) -> tuple[str, IdentifyConfig]:
    """The file this step reads from identify, and the identify config (same model, seed, device) that makes it
    where it is absent (:func:`arithmech.pipeline.ensure.ensure`)."""
    return "effects.csv", IdentifyConfig(
        model_name=config.model_name, results=config.results, seed=config.seed, device=config.device, dtype=config.dtype
    )


def summary(result: Result) -> str:
    """The command line's summary of :func:`run`'s result: the prompts, the verdict and its best candidate."""
    r, info = result.record["rule"], result.record["info"]
    folder = results.model_folder(result.config.results, result.config.model_name)
    b = r.get("best") or {}
    pct = lambda d: (
        f"{d['value']:.0%} [{d['lo']:.0%}, {d['hi']:.0%}], unclipped {d['raw']:.0%} (random max "
        f"{d['band_max']:.0%}, 95th {d['band_hi']:.0%})"
    )
    where = (
        ("across positions" if b.get("order") == "operands" else f"top {b.get('n')} at END") if b else "no candidate"
    )
    return "\n".join(
        [
            f"{info['n_prompts']} evaluation prompts ({info['n_clusters']} problems), {info['circuits']} circuits; "
            f"top-n of {', '.join(info['ranking'][:5])}, ...",
            f"circuit-faithful: {r['holds']}; best candidate {where} ({b.get('why', '')}): "
            + "; ".join(f"{m} {pct(b[m])}" for m in ("noising", "denoising") if m in b),
            f"wrote faithfulness.csv to {folder} in {result.record['wall_s']:.0f} s",
        ]
    )
