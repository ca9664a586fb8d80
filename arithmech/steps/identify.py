"""Identify (paper §4.1, §5.1, App. B, D, E): which heads and MLPs compute the answer, and do they matter?

The step end to end, for one or several tasks::

    X_r / X_c pairs ──► keep what the model answers right ──► path patching (patching.py)
        ──► effects per task and for all tasks, with bootstrap intervals (Fig. 2, Fig. 15; effects.py)
        ──► key heads (the effect's whole 95% interval below the threshold)
        ──► knockout: reference-pool means, key vs random non-key components, sanity rows
            (knockout_run.py, knockout_means.py, knockout.py; Fig. 3)
        ──► transfer: Fig. 4's prompts and a template family not used to find the heads

>>> res = identify(model, tok, ["addition", "subtraction"], n_samples=64)
>>> res.effects.head(); res.key_heads["heads"][:3]
>>> write_results(res, "results/embedded")

``python -m arithmech identify --model embedded --task all --out results/embedded`` does the same
from the shell and writes ``effects.csv``, ``key_heads.json``, ``prompts.jsonl``, ``answer_tokens.csv``,
``knockout.csv``, ``transfer.csv``, ``heldout.json`` and ``run.json`` (atomically; same seed, same files).
The answer token is ``answer_token="last-digit"`` by default (the prompt carries the answer's leading
digits; :mod:`arithmech.data.pairs`), ``"first"`` is the paper's.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch

from arithmech.core import results as R
from arithmech.core.progress import Progress
from arithmech.core.memory import PeakMemory
from arithmech.data import pairs as D
from arithmech.data.answer_tokens import answer_token_table
from arithmech.methods.knockout import group_key, mean_activations
from arithmech.methods import knockout_run as KR
from arithmech.methods.knockout_run import KNOCKOUT_POSITIONS, describe_means, prepare_means, run_transfer, split_positions
from arithmech.methods.knockout_tables import knockout_summary, positions_table  # noqa: F401 (the step's tables)
from arithmech.methods.effects import N_BOOT, effects_frame, key_heads, ranking, studied_heads  # noqa: F401 (public names here too)
from arithmech.methods.patching import Patched, path_patch
from arithmech.methods.prepare import prepare, task_label, task_templates  # noqa: F401 (the step's samples)
from arithmech.steps.counterfactuals import counterfactual_overlap
from arithmech.steps.counterfactuals import operand_identify

OPERATIONS = ("addition", "subtraction", "multiplication", "division")
PATCHED_FIELDS = ("logit_p", "logit_o", "model_logit", "logit_std", "lse_p", "lse_o")



# --------------------------------------------------------------------------------- the pipeline
@dataclass
class IdentifyResult:
    """Everything one identify run produced; :func:`write_results` turns it into files."""

    tasks: dict[str, list[D.Sample]]
    patched: dict[str, Patched]
    effects: pd.DataFrame
    key_heads: dict
    knockout: pd.DataFrame
    means: object          # a knockout_means.PoolMeans (or a knockout.Means without a reference pool)
    info: dict
    params: dict
    transfer: pd.DataFrame | None = None
    heldout: dict | None = None
    timings: dict = field(default_factory=dict)
    evals: dict = field(default_factory=dict)      # task -> the knockout's prompts (X_r, topped up)
    memory: dict = field(default_factory=dict)     # peak RSS / CUDA bytes, see arithmech.core.memory


def identify(model, tok, tasks: Sequence | str = "all", n_samples: int = 256, seed: int = 0,
             threshold: float = -0.05, method: str = "fast", prob: bool = True, knockout: bool = True,
             knockout_samples: int = 256, n_random: int = 20, ks: Sequence[int] | None = None,
             curves_for: str = "primary", knockout_positions: str = "end", pool_size: int = 512,
             transfer: bool = True, heldout: str = "fig10", batch_size: int = 64,
             checkpoint=None, answer_token: str = "last-digit", n_boot: int = N_BOOT) -> IdentifyResult:
    """Path-patch every head and MLP on each task, rank, knock out, transfer.

    Args:
        tasks: ``"all"`` (the four operations), one task, or a list of tasks (names, template-pair
            files, template lists); each gets ``n_samples`` draws. With several tasks the rows of task
            ``"all"`` average over every sample (Fig. 2) and key heads are taken from them.
        knockout_samples: prompts per task in the knockout curves: the task's X_r, topped up with fresh
            X_r (:func:`~arithmech.methods.knockout_run.eval_samples`).
        n_random: seeded random orders per knockout curve (drawn from the non-key components).
        pool_size: X_c per template family in the reference pool of the means
            (:mod:`arithmech.methods.knockout_means`).
        n_boot: bootstrap resamples of the prompts for each effect's 95% interval (seeded by ``seed``).
        ks: numbers of heads to knock out (default :func:`~arithmech.methods.knockout.default_ks`).
        curves_for: ``"primary"``: full knockout curves (heads and MLPs) for the primary task (``"all"``
            with several tasks) and, for every other task, its key heads vs as many random heads;
            ``"each"``: full curves for every task.
        knockout_positions: ``"end"`` (mean-ablate at END, where the heads were patched; fast),
            ``"all"`` (every position; see :mod:`arithmech.methods.knockout`) or ``"both"`` (the curves at
            END, key heads vs random and the sanity rows at every position too). Transfer uses the first.
        heldout: a template family (``fig10``) for the transfer test: key heads are recomputed from the
            samples of the other templates and knocked out on fresh ``heldout`` pairs (pooled means).
        answer_token: ``"last-digit"``, ``"single-token"`` or ``"first"`` (the paper's), for every pair drawn
            here (:data:`arithmech.data.pairs.ANSWER_TOKENS`); pairs whose X_c leaves the model's answer in
            place are dropped (:func:`arithmech.methods.prepare.prepare`).
        checkpoint: a :class:`arithmech.core.checkpoints.Checkpoints` (:func:`run` passes one): each task's
            samples and patching result and each task's knockout curves are saved there when done, and
            loaded instead of recomputed when present (a re-run after an interruption continues; the
            files come out byte-identical). Progress goes to a terminal's stderr (:mod:`arithmech.core.progress`).
    """
    if method not in ("fast", "reference"):
        raise ValueError(f"method {method!r}: use 'fast' or 'reference'")
    if curves_for not in ("primary", "each"):
        raise ValueError(f"curves_for {curves_for!r}: use 'primary' or 'each'")
    positions = split_positions(knockout_positions)
    D.check_answer_token(answer_token)
    if not threshold < 0:
        raise ValueError(f"threshold {threshold}: key heads lower the answer logit; give a negative relative "
                         "change such as -0.05")
    t0 = time.time()
    mem = PeakMemory(model)
    specs = list(OPERATIONS) if tasks == "all" else ([tasks] if isinstance(tasks, str) else list(tasks))
    if not specs:
        raise ValueError("no task given: pass a task name, a template-pair file or a list of them")
    labelled = []
    for t in specs:
        label = task_label(t)
        while label in [l for l, _ in labelled]:
            label += "'"
        labelled.append((label, t))
    ck, resumed = checkpoint, []
    n_ko = (len(labelled) + (len(labelled) > 1)) if knockout else 0
    with Progress("identify", len(labelled) + n_ko + bool(transfer)) as bar:
        samples, info, patched, frames = {}, {}, {}, []
        timings = {"prepare": 0.0, "patching": 0.0}
        for i, (label, spec) in enumerate(labelled):
            got = ck.load(f"task-{i}") if ck is not None else None
            if got is not None and got["label"] == label:           # a finished task of an interrupted run
                samples[label] = [D.Sample(**r) for r in got["samples"]]
                info[label], patched[label] = got["info"], Patched(**got["patched"])
                resumed.append(label)
            else:
                t = time.time()
                samples[label], info[label] = prepare(model, tok, spec, n_samples, seed, batch_size, answer_token)
                t1 = time.time()
                ss = samples[label]
                patched[label] = path_patch(model, tok, [s.clean for s in ss], [s.corrupt for s in ss],
                                            D.answer_ids(tok, ss), method=method, prob=prob, batch_size=batch_size)
                timings["prepare"] += t1 - t
                timings["patching"] += time.time() - t1
                if ck is not None:
                    ck.save(f"task-{i}", {"label": label, "samples": [s.to_json() for s in ss], "info": info[label],
                                          "patched": {f: getattr(patched[label], f) for f in PATCHED_FIELDS}})
            frames.append(effects_frame(patched[label], label, prob, n_boot, seed))
            bar.advance(note=f"patched {label}")
        mem.mark("patching")
        if resumed:
            print(f"identify: resumed {len(resumed)} of {len(labelled)} tasks ({', '.join(resumed)}) from {ck.dir}",
                  file=sys.stderr, flush=True)
        t1 = time.time()
        primary = next(iter(samples))
        if len(samples) > 1:
            primary = "all"
            patched["all"] = concat_patched([patched[k] for k in samples])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # already warned per task
                frames.append(effects_frame(patched["all"], "all", prob, n_boot, seed))
        effects = pd.concat(frames, ignore_index=True)
        timings["patching"] += time.time() - t1
        kh = key_heads(effects, primary, threshold)
        kh["per_task"] = {t: key_heads(effects, t, threshold)["heads"] for t in samples} if len(samples) > 1 else {}
        every = [s for ss in samples.values() for s in ss]
        t2 = time.time()
        tpls = {label: None if isinstance(spec, list) and spec and isinstance(spec[0], D.Sample) else
                task_templates(spec)[1] for label, spec in labelled}
        if knockout or transfer:
            every_t = [t for label in samples for t in (tpls[label] or KR.sample_templates(samples[label]))]
            means = prepare_means(model, tok, samples, every_t + (D.select_templates(heldout) if transfer else []),
                                  pool_size, seed, batch_size, answer_token)
        else:
            means = mean_activations(model, tok, [s.corrupt for s in every], [group_key(s) for s in every], batch_size)
        timings["means"] = time.time() - t2
        ko, evals = pd.DataFrame(columns=KR.COLUMNS), {}
        if knockout:
            ko, evals = KR.knockout_tasks(model, tok, samples, tpls, means, lambda t: ranking(effects, t),
                                          lambda t: key_heads(effects, t, threshold), primary, curves_for, positions,
                                          knockout_samples, n_random, seed, ks, batch_size, ck, bar,
                                          answer_token=answer_token)
        timings["knockout"] = time.time() - t2 - timings["means"]
        mem.mark("knockout")
        res = IdentifyResult(samples, patched, effects, kh, ko, means, info, timings=timings, evals=evals, params=dict(
            tasks=list(samples), n_samples=n_samples, seed=seed, threshold=threshold, method=method, prob=prob,
            knockout_samples=knockout_samples, n_random=n_random, ks=list(ks) if ks else None, curves_for=curves_for,
            knockout_positions=knockout_positions, pool_size=pool_size, means=describe_means(means),
            answer_token=answer_token, heldout=heldout, batch_size=batch_size, n_boot=n_boot,
            key_rule="effect_hi < threshold (95% percentile bootstrap over prompts, seeded by seed)"))
        if transfer:
            t3 = time.time()
            run_transfer(res, model, tok, heldout_heads(res, heldout), heldout, n_samples, seed, batch_size)
            timings["transfer"] = time.time() - t3
            mem.mark("transfer")
            bar.advance(note="transfer")
    timings["total"] = time.time() - t0
    res.memory = mem.summary()
    return res


def concat_patched(ps: Sequence[Patched]) -> Patched:
    """The samples of several :class:`Patched` results, in order, as one."""
    cat = lambda f: None if getattr(ps[0], f) is None else torch.cat([getattr(p, f) for p in ps])
    return Patched(*(cat(f) for f in PATCHED_FIELDS))


def heldout_heads(res: IdentifyResult, heldout: str = "fig10") -> tuple[list[tuple[int, int]], str]:
    """The studied heads (:func:`~arithmech.methods.effects.studied_heads`: key heads, else the top ones)
    recomputed from the samples outside the ``heldout`` family (for the transfer test), and their source."""
    held_ids = {t.id for t in D.select_templates(heldout)}
    use = torch.tensor([s.template not in held_ids for ss in res.tasks.values() for s in ss])
    if not use.any():
        return [], "no sample outside the held-out family"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eff = effects_frame(concat_patched([res.patched[t] for t in res.tasks]).select(use), "id", False,
                            res.params["n_boot"], res.params["seed"])
    return studied_heads(eff, "id", res.params["threshold"])


# ---------------------------------------------------------------------------------------- files
def write_results(res: IdentifyResult, folder: str | Path, extra: dict | None = None, model: str | None = None) -> Path:
    """Write the run's files into ``folder`` as one set (:func:`arithmech.core.results.write_step`)."""
    files = {"effects.csv": res.effects, "key_heads.json": res.key_heads,
             "prompts.jsonl": [s for ss in res.tasks.values() for s in ss]}
    table = answer_token_table(res.info)
    if not table.empty:                                  # none for ready-made samples without template counts
        files["answer_tokens.csv"] = table
    if not res.knockout.empty:                           # none with knockout=False (no empty file)
        files["knockout.csv"] = res.knockout
    if res.transfer is not None:
        files["transfer.csv"] = res.transfer
    if res.heldout is not None:
        files["heldout.json"] = res.heldout
    record = {"parameters": {**res.params, **(extra or {})}, "samples": res.info, "versions": R.versions(),
              "wall_seconds": round(res.timings.get("total", 0.0), 2),
              "timings": {k: round(v, 2) for k, v in res.timings.items()},
              "peak_memory": res.memory or R.peak_memory()}
    return R.write_step(folder, "identify", files, record, model=model)


def run(model: str = "embedded", task="all", n_samples: int = 256, seed: int = 0, results: str | Path = "results",
        device: str = "cpu", dtype: str = "float32", threshold: float = -0.05, method: str = "fast",
        overwrite: bool = False, out: str | Path | None = None, **kw) -> IdentifyResult:
    """Load ``model``, run :func:`identify`, write the files to ``out`` (the model's folder) or else to
    ``results`` (the results root or the model's folder, see :func:`arithmech.core.results.model_folder`).

    Finished tasks are checkpointed in ``<folder>/.checkpoints/identify-<hash of the arguments>/``; a re-run
    with the same arguments after an interruption continues from there and writes the same files; the
    checkpoints are removed once the files are written."""
    from arithmech.core.models import load_model
    folder = Path(out) if out else R.model_folder(results, model)
    R.check_writable(folder, "identify", overwrite)
    if not threshold < 0:
        raise ValueError(f"--threshold {threshold}: key heads lower the answer logit; give a negative relative "
                         "change such as -0.05")
    if method not in ("fast", "reference"):
        raise ValueError(f"--method {method!r}: use fast or reference")
    D.check_answer_token(kw.get("answer_token", "last-digit"))
    if kw.get("knockout_positions", "end") not in KNOCKOUT_POSITIONS:
        raise ValueError(f"--knockout-positions {kw['knockout_positions']!r}: use one of {', '.join(KNOCKOUT_POSITIONS)}")
    for k in ("knockout_samples", "n_random", "batch_size", "pool_size", "n_boot"):
        if k in kw and not (isinstance(kw[k], int) and kw[k] >= 1):
            raise ValueError(f"{k}={kw[k]!r}: expected a whole number >= 1")
    for t in ([task] if isinstance(task, str) else task):
        if isinstance(t, str) and t != "all":
            task_templates(t)                  # a wrong task name or a missing file fails before loading
    torch.manual_seed(seed)
    random.seed(seed)
    ck = R.checkpoints(folder, "identify", dict(model=model, task=task, n_samples=n_samples, seed=seed, device=device,
                                                dtype=dtype, threshold=threshold, method=method, **kw))
    net, tok, _ = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")  # no attention weights needed
    res = identify(net, tok, task, n_samples=n_samples, seed=seed, threshold=threshold, method=method, checkpoint=ck,
                   **kw)
    write_results(res, folder, extra={"model": model, "task": task, "device": device, "dtype": dtype}, model=model)
    ck.clear()
    res.params["out"] = str(folder)
    return res


# ------------------------------------------------------------------------------------------ CLI
def _cli(a: argparse.Namespace) -> None:
    res = run(model=a.model, task=a.task, n_samples=a.n_samples, seed=a.seed, results=a.results, out=a.out,
              device=a.device, dtype=a.dtype, threshold=a.threshold, method=a.method, overwrite=a.overwrite,
              knockout=not a.no_knockout, knockout_samples=a.knockout_samples, n_random=a.random_seeds,
              curves_for=a.curves, knockout_positions=a.knockout_positions, prob=not a.no_prob,
              batch_size=a.batch_size, pool_size=a.pool_size, answer_token=a.answer_token, n_boot=a.n_boot)
    kh = res.key_heads
    names = ", ".join(f"{h['name']} ({h['effect']:+.1%})" for h in kh["heads"][:10]) or "none"
    print("samples kept (X_r): " + ", ".join(f"{t} {i['n_kept']}/{i['n_drawn']}" for t, i in res.info.items()))
    print(f"key heads of {kh['task']} (95% interval of the effect below {kh['threshold']:+.0%}): {names}")
    files = sorted(R.read_run(res.params["out"])["steps"]["identify"]["files"])
    print(f"wrote {', '.join(files)} and run.json to {res.params['out']}")


def add_cli(subparsers, name: str = "identify") -> None:
    from arithmech.core.inputs import common_arguments
    from arithmech.core.inputs import POSITIVE
    s = subparsers.add_parser("identify", help="path patching of every head and MLP, key heads, knockout (§4.1, §5.1)")
    common_arguments(s, n_samples=256)
    s.add_argument("--task", default="all", help="addition, subtraction, multiplication, division, all (the four), "
                   "fig8, fig10, exponentiation, or a template-pair file (.json / .jsonl)")
    s.add_argument("--out", default=None, help="the model's results folder (same as --results DIR)")
    s.add_argument("--threshold", type=float, default=-0.05, help="key heads: the effect's whole 95%% bootstrap interval below this (paper: mean below -0.05)")
    s.add_argument("--n-boot", type=POSITIVE, default=N_BOOT, help="bootstrap resamples of the prompts per interval")
    s.add_argument("--method", default="fast", choices=["fast", "reference"])
    s.add_argument("--knockout-samples", type=POSITIVE, default=256,
                   help="prompts per task in the knockout curves (the task's X_r topped up with fresh X_r)")
    s.add_argument("--random-seeds", type=POSITIVE, default=20, help="random-rank orders (non-key components only)")
    s.add_argument("--pool-size", type=POSITIVE, default=512, help="X_c per template family in the reference pool of the means")
    s.add_argument("--curves", default="primary", choices=["primary", "each"],
                   help="full knockout curves for the primary task only (default) or for each task")
    s.add_argument("--knockout-positions", default="end", choices=list(KNOCKOUT_POSITIONS),
                   help="mean-ablate at END only (where heads were patched; fast), at every position, or both")
    s.add_argument("--answer-token", default="last-digit", choices=list(D.ANSWER_TOKENS),
                   help="last-digit: the prompt carries the answer's leading digits, the answer token is its last "
                   "digit (default); single-token: only one-token answers; first: the paper's first answer token")
    s.add_argument("--no-knockout", action="store_true", help="skip the knockout curves")
    s.add_argument("--no-prob", action="store_true",
                   help="skip P({C}) (saves a full-vocabulary unembedding per patched run on large vocabularies)")
    s.add_argument("--batch-size", type=POSITIVE, default=64)
    s.set_defaults(func=_cli)


# -------------------------------------------------------------------- the appendix's results files
BOOK_IDENTIFY = dict(task="all", n_samples=512, knockout_samples=128, pool_size=128, knockout_positions="both",
                     prob=False)
"""The book's identify scale for a 135M model on 2 cores: 512 pairs per operation (SmolLM2 answers about
1 in 6 right on the last digit), 128 knockout prompts, a pool of 128 X_c per family, knockout at END and
at every position; no P({C}) columns (its full-vocabulary softmax per patched row is ~40% of the patching
time; the accuracy table has p({C})). ``identify``'s command defaults are 256 prompts and 512 X_c."""


def identify_record(seed: int = 0, device: str = "cpu", dtype: str = "float32", **params) -> dict:
    """The parameters :func:`ensure_identify` asks of a recorded identify run before reusing it: the book's
    scale, ``params``, and every default of :func:`arithmech.steps.identify.identify` that changes the files
    (a run made with another answer token or threshold is never reused)."""
    import inspect
    from arithmech.steps.identify import identify
    defaults = {k: v.default for k, v in inspect.signature(identify).parameters.items()
                if k in ("threshold", "method", "n_random", "ks", "curves_for", "heldout", "answer_token", "n_boot")}
    return {**defaults, **BOOK_IDENTIFY, **params, "seed": seed, "device": device, "dtype": dtype}


def ensure_identify(model: str, results: str | Path = "results", recompute: bool = False, device: str = "cpu",
                    dtype: str = "float32", seed: int = 0, operand_task: str = "addition", **params) -> dict:
    """The identify step of ``model`` as the Identify chapter and ``python -m arithmech identify`` run it
    (:func:`arithmech.steps.identify.run`, :data:`BOOK_IDENTIFY` updated by ``params``), computed only
    when the model's folder holds no identify run made with these parameters; then the operand
    counterfactual of ``operand_task`` (``folder/operand/``) and ``counterfactual_overlap.json``.

    Returns ``{"operator": identify's files (+ "run": its run.json record), "operand": {"effects"},
    "overlap"}``."""
    want = {**BOOK_IDENTIFY, **params, "seed": seed}
    folder = R.model_folder(results, model)
    fresh = recompute or not R.made_with(folder, "identify", identify_record(seed, device, dtype, **params))
    if fresh:
        run(model=model, results=results, device=device, dtype=dtype, overwrite=True, **want)
    if fresh or not R.exists(folder / "operand", "effects.csv") or not R.exists(folder, "counterfactual_overlap.json"):
        from arithmech.core.models import load_model
        net, tok, _ = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")
        res = operand_identify(net, tok, operand_task, want["n_samples"], seed, knockout=False, prob=False)
        write_results(res, folder / "operand", extra={"counterfactual": "operand"}, model=model)
        R.write_step(folder, "counterfactuals", {"counterfactual_overlap.json": counterfactual_overlap(
            R.read(folder, "effects.csv"), res.effects, operand_task)}, {"operand_task": operand_task})
    out = {"operator": R.read_step(folder, "identify"), "operand": {"effects": R.read(folder / "operand", "effects.csv")},
           "overlap": R.read(folder, "counterfactual_overlap.json")}
    out["operator"]["run"] = R.read_run(folder)["steps"]["identify"]
    return out
