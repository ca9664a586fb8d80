"""The Table 1 runner, on any model: every arm over a whole learning-rate grid, with seeds and draws.

The paper's claim (§5.3, Table 1): tuning *the identified heads* improves math about as much as tuning every
parameter and keeps general skills. To test it, and not only restate it, the runner makes every run the
verdicts of :mod:`arithmech.table1.verdicts` read, decided over whole curves rather than at one chosen rate:

* **arms** — ``base`` and ``base-shots`` (no training: the base model, and the base model with K solved
  examples before each carry item, which separates the answer *format* from the arithmetic); ``full`` (every
  parameter); ``precise-key`` (the top ``k`` of the paper's ranking); ``precise-share`` (the heads the share
  rule names, filled up by share rank); ``precise-random`` (layer-matched random heads) and
  ``precise-random-any`` (random heads of any layer), both sharing **no tuned parameter** with the key or share
  arm, grouped-query attention included (:mod:`arithmech.table1.heads`);
* **grids** — full SFT has its own grid, the precise arms share one (matched rates); each is extended until it
  is bracketed (:mod:`arithmech.table1.grid`, validation scores only);
* **seeds and draws** — every rate of ``full``, ``precise-key`` and ``precise-share`` runs each of ``seeds``,
  and the rates on an arm's validation frontier run up to ``frontier_seeds``; each rate of a random arm runs
  ``draws`` draws, draw ``d`` training with ``seeds[d % len(seeds)]`` (a draw's heads are seeded by its index,
  not by a training seed); the data splits stay fixed by ``data_seed``, so every run is scored on the same items;
* **order** — base, then every arm's grid at its first seed (bracketing), then the other seeds (and as many
  draws) in rounds (after each round every arm and rate has the same number of runs), then the frontier seeds of
  the seeded arms (their frontier is final once every seed has run), then the random arms' other draws in rounds: a
  run stopped part-way leaves a balanced table;
* **one record per run** — ``finetune/<mode>-<tag>.json`` (tags ``<arm>[draw]-s<seed>-lr<rate>``, e.g.
  ``precise-random-any3-s0-lr1e-03``), test items kept for paired intervals; ``finetune/table1.json`` lists
  every run, the heads, the grids and what each run cost. A re-run keeps each record made with the same
  arguments (resume).

Same arguments → byte-identical records (timings aside).

This module plans and runs the table; the pieces live beside it: the heads of each arm
(:mod:`arithmech.table1.heads`), the grids and the chosen rate (:mod:`arithmech.table1.grid`), one run's
training and record (:mod:`arithmech.table1.train`), the learning curve (:mod:`arithmech.table1.curve`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from arithmech.core import admission, provenance, records
from arithmech.core import results as results_io
from arithmech.core.config import command_line
from arithmech.core.models import load_model
from arithmech.core.progress import Progress, announce
from arithmech.evals.measures import table1_sizes
from arithmech.evals.suites import CLOZE_SETS, get_suite
from arithmech.steps.config_training import Table1 as Config
from arithmech.table1 import heads as heads_mod
from arithmech.table1.curve import args_hash as _hash
from arithmech.table1.curve import learning_curve
from arithmech.table1.grid import (
    ARMS,
    BRACKET_RULE,
    GRIDS,
    PRECISE,
    RANDOM,
    RULE,
    bracket_side,
    choose,
    extension,
    frontier_rates,
    grid_of,
    lr_tag,
    replicated,
    val_math,
)
from arithmech.table1.train import Run, check_records, same_record, train_arm

TAGS = {
    "full": "",
    "precise-key": "key",
    "precise-share": "share",
    "precise-random": "random",
    "precise-random-any": "random-any",
}


# ------------------------------------------------------------------------------------- runner
def check_args(suite: str, grid: dict | None) -> dict:
    """The grid per arm (the suite's default where not given), checked before any model loads."""
    get_suite(suite)
    grid = {**GRIDS[suite], **(grid or {})}
    for arm, g in grid.items():
        if arm not in ARMS or len(g) < 3 or sorted(g) != list(g) or not all(0 < x < 1 for x in g):
            raise ValueError(f"grid of {arm!r}: {g!r}: an arm of {ARMS} with >= 3 increasing rates in (0, 1)")
    if len({tuple(grid[a]) for a in PRECISE}) > 1:
        raise ValueError("the precise arms share one grid (matched rates): give them the same rates")
    return grid


def run(
    config: Config,
    arms: Sequence[str] = ARMS,
    grid: dict | None = None,
    data_seed: int | None = None,
    sizes: dict | None = None,
    command: str | None = None,
) -> dict:
    """Run Table 1 (module docstring) and write its records and ``finetune/table1.json``; returns the plan.

    ``sizes``: the suite's evaluation sizes (``paper``: :func:`arithmech.evals.measures.table1_sizes` of
    ``config.scale``); ``arms``, ``grid``: a test's narrower run; ``data_seed``: the splits' seed, by default
    ``--seed`` (so the recorded command makes the same splits)."""
    c = config
    data_seed = c.seed if data_seed is None else data_seed
    S = get_suite(c.suite)
    if sizes is None:
        sizes = table1_sizes(c.scale) if c.suite == "paper" else S.sizes() if S.sizes else None
        if sizes is not None and c.suite == "cpu":  # each run's test sets, cut to fit the design's budget
            sizes = {**sizes, **{k: c.cloze_items for k in CLOZE_SETS}, "lm_tokens": c.lm_tokens}
    grid = check_args(c.suite, grid)
    est = admission.check(c)  # refused here when it cannot fit, before the model loads
    out = results_io.model_folder(c.results, c.model_name)
    announce("table1", est.line() if est else "")
    with records.holding(out):  # one writer of the folder for the whole run
        return _run(c, S, sizes, grid, arms, data_seed, command, est)


def _run(c: Config, S, sizes, grid, arms, data_seed, command, est) -> dict:  # noqa: C901, PLR0915 (the runner and its closures)
    """:func:`run` once its arguments are checked and its estimate made."""
    out = results_io.model_folder(c.results, c.model_name)
    seeds = list(c.seeds)
    curve = None
    if not c.curve_only:  # every input checked before anything is written (the curve included)
        check_records(out)
        heads = heads_mod.plan_heads(out, c.model_name, c.top_k, c.draws)
    if c.curve_only or c.steps is None:
        curve = learning_curve(c, data_seed)
        if c.curve_only:
            return {"curve": curve}
    if c.steps is not None:
        steps = c.steps
    else:
        assert curve is not None  # made above whenever --steps is absent
        steps = curve["knee"]
    if sizes is None:
        sizes = {"single_digit_per_template": 4}
    command = command or command_line("table1", c)  # a chapter's run: the command that makes the same files
    common = dict(
        model=c.model_name,
        suite=c.suite,
        steps=steps,
        batch_size=c.batch_size,
        data_seed=data_seed,
        device=c.device,
        dtype=c.dtype,
        data_dir=str(c.data_dir),
        sizes=sizes,
    )
    ev = lambda net, tok, side: S.evaluate(net, tok, side, sizes, data_seed, data_dir=c.data_dir)
    t_start = time.time()
    tuned = [tuple(h) for h in heads["tuned"]]
    share = [tuple(h) for h in heads["share"]]
    draws = {"precise-random": heads["random_draws"], "precise-random-any": heads["random_any_draws"]}

    def record(mode, tag, h, net_tok_train, hs, run: Run, started, shots=0):
        """Evaluate the trained (or base) model and write ``finetune/<mode>[-tag].json`` (args hash ``h``)."""
        net, tok, tr = net_tok_train
        arm, lr, seed, draw = run
        t0 = time.time()
        if shots:
            val, test = (
                S.shots(net, tok, "val", sizes, data_seed, shots),
                S.shots(net, tok, "test", sizes, data_seed, shots),
            )
        else:
            val, test = ev(net, tok, "val"), ev(net, tok, "test")
        extra = (
            S.base_only(net, tok, sizes, data_seed, data_dir=c.data_dir)
            if mode == "base" and not shots and S.base_only
            else {}
        )
        eval_s = round(time.time() - t0, 1)
        base = None if mode == "base" else records.read_finetune(out, "base")
        rec = records.finetune_record(
            model=results_io.folder_name(c.model_name),
            mode=mode,
            tag=tag,
            command=command,
            seed=seed,
            device=c.device,
            dtype=c.dtype,
            heads=hs,
            mlps=[] if mode == "precise" else ("all" if mode == "full" else None),
            tuned_parameters=(tr or {}).get("tuned_parameters", 0),
            total_parameters=(tr or {}).get("total_parameters"),
            parameters={
                "arm": arm,
                "lr": lr,
                "draw": draw,
                "suite": c.suite,
                "steps": steps,
                "batch_size": c.batch_size,
                "data_seed": data_seed,
                "sizes": sizes,
                "args_sha256": h,
                "validation": val,
                "base_only": extra,
                "eval_s": eval_s,
                **({"shots": shots} if shots else {}),
            },
            train=tr,
            results=test,
            delta=None if base is None else records.paired_deltas(base["results"], test, seed),
            data={
                "suite": c.suite,
                "splits": "validation and test disjoint by operand pair and phrasing (arithmech.evals.suites)",
            },
            versions=provenance.versions(),
            wall_s=round(time.time() - started, 1),
        )
        records.write_finetune(out, rec, inputs=("key_heads.json", "effects.csv") if mode == "precise" else ())

    def heads_of(arm, draw):
        if arm in RANDOM:
            return [tuple(h) for h in draws[arm][draw]]
        return {"full": None, "precise-key": tuned, "precise-share": share}[arm]

    def tag_of(arm, lr, seed, draw):
        return (f"{TAGS[arm]}{draw if arm in RANDOM else ''}-" if TAGS[arm] else "") + f"s{seed}-lr{lr_tag(lr)}"

    def made(arm, lr, seed, draw):
        """Whether this run's record exists with the same arguments (a cut rate keeps the runs made before it)."""
        hs = heads_of(arm, draw)
        h = _hash({**common, "arm": arm, "lr": lr, "seed": seed, "heads": hs, "base": base_hash})
        return same_record(out, grid_of(arm), tag_of(arm, lr, seed, draw), h)

    def run_one(arm, lr, seed, draw, bar):
        hs = heads_of(arm, draw)
        mode = "full" if arm == "full" else "precise"
        tag = tag_of(arm, lr, seed, draw)
        h = _hash({**common, "arm": arm, "lr": lr, "seed": seed, "heads": hs, "base": base_hash})
        fresh = not same_record(out, mode, tag, h)
        if fresh:
            records.check_finetune_writable(records.finetune_path(out, mode, tag), c.overwrite)
            bar.note = f"{arm} seed {seed} lr {lr_tag(lr)}"
            started = time.time()
            trained = train_arm(c, S, hs, lr, seed, steps, data_seed)
            record(mode, tag, h, trained, [list(x) for x in hs] if hs else "all", Run(arm, lr, seed, draw), started)
        bar.advance()
        val = records.read_finetune(out, mode, tag)["parameters"]["validation"]
        rows[arm].append(
            {
                "lr": lr,
                "seed": seed,
                "draw": draw,
                "tag": f"{mode}-{tag}",
                "val_math": val_math(val, S),
                "val_nll": val["math_nll"]["value"],
                "val_loss": (val.get("lm_loss") or {}).get("value", 0.0),
            }
        )
        if fresh:
            write_plan(False)

    def write_plan(complete: bool) -> dict:
        """``finetune/table1.json`` from the runs so far (``complete``: every planned run is done); written after
        each new run too, so an interrupted table is readable and its records committed with it."""
        plan_arms = {}
        for a in [a for a in arms if rows[a]]:
            first = [r for r in rows[a] if r["seed"] == seeds[0] and r["draw"] == 0]
            lr = choose(first)
            plan_arms[a] = {
                "grid": g[group(a)],
                "grid_rows": sorted(rows[a], key=lambda r: (r["lr"], r["draw"], r["seed"])),
                "extensions": ext[group(a)],
                "frontier_rates": frontier_rates(rows[a]),
                "chosen_lr": lr,
                "interior": g[group(a)][0] < lr < g[group(a)][-1],
                "runs": [r["tag"] for r in rows[a] if r["lr"] == lr],
            }
        plan = {
            "suite": c.suite,
            "model": results_io.folder_name(c.model_name),
            "command": command,
            "complete": complete,
            "rules": {
                "bracket": BRACKET_RULE,
                "single_rate": RULE,
                "seeds": f"every rate: {len(seeds)} seeds (random arms: {c.draws} draws); frontier rates: "
                f"{max(c.frontier_seeds, len(seeds))}",
                "cut": "none: every rate of a grid is replicated"
                if c.replicate_ends
                else "--no-replicate-ends: a bracketed grid's two end rates keep their first run and get "
                "no further seeds, draws or frontier seeds (made before the cut: kept); the rules "
                "read a point from 3 runs, so they decide on the interior rates",
            },
            "replicated": {grp: keep[grp] for grp in ("full", "precise")},
            "rule": RULE,
            "seeds": seeds,
            "draws": c.draws,
            "frontier_seeds": c.frontier_seeds,
            "data_seed": data_seed,
            "steps": steps,
            "steps_from": "the learning curve's knee" if curve else "--steps",
            "batch_size": c.batch_size,
            "sizes": sizes,
            "shots": c.shots,
            "heads": heads,
            "arms": plan_arms,
            "runs": ["base"] + [t for a in plan_arms.values() for t in a["runs"]],
        }
        every = (
            ["base"]
            + (["base-shots"] if S.shots else [])
            + [r["tag"] for a in plan_arms.values() for r in a["grid_rows"]]
        )
        run_s = {t: records.read_tag(out, t).get("wall_s") for t in every}
        plan["cost"] = {
            "runs": len(every),
            "run_s": run_s,
            "curve_s": (curve or {}).get("wall_s"),
            "total_s": round(sum(v or 0 for v in run_s.values()) + ((curve or {}).get("wall_s") or 0), 1),
            "machine": "what each run cost where it ran (run_s: training + evaluation; curve_s: the learning curve)",
        }
        results_io.write_step(
            out,
            "table1",
            {"finetune/table1.json": plan},
            record={
                "parameters": {k: v for k, v in plan.items() if k not in ("arms", "runs")},
                "wall_s": round(time.time() - t_start, 1),
                "versions": provenance.versions(),
                "peak_memory": provenance.peak_memory(),
                "estimate": est.record() if est else None,
            },
        )
        return plan

    base_hash = _hash({**common, "arm": "base"})
    shots_hash = _hash({**common, "arm": "base-shots", "shots": c.shots})
    arms = [a for a in ARMS if a in arms]
    g = {"full": list(grid["full"]), "precise": list(grid[PRECISE[0]])}
    rows: dict = {a: [] for a in arms}
    ext = {"full": 0, "precise": 0}
    keep: dict[str, list[float]] = {"full": list(g["full"]), "precise": list(g["precise"])}
    group = grid_of
    replicas = lambda a: c.draws if a in RANDOM else len(seeds)
    n_runs = 2 + sum(len(g[group(a)]) * replicas(a) for a in arms)
    with Progress("table1", n_runs) as bar:
        for mode, tag, h, shots in (("base", None, base_hash, 0), ("base", "shots", shots_hash, c.shots)):
            if shots and S.shots is None:
                continue
            if not same_record(out, mode, tag, h):
                records.check_finetune_writable(records.finetune_path(out, mode, tag), c.overwrite)
                started = time.time()
                net, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
                record(
                    mode,
                    tag,
                    h,
                    (net, tok, None),
                    None,
                    Run("base" if not shots else "base-shots", None, seeds[0], None),
                    started,
                    shots,
                )
            bar.advance()
        base_val = val_math(records.read_finetune(out, "base")["parameters"]["validation"], S)
        for a in arms:  # 1. every rate at the first seed (first draw)
            for lr in g[group(a)]:
                run_one(a, lr, seeds[0], 0, bar)
        for grp in ("full", "precise"):  # ... until each grid is bracketed
            members = [a for a in arms if group(a) == grp]
            while members and ext[grp] < c.max_extend:
                side = next((s for a in members if (s := bracket_side(rows[a], base_val))), None)
                lr = extension(g[grp], side) if side else None
                if lr is None:
                    break
                g[grp], ext[grp] = sorted(g[grp] + [lr]), ext[grp] + 1
                bar.total += len(members) * max(replicas(a) for a in members)
                for a in members:
                    run_one(a, lr, seeds[0], 0, bar)
        for grp in ("full", "precise"):  # the ends replicated only when asked (table1_grid)
            members = [a for a in arms if group(a) == grp]
            closed = bool(members) and not any(bracket_side(rows[a], base_val) for a in members)
            keep[grp] = replicated(g[grp], closed, c.replicate_ends)

        def round_(i):  # every arm's i-th seed (random arms: draw i) at every rate it replicates
            for a in arms:
                if i < replicas(a):
                    seed, draw = (seeds[i % len(seeds)], i) if a in RANDOM else (seeds[i], 0)
                    for lr in g[group(a)]:
                        if lr in keep[group(a)] or made(a, lr, seed, draw):
                            run_one(a, lr, seed, draw, bar)
                        else:
                            bar.advance()

        for i in range(1, len(seeds)):  # 2. the other seeds (and as many draws), in balanced rounds
            round_(i)
        extra = [max(seeds) + 1 + j for j in range(max(0, c.frontier_seeds - len(seeds)))]
        for a in [a for a in arms if a not in RANDOM]:  # 3. the frontier rates up to frontier_seeds
            front = [lr for lr in frontier_rates(rows[a]) if lr in keep[group(a)]]  # final: every seed has run
            bar.total += len(front) * len(extra)
            for fs in extra:
                for lr in front:
                    run_one(a, lr, fs, 0, bar)
        for i in range(len(seeds), max(replicas(a) for a in arms)):  # 4. the random arms' other draws, in rounds
            round_(i)
    return write_plan(True)


def summary(plan: dict) -> str:
    """The command line's summary of :func:`run`' plan: the learning curve's knee, or each arm's chosen rate."""
    if "curve" in plan:
        return json.dumps({"knee": plan["curve"]["knee"], "points": len(plan["curve"]["points"])})
    return json.dumps({arm: {"lr": v["chosen_lr"], "interior": v["interior"]} for arm, v in plan["arms"].items()})
