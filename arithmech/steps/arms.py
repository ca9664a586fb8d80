"""The Table 1 runner, on any model: base, full SFT, precise SFT of the key heads, precise SFT of random heads.

The paper's claim (§5.3, Table 1): tuning *the identified heads* improves math about as much as tuning
every parameter, and keeps general skills. To test it, and not only to restate it, this runner adds the
controls the comparison needs (issue #14):

* **arms** — ``base`` (no training); ``full`` (every parameter); ``precise-key`` (the top-``k`` heads:
  those passing identify's threshold, filled up by rank when fewer pass — recorded as ``selection``);
  ``precise-random`` (``k`` random heads, **never a key head under either rule of** ``key_heads.json``, drawn layer by layer to match the key
  heads' layers — the nearest layer with a free head where a layer has none left — one draw per seed);
* **seeds** — every arm with each of ``seeds`` (the data splits stay fixed by ``data_seed``, so every run
  is scored on the same items);
* **matched tuning** — each arm gets its own learning-rate grid, run at the first seed (``precise-random``:
  its first draw); the rule, fixed before any run: *the highest validation math accuracy; among rates
  within one point of it, the lowest validation math loss* (:func:`choose`). When the choice is the
  grid's smallest or largest value, the grid is extended on that side by the grid's own ratio, up to
  ``max_extend`` times, until the choice is interior (``finetune/table1.json`` records every value
  tried, its validation scores, the choice and whether it is interior). The other seeds run at the
  chosen rate. Every run, grid runs too, is scored on the test items (the trade-off chart shows them all);
  the table and the verdicts use the chosen rate only.
* **one record per run** — ``finetune/<mode>-<tag>.json`` through :func:`arithmech.core.records.write_finetune`
  (tags ``<arm>-s<seed>-lr<rate>``, e.g. ``precise-key-s0-lr3e-03``), with the test items (for paired
  intervals), the validation scores and the change against ``base.json``; the plan in ``finetune/table1.json``.

* **the step budget** — unless ``--steps`` is given, the knee of full SFT's validation learning curve
  (:func:`learning_curve`, :data:`KNEE_RULE`, ``finetune/curve.json``), made before any arm runs;
* **what it cost** — each record's ``wall_s`` (training + evaluation) and the plan's ``cost`` (every run's
  seconds and their sum with the curve's), so a run resumed across sessions still reports its whole cost.

Same arguments → byte-identical records (timings aside); a re-run keeps each record of the same arguments
(resume). :mod:`arithmech.claims.verdicts` turns the records into the pre-stated verdicts.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Sequence

import torch

from arithmech.core import estimate, records, results as results_io
from arithmech.core.config import command_line
from arithmech.core.inputs import quoted
from arithmech.core.models import load_model
from arithmech.core.progress import Progress, annotate
from arithmech.core.stats import paired_bootstrap
from arithmech.evals.measures import table1_sizes
from arithmech.evals.suites import get_suite
from arithmech.finetune import adapter, runner
from arithmech.finetune.data import tokenize_pairs
from arithmech.paper import SFT
from arithmech.steps.config import Table1 as Config
from arithmech.steps.finetune import ranked_components

ARMS = ("full", "precise-key", "precise-random")
GRIDS = {"toy": {"full": (3e-4, 1e-3, 3e-3), "precise-key": (1e-3, 3e-3, 1e-2), "precise-random": (1e-3, 3e-3, 1e-2)},
         "cpu": {"full": (3e-5, 1e-4, 3e-4), "precise-key": (3e-4, 1e-3, 3e-3), "precise-random": (3e-4, 1e-3, 3e-3)},
         "paper": {"full": (3e-5, 1e-4, 3e-4), "precise-key": (3e-4, 1e-3, 3e-3), "precise-random": (3e-4, 1e-3, 3e-3)}}
RULE = "highest validation math accuracy; among rates within 0.01 of it, the lowest validation math loss"


# ------------------------------------------------------------------------------------ the heads
def key_and_ranked(folder: str | Path) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]]]:
    """``(heads passing identify's threshold, every head ranked best first, heads the share rule names)`` of a
    results folder. The first two choose the tuned heads (the paper's rule and its ranking); the third only
    widens what the random arm must avoid: a head that either rule calls key is never a "random" head."""
    ranked, _ = ranked_components(folder)
    kh = results_io.read(folder, "key_heads.json")
    passing = [(h["layer"], h["head"]) for h in kh["heads"]]
    by_share = [(h["layer"], h["head"]) for h in (kh.get("by_share") or {}).get("heads", [])]
    return passing, ranked, by_share


RUN_TAG = re.compile(r"^(base|full-s\d+-lr.+|precise-(key|random\d+)-s\d+-lr.+)$")
"""The records an arms run reads back (resuming) or replaces: ``finetune/<stem>.json`` with these stems."""


def check_records(folder: str | Path) -> None:
    """Refuse, before any work, a record of this runner in ``folder`` that is not a readable fine-tune record
    (truncated, edited, a FIFO): each is read back when the run resumes or replaced by it, so each is checked
    first, naming the file (whether it is still fresh is for the run to decide: a stale one is re-run)."""
    d = Path(folder) / "finetune"
    if not d.is_dir():
        return
    for p in sorted(d.glob("*.json")):
        if RUN_TAG.match(p.stem):
            records.check_record_file(p, folder)


def random_heads(tuned: Sequence[tuple[int, int]], all_heads: Sequence[tuple[int, int]], exclude,
                 draw: int) -> list[tuple[int, int]]:
    """``len(tuned)`` distinct heads, none in ``exclude``, matched to ``tuned``'s layers: for each tuned
    head, a seeded random free head of its layer, else of the nearest layer with one (lower first)."""
    rng = random.Random(f"random-heads:{draw}")
    free = sorted(set(all_heads) - set(exclude))
    layers = sorted({l for l, _ in all_heads})
    out: list[tuple[int, int]] = []
    for layer, _ in tuned:
        for L in sorted(layers, key=lambda x: (abs(x - layer), x)):
            pool = [h for h in free if h[0] == L and h not in out]
            if pool:
                out.append(rng.choice(pool))
                break
        else:
            raise ValueError(f"only {len(free)} heads are not key heads: cannot draw {len(tuned)} random heads")
    return sorted(out)


# --------------------------------------------------------------------------- learning-rate rule
def choose(rows: list[dict]) -> float:
    """:data:`RULE` over grid ``rows`` (``{"lr", "val_math", "val_nll"}``): the chosen rate."""
    best = max(r["val_math"] for r in rows)
    return min((r for r in rows if r["val_math"] >= best - 0.01), key=lambda r: (r["val_nll"], r["lr"]))["lr"]


def extension(grid: Sequence[float], chosen: float) -> float | None:
    """The next rate to try when ``chosen`` is an end of the sorted ``grid``: one grid ratio beyond that end
    (rounded to one significant digit); ``None`` when ``chosen`` is interior or the next rate leaves (0, 1)."""
    g = sorted(grid)
    if g[0] < chosen < g[-1]:
        return None
    lr = float(f"{(g[0] ** 2 / g[1] if chosen == g[0] else g[-1] ** 2 / g[-2]):.0e}")
    return lr if 0 < lr < 1 and lr not in g else None


def val_math(val: dict, suite) -> float:
    """Validation math accuracy: the suite's validation math items pooled (exact match)."""
    its = [x for k in suite.math if k in val for x in val[k]["items"]]
    return sum(its) / len(its)


def lr_tag(lr: float) -> str:
    return f"{lr:.0e}"


# ------------------------------------------------------------------------- the step budget: a curve
KNEE = 0.9
KNEE_RULE = (f"the fewest steps whose validation math accuracy reaches base + {KNEE} x (the curve's best - base), "
             "on one full-SFT run at the middle rate of full's grid, constant after warm-up")


def knee(points: list[dict]) -> int:
    """:data:`KNEE_RULE` over curve ``points`` (``{"step", "val_math"}``, step 0 = the base model)."""
    pts = sorted(points, key=lambda p: p["step"])
    base, best = pts[0]["val_math"], max(p["val_math"] for p in pts)
    return next(p["step"] for p in pts if p["val_math"] >= base + KNEE * (best - base) and p["step"] > 0)


class _Curve(runner.TrainerCallback):
    """Scores the validation math items every ``every`` optimizer steps of a training run."""

    def __init__(self, suite, tok, sizes: dict, data_seed: int, every: int):
        self.suite, self.tok, self.sizes, self.data_seed, self.every = suite, tok, sizes, data_seed, every
        self.points: list[dict] = []

    def score(self, model, step: int) -> None:
        was = model.training
        model.eval()
        with torch.no_grad():
            val = self.suite.evaluate(model, self.tok, "val", self.sizes, self.data_seed)
        model.train(was)
        self.points.append({"step": step, "val_math": val_math(val, self.suite), "val_nll": val["math_nll"]["value"],
                            **{f"val_{m}": r["value"] for m, r in val.items()       # what it keeps (or forgets)
                               if m not in self.suite.math and m != "math_nll"}})

    def on_step_end(self, args, state, control, model=None, **kw):
        if state.global_step % self.every == 0:
            self.score(model, state.global_step)


def learning_curve(config: Config, data_seed: int | None = None, every: int = 20) -> dict:
    """Full SFT's validation learning curve (one run of ``config.curve_steps`` steps at the middle rate of
    full's grid, constant after warm-up, scored every ``every`` steps) and its knee (:data:`KNEE_RULE`);
    written to ``finetune/curve.json``, which the arms' default step budget reads (resumes: a curve of the
    same arguments is kept); ``data_seed``: the splits' seed, by default ``--seed``."""
    c = config
    data_seed = c.seed if data_seed is None else data_seed
    S = get_suite(c.suite)
    sizes = S.sizes() if S.sizes else {}
    lr = sorted(GRIDS[c.suite]["full"])[1]
    out = results_io.model_folder(c.results, c.model_name)
    args = {"model": results_io.folder_name(c.model_name), "suite": c.suite, "lr": lr, "steps": c.curve_steps,
            "batch_size": c.batch_size, "seed": c.seeds[0], "data_seed": data_seed, "every": every, "sizes": sizes}
    h = _hash(args)
    if results_io.exists(out, "finetune/curve.json"):
        old = results_io.read(out, "finetune/curve.json")
        if old.get("args_sha256") == h:
            return old
    t0 = time.time()
    torch.manual_seed(c.seeds[0])
    net, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
    cb = _Curve(S, tok, sizes, data_seed, every)
    net.eval()
    cb.score(net, 0)
    rows = tokenize_pairs(tok, S.train(c.curve_steps * c.batch_size, c.seeds[0], data_seed))
    with tempfile.TemporaryDirectory(prefix="arithmech-curve-") as tmp:
        targs = runner.training_args(tmp, lr=lr, batch_size=c.batch_size, micro_batch_size=c.batch_size,
                                     max_steps=c.curve_steps, warmup=SFT["warmup"], weight_decay=SFT["weight_decay"],
                                     seed=c.seeds[0], device=c.device, logging_steps=every,
                                     scheduler="constant_with_warmup")
        net.train()
        trainer = runner.make_trainer(net, "full", targs, rows, tok)
        trainer.add_callback(cb)
        trainer.train()
    curve = {**args, "args_sha256": h, "rule": KNEE_RULE, "points": cb.points, "knee": knee(cb.points),
             "command": command_line("arms", c.replace(curve_only=True, steps=None)),
             "wall_s": round(time.time() - t0, 1)}
    results_io.write_step(out, "curve", {"finetune/curve.json": curve},
                          record={"parameters": args, "wall_s": curve["wall_s"], "versions": results_io.versions()})
    return curve


# ------------------------------------------------------------------------------------ one run
def train_arm(model_name: str, suite, heads, lr: float, seed: int, steps: int, batch_size: int, device: str,
              dtype: str, data_seed: int) -> tuple[object, object, dict]:
    """Fine-tune a fresh copy of ``model`` on ``suite.train``: every parameter (``heads`` None) or the
    ``heads``' slices with H/h rescaling. Returns ``(model, tokenizer, training record)``."""
    torch.manual_seed(seed)
    net, tok, _ = load_model(model_name, device=device, dtype=dtype, attn_implementation="sdpa")
    rows = tokenize_pairs(tok, suite.train(steps * batch_size, seed, data_seed))
    spec = adapter.HeadSpec(heads=tuple(map(tuple, heads)), rescale=True) if heads is not None else None
    with tempfile.TemporaryDirectory(prefix="arithmech-arms-") as tmp:
        args = runner.training_args(tmp, lr=lr, batch_size=batch_size, micro_batch_size=batch_size, max_steps=steps,
                               warmup=SFT["warmup"], weight_decay=SFT["weight_decay"], seed=seed, device=device,
                               logging_steps=max(1, steps // 10))
        net.train()
        trainer = runner.make_trainer(net, "precise" if spec else "full", args, rows, tok, spec)
        tuned = sum(p.numel() for p in net.parameters() if p.requires_grad)
        rec = runner.train_measured(trainer, device)
    if spec is not None:
        net = trainer.merged_model()
    net.eval().requires_grad_(False)
    rec.update(tuned_parameters=tuned, total_parameters=sum(p.numel() for p in net.parameters()),
               n_train=len(rows), lr=lr, warmup=SFT["warmup"], weight_decay=SFT["weight_decay"],
               scheduler="cosine", optimizer="adamw_torch")
    return net, tok, rec


def _deltas(base: dict, res: dict, seed: int) -> dict:
    out = {}
    for k, v in res.items():
        if k in base and base[k].get("items") is not None and len(base[k]["items"]) == len(v["items"]):
            d, lo, hi = paired_bootstrap(base[k]["items"], v["items"], seed=seed)
            out[k] = {"delta": d, "ci": [lo, hi]}
    return out


# ------------------------------------------------------------------------------------- runner
def check_args(suite: str, seeds, draws: int, grid: dict | None, steps: int, batch_size: int, top_k: int,
               max_extend: int) -> dict:
    """Every argument, before any model loads; returns the grid per arm (the suite's default where not given)."""
    get_suite(suite)
    if not seeds or len(set(seeds)) != len(seeds) or not all(isinstance(s, int) and s >= 0 for s in seeds):
        raise ValueError(f"--seeds {seeds!r}: expected distinct non-negative integers")
    if draws < 1 or draws > len(seeds):
        raise ValueError(f"--draws {draws}: one random draw per seed, so 1..{len(seeds)}")
    if steps < 1 or batch_size < 1 or top_k < 1 or max_extend < 0:
        raise ValueError("--steps, --batch-size and --top-k must be positive, --max-extend non-negative")
    grid = {**GRIDS[suite], **(grid or {})}
    for arm, g in grid.items():
        if arm not in ARMS or len(g) < 3 or sorted(g) != list(g) or not all(0 < x < 1 for x in g):
            raise ValueError(f"grid of {arm!r}: {g!r}: an arm of {ARMS} with >= 3 increasing rates in (0, 1)")
    return grid


def run_arms(config: Config, arms: Sequence[str] = ARMS, grid: dict | None = None, data_seed: int | None = None,
             sizes: dict | None = None, command: str | None = None) -> dict:
    """Run Table 1 (module docstring) and write its records and ``finetune/table1.json``; returns the plan.

    ``suite``: ``toy`` (the embedded model) or ``paper`` (a real model), :mod:`arithmech.evals.suites`.
    ``sizes``: the suite's evaluation sizes (``paper``: :func:`arithmech.evals.measures.table1_sizes` of
    ``config.scale``, the default); ``arms``, ``grid``: a test's narrower run; ``data_seed``: the splits' seed,
    by default ``--seed`` (so the recorded command makes the same splits)."""
    c = config
    data_seed = c.seed if data_seed is None else data_seed
    S = get_suite(c.suite)
    if sizes is None:
        sizes = table1_sizes(c.scale) if c.suite == "paper" else S.sizes() if S.sizes else None
    grid = check_args(c.suite, list(c.seeds), c.draws, grid, c.steps or 1, c.batch_size, c.top_k, c.max_extend)
    est = estimate.check(c)               # refused here when it cannot fit, before the model loads
    out = results_io.model_folder(c.results, c.model_name)
    with records.holding(out), annotate(est.line() if est else ""):   # one writer of the folder for the whole run
        return _run_arms(c, S, sizes, grid, arms, data_seed, command, est)


def _run_arms(c: Config, S, sizes, grid, arms, data_seed, command, est) -> dict:
    """:func:`run_arms` once its arguments are checked and its estimate made."""
    model, results, suite, top_k, seeds, draws = c.model_name, c.results, c.suite, c.top_k, list(c.seeds), c.draws
    batch_size, max_extend, device, dtype = c.batch_size, c.max_extend, c.device, c.dtype
    data_dir, overwrite = c.data_dir, c.overwrite
    out = results_io.model_folder(results, model)
    curve = None
    if not c.curve_only:                  # every input checked before anything is written (the curve included)
        passing, ranked, by_share = key_and_ranked(out)
        if len(ranked) < top_k:
            raise ValueError(f"--top-k {top_k}: {quoted(out)} ranks only {len(ranked)} heads")
        check_records(out)
    if c.curve_only or c.steps is None:
        curve = learning_curve(c, data_seed)
        if c.curve_only:
            return {"curve": curve}
    steps = c.steps or curve["knee"]
    tuned = ranked[:top_k]
    passes = "1 head passes" if len(passing) == 1 else f"{len(passing)} heads pass"
    selection = (f"{passes} identify's threshold; the top {top_k} by rank are tuned"
                 if len(passing) != top_k else "the heads passing identify's threshold")
    exclude = set(tuned) | set(passing) | set(by_share)
    if extra := set(by_share) - set(tuned) - set(passing):
        selection += f"; the random arm also avoids the {len(extra)} other heads the share rule names"
    random_draws = [random_heads(tuned, ranked, exclude, d) for d in range(draws)]
    if sizes is None:
        sizes = {"single_digit_per_template": 4}
    command = command or command_line("arms", c)          # a chapter's run: the command that makes the same files
    common = dict(model=model, suite=suite, steps=steps, batch_size=batch_size, data_seed=data_seed, device=device,
                  dtype=dtype, data_dir=str(data_dir), sizes=sizes)
    ev = lambda net, tok, side: S.evaluate(net, tok, side, sizes, data_seed, data_dir=data_dir)
    t_start = time.time()

    def record(mode, tag, h, net_tok_train, heads, arm, lr, seed, draw, started):
        net, tok, tr = net_tok_train
        t0 = time.time()
        val, test = ev(net, tok, "val"), ev(net, tok, "test")
        extra = {}
        if mode == "base" and S.base_only:
            extra = S.base_only(net, tok, sizes, data_seed, data_dir=data_dir)
        eval_s = round(time.time() - t0, 1)
        base = None if mode == "base" else records.read_finetune(out, "base")
        rec = records.finetune_record(
            model=results_io.folder_name(model), mode=mode, tag=tag, command=command, seed=seed, device=device, dtype=dtype,
            heads=heads, mlps=[] if mode == "precise" else ("all" if mode == "full" else None),
            tuned_parameters=(tr or {}).get("tuned_parameters", 0), total_parameters=(tr or {}).get("total_parameters"),
            parameters={"arm": arm, "lr": lr, "draw": draw, "suite": suite, "steps": steps, "batch_size": batch_size,
                        "data_seed": data_seed, "sizes": sizes, "args_sha256": h, "validation": val,
                        "base_only": extra, "eval_s": eval_s},
            train=tr, results=test, delta=None if base is None else _deltas(base["results"], test, seed),
            data={"suite": suite, "splits": "validation and test disjoint by operand pair and phrasing "
                  "(arithmech.evals.suites)"}, versions=results_io.versions(),
            wall_s=round(time.time() - started, 1))
        records.write_finetune(out, rec, inputs=("key_heads.json", "effects.csv") if mode == "precise" else ())
        return rec

    def run_one(arm, lr, seed, draw, bar):
        heads = None if arm == "full" else (tuned if arm == "precise-key" else random_draws[draw])
        mode = "full" if arm == "full" else "precise"
        tag = ("" if arm == "full" else arm.removeprefix("precise-") + (f"{draw}" if arm == "precise-random" else "")
               + "-") + f"s{seed}-lr{lr_tag(lr)}"
        h = _hash({**common, "arm": arm, "lr": lr, "seed": seed, "heads": heads, "base": base_hash})
        if not _same(out, mode, tag, h):
            records.check_finetune_writable(records.finetune_path(out, mode, tag), overwrite)
            bar.note = f"{arm} seed {seed} lr {lr_tag(lr)}"
            started = time.time()
            trained = train_arm(model, S, heads, lr, seed, steps, batch_size, device, dtype, data_seed)
            record(mode, tag, h, trained, [list(x) for x in heads] if heads else "all", arm, lr, seed, draw, started)
        bar.advance()
        rec = records.read_finetune(out, mode, tag)
        val = rec["parameters"]["validation"]
        return {"lr": lr, "seed": seed, "draw": draw, "tag": f"{mode}-{tag}", "val_math": val_math(val, S),
                "val_nll": val["math_nll"]["value"]}

    base_hash = _hash({**common, "arm": "base"})
    plan_arms: dict = {}
    n_runs = 1 + sum(len(grid[a]) + len(seeds) - 1 for a in arms)
    with Progress("table1", n_runs) as bar:
        if not _same(out, "base", None, base_hash):
            records.check_finetune_writable(records.finetune_path(out, "base"), overwrite)
            started = time.time()
            net, tok, _ = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")
            record("base", None, base_hash, (net, tok, None), None, "base", None, seeds[0], None, started)
        bar.advance()
        for arm in arms:
            g = list(grid[arm])
            rows = [run_one(arm, lr, seeds[0], 0, bar) for lr in g]
            ext = 0
            while ext < max_extend and (lr := extension(g, choose(rows))) is not None:
                bar.total += 1
                rows.append(run_one(arm, lr, seeds[0], 0, bar))
                g = sorted(g + [lr])
                ext += 1
            lr = choose(rows)
            runs = [r for r in rows if r["lr"] == lr]
            runs += [run_one(arm, lr, s, i % draws if arm == "precise-random" else 0, bar) for i, s in enumerate(seeds) if i > 0]
            plan_arms[arm] = {"grid": g, "grid_rows": sorted(rows, key=lambda r: r["lr"]), "chosen_lr": lr,
                              "interior": g[0] < lr < g[-1], "extensions": ext, "runs": [r["tag"] for r in runs]}
    plan = {"suite": suite, "model": results_io.folder_name(model), "command": command, "rule": RULE, "seeds": list(seeds),
            "data_seed": data_seed, "steps": steps, "steps_from": "the learning curve's knee" if curve else "--steps", "batch_size": batch_size, "sizes": sizes,
            "heads": {"tuned": [list(h) for h in tuned], "passing_threshold": [list(h) for h in passing],
                      "selection": selection, "random_draws": [[list(h) for h in d] for d in random_draws],
                      "random_layers_matched": [sorted(l for l, _ in d) == sorted(l for l, _ in tuned)
                                                for d in random_draws]},
            "arms": plan_arms, "runs": ["base"] + [t for a in plan_arms.values() for t in a["runs"]]}
    every = ["base"] + list(dict.fromkeys(r["tag"] for a in plan_arms.values() for r in a["grid_rows"]) | dict.fromkeys(
        t for a in plan_arms.values() for t in a["runs"]))
    run_s = {t: records.read_tag(out, t).get("wall_s") for t in every}
    plan["cost"] = {"runs": len(every), "run_s": run_s, "curve_s": (curve or {}).get("wall_s"),
                    "total_s": round(sum(v or 0 for v in run_s.values()) + ((curve or {}).get("wall_s") or 0), 1),
                    "machine": "what each run cost where it ran (run_s: training + evaluation; curve_s: the learning curve)"}
    results_io.write_step(out, "table1", {"finetune/table1.json": plan},
                 record={"parameters": {k: v for k, v in plan.items() if k not in ("arms", "runs")},
                         "wall_s": round(time.time() - t_start, 1), "versions": results_io.versions(),
                         "peak_memory": results_io.peak_memory(), "estimate": est.record() if est else None})
    return plan


def _hash(obj: dict) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _same(out: Path, mode: str, tag: str | None, h: str) -> bool:
    """True when ``finetune/<mode>[-tag].json`` is a valid record made with the arguments hashing to ``h``."""
    if not records.finetune_path(out, mode, tag).exists():
        return False
    try:
        return (records.read_finetune(out, mode, tag).get("parameters") or {}).get("args_sha256") == h
    except (ValueError, OSError):
        return False
