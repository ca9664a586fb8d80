"""Identify (paper §4.1, §5.1, App. B, D, E): which heads and MLPs compute the answer, and do they matter?

The step end to end, for one or several tasks::

    X_r / X_c pairs ──► keep what the model answers right ──► path patching (patching.py)
        ──► effects per task and for all tasks (Fig. 2, Fig. 15) ──► key heads (effect < threshold)
        ──► knockout curves, effect rank vs random rank (knockout.py, Fig. 3)
        ──► transfer: Fig. 4's prompts and a template family not used to find the heads

>>> res = identify(model, tok, ["addition", "subtraction"], n_samples=64)
>>> res.effects.head(); res.key_heads["heads"][:3]
>>> write_results(res, "results/embedded")

``python -m arithmech identify --model embedded --task all --out results/embedded`` does the same
from the shell and writes ``effects.csv``, ``key_heads.json``, ``prompts.jsonl``, ``knockout.csv``,
``transfer.csv``, ``heldout.json`` and ``run.json`` (atomically; same seed, same files).
"""
from __future__ import annotations

import argparse
import platform
import random
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch

from arithmech.core import results as R
from arithmech.data import pairs as D
from arithmech.data import templates as T
from arithmech.experiments.paper import FIG4_CASES
from arithmech.methods.knockout import (POSITIONS, Means, default_ks, group_key, heldout_drop, knockout_curve,
                       mean_activations, transfer_table)
from arithmech.methods.patching import Patched, path_patch

OPERATIONS = ("addition", "subtraction", "multiplication", "division")

# ---------------------------------------------------------------------------------- the samples
def task_templates(task) -> tuple[str, list[T.Template]]:
    """``(label, templates)`` for a task name, a template-pair file or a list of templates."""
    if isinstance(task, (list, tuple)):
        return "custom", list(task)
    task = str(task)
    if task.endswith((".json", ".jsonl")) or Path(task).is_file():
        return Path(task).stem, D.load_template_pairs(task)
    return task, D.select_templates(task)


def task_label(task) -> str:
    """A short name for a task: its name, a file's stem, the id of a single template, else ``custom``."""
    if isinstance(task, (list, tuple)) and task and isinstance(task[0], D.Sample):
        return "custom"
    if isinstance(task, (list, tuple)):
        return task[0].id if len(task) == 1 else "custom"
    return task_templates(task)[0]


def prepare(model, tok, task, n_samples: int, seed: int, batch_size: int = 64) -> tuple[list[D.Sample], dict]:
    """Draw ``n_samples`` pairs of ``task`` and keep those the model answers right (the paper's X_r).

    ``task``: an operation, ``fig8``, ``fig10``, ``exponentiation``, a template-pair file, a list of
    templates, or a list of ready :class:`~arithmech.data.pairs.Sample` (e.g. :func:`gsm8k_samples`).
    """
    if n_samples < 1:
        raise ValueError(f"n_samples={n_samples}: need at least one sample")
    if isinstance(task, list) and task and isinstance(task[0], D.Sample):
        samples, stats = task[:n_samples], D.PairStats(made=len(task[:n_samples]))
    else:
        _, tpls = task_templates(task)
        samples, stats = D.make_pairs(tok, tpls, n=n_samples, seed=seed)
    kept, acc = D.filter_correct(model, tok, samples, batch_size)
    info = {"n_drawn": len(samples), "n_kept": len(kept), "accuracy": len(kept) / len(samples),
            "redrawn": stats.redrawn, "accuracy_by_template": acc}
    if not kept:
        what = task if isinstance(task, str) else "of templates " + ", ".join(
            getattr(t, "id", getattr(t, "template", "?")) for t in task[:5])
        raise ValueError(f"the model answers none of the {len(samples)} prompts {what} right, so there "
                         "is no reference data X_r to patch; use a task the model can do (see `python -m arithmech "
                         "accuracy`) or more samples")
    return kept, info


# ------------------------------------------------------------------------------- effects & heads
def effects_frame(p: Patched, task: str, prob: bool = True) -> pd.DataFrame:
    """Mean effects over samples as rows ``task, layer, head, effect, logit_diff, prob, prob_change, n``
    (``head = "mlp"`` for MLP rows; ``prob`` = mean patched P({C}), NaN unless computed)."""
    n, L, H1 = p.logit_p.shape
    cols = {"effect": p.relative_change().mean(0), "logit_diff": p.logit_diff().mean(0)}
    if prob and p.lse_p is not None:
        cols["prob"] = p.prob().mean(0)
        cols["prob_change"] = (p.prob() - p.prob_o()[..., None]).mean(0)
    else:                                      # same columns either way; NaN = not computed
        cols["prob"] = cols["prob_change"] = torch.full((L, H1), float("nan"))
    rows = []
    for l in range(L):
        for h in range(H1):
            rows.append({"task": task, "layer": l, "head": "mlp" if h == H1 - 1 else str(h),
                         **{k: float(v[l, h]) for k, v in cols.items()}, "n": n})
    return pd.DataFrame(rows)


def ranking(effects: pd.DataFrame, task: str) -> tuple[list[tuple[int, int]], list[int]]:
    """Heads ``(layer, head)`` and MLP layers of ``task``, most negative effect first (ties: layer, head)."""
    df = effects[effects["task"] == task].sort_values(["effect", "layer", "head"], kind="stable")
    heads = [(int(l), int(h)) for l, h in zip(df["layer"], df["head"]) if h != "mlp"]
    mlps = [int(l) for l, h in zip(df["layer"], df["head"]) if h == "mlp"]
    return heads, mlps


def key_heads(effects: pd.DataFrame, task: str, threshold: float = -0.05) -> dict:
    """Key heads (and MLPs) of ``task``: effect below ``threshold`` (the paper: −5%), ranked."""
    df = effects[(effects["task"] == task) & (effects["effect"] < threshold)]
    df = df.sort_values(["effect", "layer", "head"], kind="stable")
    row = lambda r, i: {"rank": i + 1, "layer": int(r.layer), "effect": float(r.effect),
                        "logit_diff": float(r.logit_diff)}
    heads = [{**row(r, i), "head": int(r.head), "name": f"{int(r.layer)}.{int(r.head)}"}
             for i, r in enumerate(df[df["head"] != "mlp"].itertuples())]
    mlps = [row(r, i) for i, r in enumerate(df[df["head"] == "mlp"].itertuples())]
    return {"task": task, "threshold": threshold, "metric": "effect = (logit_p - logit_o) / logit_o",
            "heads": heads, "mlps": mlps}


# --------------------------------------------------------------------------------- the pipeline
@dataclass
class IdentifyResult:
    """Everything one identify run produced; :func:`write_results` turns it into files."""

    tasks: dict[str, list[D.Sample]]
    patched: dict[str, Patched]
    effects: pd.DataFrame
    key_heads: dict
    knockout: pd.DataFrame
    means: Means
    info: dict
    params: dict
    transfer: pd.DataFrame | None = None
    heldout: dict | None = None
    timings: dict = field(default_factory=dict)


def identify(model, tok, tasks: Sequence | str = "all", n_samples: int = 256, seed: int = 0,
             threshold: float = -0.05, method: str = "fast", prob: bool = True, knockout: bool = True,
             knockout_samples: int = 64, n_random: int = 3, ks: Sequence[int] | None = None,
             curves_for: str = "primary", knockout_positions: str = "end",
             transfer: bool = True, heldout: str = "fig10", batch_size: int = 64) -> IdentifyResult:
    """Path-patch every head and MLP on each task, rank, knock out, transfer.

    Args:
        tasks: ``"all"`` (the four operations), one task, or a list of tasks (names, template-pair
            files, template lists); each gets ``n_samples`` draws. With several tasks the rows of task
            ``"all"`` average over every sample (Fig. 2) and key heads are taken from them.
        knockout_samples: X_r samples per task in the knockout curves (the first ones; all if fewer).
        n_random: seeded random orders per knockout curve.
        ks: numbers of heads to knock out (default :func:`~arithmech.methods.knockout.default_ks`).
        curves_for: ``"primary"``: full knockout curves (heads and MLPs) for the primary task (``"all"``
            with several tasks) and, for every other task, its key heads vs as many random heads;
            ``"each"``: full curves for every task.
        knockout_positions: ``"end"`` (mean-ablate at END, where the heads were patched; fast) or
            ``"all"`` (every position); see :mod:`arithmech.methods.knockout`. Also used by the transfer step.
        heldout: a template family (``fig10``) for the transfer test: key heads are recomputed from the
            samples of the other templates and knocked out on fresh ``heldout`` pairs (pooled means).
    """
    if method not in ("fast", "reference"):
        raise ValueError(f"method {method!r}: use 'fast' or 'reference'")
    if curves_for not in ("primary", "each"):
        raise ValueError(f"curves_for {curves_for!r}: use 'primary' or 'each'")
    if knockout_positions not in POSITIONS:
        raise ValueError(f"knockout_positions {knockout_positions!r}: use one of {POSITIONS}")
    if not threshold < 0:
        raise ValueError(f"threshold {threshold}: key heads lower the answer logit; give a negative relative "
                         "change such as -0.05")
    t0 = time.time()
    specs = list(OPERATIONS) if tasks == "all" else ([tasks] if isinstance(tasks, str) else list(tasks))
    if not specs:
        raise ValueError("no task given: pass a task name, a template-pair file or a list of them")
    labelled = []
    for t in specs:
        label = task_label(t)
        while label in [l for l, _ in labelled]:
            label += "'"
        labelled.append((label, t))
    samples, info, patched = {}, {}, {}
    for label, spec in labelled:
        samples[label], info[label] = prepare(model, tok, spec, n_samples, seed, batch_size)
    timings = {"prepare": time.time() - t0}
    t1 = time.time()
    frames = []
    for label, ss in samples.items():
        patched[label] = path_patch(model, tok, [s.clean for s in ss], [s.corrupt for s in ss],
                                    D.answer_ids(tok, ss), method=method, prob=prob, batch_size=batch_size)
        frames.append(effects_frame(patched[label], label, prob))
    primary = next(iter(samples))
    if len(samples) > 1:
        primary = "all"
        patched["all"] = _concat([patched[k] for k in samples])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # already warned per task
            frames.append(effects_frame(patched["all"], "all", prob))
    effects = pd.concat(frames, ignore_index=True)
    timings["patching"] = time.time() - t1
    kh = key_heads(effects, primary, threshold)
    kh["per_task"] = {t: key_heads(effects, t, threshold)["heads"] for t in samples} if len(samples) > 1 else {}
    every = [s for ss in samples.values() for s in ss]
    t2 = time.time()
    means = mean_activations(model, tok, [s.corrupt for s in every], [group_key(s) for s in every], batch_size)
    cfg = model.config
    universe = [(l, h) for l in range(cfg.num_hidden_layers) for h in range(cfg.num_attention_heads)]
    curves = []
    if knockout:
        for task in list(samples) + (["all"] if len(samples) > 1 else []):
            ss = (samples[task] if task in samples else _interleave(samples.values()))[:knockout_samples]
            heads, mlps = ranking(effects, task)
            n_key = len(key_heads(effects, task, threshold)["heads"])
            if task != primary and curves_for != "each":          # key heads vs as many random ones only
                plan = [("head", heads, universe, [n_key])]
            else:
                plan = [("head", heads, universe, sorted(set(ks or default_ks(len(universe))) | {n_key})),
                        ("mlp", mlps, list(range(cfg.num_hidden_layers)), default_ks(cfg.num_hidden_layers))]
            for kind, rank, uni, kk in plan:
                df = knockout_curve(model, tok, ss, means, rank, kk, uni, kind, n_random, seed, batch_size=batch_size,
                                    positions=knockout_positions)
                curves.append(df.assign(task=task))
    ko = pd.concat(curves, ignore_index=True)[["task", "kind", "order", "seed", "k", "accuracy", "n"]] \
        if curves else pd.DataFrame(columns=["task", "kind", "order", "seed", "k", "accuracy", "n"])
    timings["knockout"] = time.time() - t2
    res = IdentifyResult(samples, patched, effects, kh, ko, means, info, timings=timings, params=dict(
        tasks=list(samples), n_samples=n_samples, seed=seed, threshold=threshold, method=method, prob=prob,
        knockout_samples=knockout_samples, n_random=n_random, ks=list(ks) if ks else None, curves_for=curves_for,
        knockout_positions=knockout_positions,
        heldout=heldout,
        batch_size=batch_size))
    if transfer:
        t3 = time.time()
        run_transfer(res, model, tok, heldout, n_samples, seed, batch_size)
        timings["transfer"] = time.time() - t3
    timings["total"] = time.time() - t0
    return res


def knockout_summary(res: IdentifyResult) -> pd.DataFrame:
    """Per task: accuracy after knocking out its key heads (effect rank, ``k`` = number of key heads)
    and after knocking out ``k`` random heads (mean and standard deviation over the seeds)."""
    rows = []
    per = res.key_heads.get("per_task") or {res.key_heads["task"]: res.key_heads["heads"]}
    per = {**per, res.key_heads["task"]: res.key_heads["heads"]}
    for task, heads in per.items():
        d = res.knockout[(res.knockout.task == task) & (res.knockout.kind == "head") & (res.knockout.k == len(heads))]
        if not d.empty:
            rows.append({"task": task, **_key_vs_random(d)})
    return pd.DataFrame(rows)


def _key_vs_random(d: pd.DataFrame) -> dict:
    """One knockout point (rows of a single ``k``): the effect-rank accuracy and the random-rank
    mean and spread over seeds."""
    rnd = d[d.order == "random-rank"].accuracy
    return {"key_heads": int(d.k.iloc[0]), "accuracy_key_heads_out": float(d[d.order == "effect-rank"].accuracy.iloc[0]),
            "accuracy_random_out_mean": float(rnd.mean()), "accuracy_random_out_std": float(rnd.std(ddof=0)),
            "n": int(d.n.iloc[0])}


def positions_table(res: IdentifyResult, model, tok, batch_size: int = 64) -> pd.DataFrame:
    """The key heads of the primary task vs as many random heads (``n_random`` seeded draws), knocked
    out at END (the default, where path patching measured them) and at every position.

    The run's own positions come from its knockout curve (:func:`knockout_summary`); the other is
    computed on the same samples with the same random orders.
    Rows ``positions, key_heads, accuracy_key_heads_out, accuracy_random_out_mean, _std, n``."""
    task = res.key_heads["task"]
    heads = [(h["layer"], h["head"]) for h in res.key_heads["heads"]]
    own = knockout_summary(res)
    own = own[own.task == task].drop(columns="task") if not own.empty else own
    ss = (res.tasks[task] if task in res.tasks else _interleave(res.tasks.values()))[:res.params["knockout_samples"]]
    cfg = model.config
    universe = [(l, h) for l in range(cfg.num_hidden_layers) for h in range(cfg.num_attention_heads)]
    rows = []
    for positions in POSITIONS:
        if positions == res.params["knockout_positions"] and not own.empty:
            rows.append({"positions": positions, **own.iloc[0].to_dict()})
            continue
        d = knockout_curve(model, tok, ss, res.means, heads, [len(heads)], universe, "head", res.params["n_random"],
                           res.params["seed"], batch_size=batch_size, positions=positions)
        rows.append({"positions": positions, **_key_vs_random(d)})
    return pd.DataFrame(rows)


def _concat(ps: Sequence[Patched]) -> Patched:
    cat = lambda f: None if getattr(ps[0], f) is None else torch.cat([getattr(p, f) for p in ps])
    return Patched(*(cat(f) for f in ("logit_p", "logit_o", "model_logit", "logit_std", "lse_p", "lse_o")))


def _interleave(groups) -> list[D.Sample]:
    """Round-robin over the tasks, so that the first k samples cover every task."""
    groups = [list(g) for g in groups]
    return [g[i] for i in range(max(map(len, groups))) for g in groups if i < len(g)]


def run_transfer(res: IdentifyResult, model, tok, heldout: str = "fig10", n_samples: int = 256, seed: int = 0,
                 batch_size: int = 64, cases: Sequence[tuple[str, str]] = FIG4_CASES) -> None:
    """Fig. 4 and the held-out family: fills ``res.transfer`` and ``res.heldout``."""
    held_ids = {t.id for t in D.select_templates(heldout)}
    every = [s for ss in res.tasks.values() for s in ss]
    use = torch.tensor([s.template not in held_ids for s in every])
    heads = [(h["layer"], h["head"]) for h in res.key_heads["heads"]]
    positions = res.params["knockout_positions"]
    res.transfer = transfer_table(model, tok, heads, res.means, cases, positions=positions)
    cfg = model.config
    universe = [(l, h) for l in range(cfg.num_hidden_layers) for h in range(cfg.num_attention_heads)]
    if not use.any():
        res.heldout = {"family": heldout, "status": "skipped: every identification sample is from this family"}
        return
    allp = _concat([res.patched[t] for t in res.tasks])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eff = effects_frame(allp.select(use), "id", prob=False)
    id_heads = [(h["layer"], h["head"]) for h in key_heads(eff, "id", res.params["threshold"])["heads"]]
    test, _ = D.make_pairs(tok, heldout, n=n_samples, seed=seed + 1)
    id_means = mean_activations(model, tok, [s.corrupt for s, u in zip(every, use.tolist()) if u],
                                [group_key(s) for s, u in zip(every, use.tolist()) if u], batch_size)
    r = heldout_drop(model, tok, id_heads, id_means, test, universe, res.params["n_random"], seed, batch_size=batch_size,
                     positions=positions)
    res.heldout = {"family": heldout, "identified_on": int(use.sum()), "heads": [f"{l}.{h}" for l, h in id_heads],
                   "test_prompts": f"data.make_pairs(tok, {heldout!r}, n={n_samples}, seed={seed + 1}), unfiltered", **r}


# ---------------------------------------------------------------------------------------- files
def versions() -> dict:
    """Library versions recorded with every run."""
    import importlib.metadata

    import transformers
    try:
        own = importlib.metadata.version("arithmech")
    except importlib.metadata.PackageNotFoundError:
        own = "not installed"
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "pandas": pd.__version__, "arithmech": own}


def write_results(res: IdentifyResult, folder: str | Path, extra: dict | None = None, model: str | None = None) -> Path:
    """Write the run's files into ``folder`` as one set (:func:`arithmech.core.results.write_step`)."""
    files = {"effects.csv": res.effects, "key_heads.json": res.key_heads,
             "prompts.jsonl": [s for ss in res.tasks.values() for s in ss]}
    if res.knockout is not None and len(res.knockout):      # a run with knockout=False has no curves
        files["knockout.csv"] = res.knockout
    if res.transfer is not None:
        files["transfer.csv"] = res.transfer
    if res.heldout is not None:
        files["heldout.json"] = res.heldout
    record = {"parameters": {**res.params, **(extra or {})}, "samples": res.info, "versions": versions(),
              "wall_seconds": round(res.timings.get("total", 0.0), 2),
              "timings": {k: round(v, 2) for k, v in res.timings.items()},
              "peak_memory": getattr(res, "memory", None) or R.peak_memory()}
    return R.write_step(folder, "identify", files, record, model=model)


def run(model: str = "embedded", task="all", n_samples: int = 256, seed: int = 0, results: str | Path = "results",
        device: str = "cpu", dtype: str = "float32", threshold: float = -0.05, method: str = "fast",
        overwrite: bool = False, out: str | Path | None = None, **kw) -> IdentifyResult:
    """Load ``model``, run :func:`identify`, write the files to ``out`` (the model's folder) or else to
    ``results`` (the results root or the model's folder, see :func:`arithmech.core.results.model_folder`)."""
    from arithmech.core.models import load_model
    folder = Path(out) if out else R.model_folder(results, model)
    R.check_writable(folder, "identify", overwrite)
    for t in ([task] if isinstance(task, str) else task):
        if isinstance(t, str) and t != "all":
            task_templates(t)                  # a wrong task name or a missing file fails before loading
    torch.manual_seed(seed)
    random.seed(seed)
    net, tok, _ = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")  # no attention weights needed
    res = identify(net, tok, task, n_samples=n_samples, seed=seed, threshold=threshold, method=method, **kw)
    write_results(res, folder, extra={"model": model, "task": task, "device": device, "dtype": dtype}, model=model)
    res.params["out"] = str(folder)
    return res


# ------------------------------------------------------------------------------------------ CLI
def _cli(a: argparse.Namespace) -> None:
    res = run(model=a.model, task=a.task, n_samples=a.n_samples, seed=a.seed, results=a.results, out=a.out,
              device=a.device, dtype=a.dtype, threshold=a.threshold, method=a.method, overwrite=a.overwrite,
              knockout=not a.no_knockout, knockout_samples=a.knockout_samples, n_random=a.random_seeds,
              curves_for=a.curves, knockout_positions=a.knockout_positions, prob=not a.no_prob,
              batch_size=a.batch_size)
    kh = res.key_heads
    names = ", ".join(f"{h['name']} ({h['effect']:+.1%})" for h in kh["heads"][:10]) or "none"
    print("samples kept (X_r): " + ", ".join(f"{t} {i['n_kept']}/{i['n_drawn']}" for t, i in res.info.items()))
    print(f"key heads of {kh['task']} (effect < {kh['threshold']:+.0%}): {names}")
    print(f"wrote effects.csv, key_heads.json, prompts.jsonl, knockout.csv, run.json to {res.params['out']}")


def add_cli(subparsers, name: str = "identify") -> None:
    from arithmech.core.inputs import common_arguments
    s = subparsers.add_parser("identify", help="path patching of every head and MLP, key heads, knockout (§4.1, §5.1)")
    common_arguments(s, n_samples=256)
    s.add_argument("--task", default="all", help="addition, subtraction, multiplication, division, all (the four), "
                   "fig8, fig10, exponentiation, or a template-pair file (.json / .jsonl)")
    s.add_argument("--out", default=None, help="the model's results folder (same as --results DIR)")
    s.add_argument("--threshold", type=float, default=-0.05, help="key heads: effect below this (paper: -0.05)")
    s.add_argument("--method", default="fast", choices=["fast", "reference"])
    s.add_argument("--knockout-samples", type=int, default=64, help="X_r samples per task in the knockout curves")
    s.add_argument("--random-seeds", type=int, default=3, help="random-rank orders in the knockout curves")
    s.add_argument("--curves", default="primary", choices=["primary", "each"],
                   help="full knockout curves for the primary task only (default) or for each task")
    s.add_argument("--knockout-positions", default="end", choices=list(POSITIONS),
                   help="mean-ablate at END only (where heads were patched; fast) or at every position")
    s.add_argument("--no-knockout", action="store_true", help="skip the knockout curves")
    s.add_argument("--no-prob", action="store_true",
                   help="skip P({C}) (saves a full-vocabulary unembedding per patched run on large vocabularies)")
    s.add_argument("--batch-size", type=int, default=64)
    s.set_defaults(func=_cli)
