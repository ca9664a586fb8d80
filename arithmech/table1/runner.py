"""The Table 1 runner's state: :class:`Runner` holds one run's plan as fields and makes its runs in the order
:mod:`arithmech.table1.run` states (base, bracketing, seeds in rounds, frontier seeds, the random arms' draws), one
method a phase; each run's record is written by :meth:`Runner.record`, and ``finetune/table1.json`` after each new
run by :meth:`Runner.write_plan`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arithmech.core import provenance, records
from arithmech.core import results as results_io
from arithmech.core.models import load_model
from arithmech.core.progress import Progress
from arithmech.evals.suites import Suite
from arithmech.steps.config_training import Table1 as Config
from arithmech.table1.plan import (
    BRACKET_RULE,
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
from arithmech.table1.train import Run, same_record, train_arm
from arithmech.table1.train import args_hash as _hash

TAGS = {
    "full": "",
    "precise-key": "key",
    "precise-share": "share",
    "precise-random": "random",
    "precise-random-any": "random-any",
}


@dataclass
class Runner:
    """One Table 1 run with its plan as fields: the checked arguments (``c``, the suite ``S``, ``sizes``, ``arms``,
    ``data_seed``, the ``command`` recorded, the memory estimate ``est``, the folder ``out``), what was fixed before
    the first run (``heads``: every arm's heads; ``steps``: the step budget; ``curve``: the learning curve it came
    from, or None), and what grows as runs are made (``g``: each grid group's rates, ``ext``: its extensions,
    ``keep``: the rates it replicates, ``rows``: each arm's runs so far). :meth:`run` makes the runs in the module
    docstring's order, one method a phase."""

    c: Config
    S: Suite
    sizes: dict
    arms: list[str]
    data_seed: int
    command: str
    est: Any
    out: Path
    heads: dict
    steps: int
    curve: dict | None
    g: dict[str, list[float]]
    ext: dict[str, int] = field(default_factory=lambda: {"full": 0, "precise": 0})
    keep: dict[str, list[float]] = field(default_factory=dict)
    rows: dict[str, list[dict]] = field(default_factory=dict)
    t_start: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        self.seeds = list(self.c.seeds)
        self.keep = {grp: list(rates) for grp, rates in self.g.items()}
        self.rows = {a: [] for a in self.arms}
        self.common = dict(
            model=self.c.model_name,
            suite=self.c.suite,
            steps=self.steps,
            batch_size=self.c.batch_size,
            data_seed=self.data_seed,
            device=self.c.device,
            dtype=self.c.dtype,
            data_dir=str(self.c.data_dir),
            sizes=self.sizes,
        )
        self.base_hash = _hash({**self.common, "arm": "base"})
        self.shots_hash = _hash({**self.common, "arm": "base-shots", "shots": self.c.shots})

    # ---------------------------------------------------------------------------------- one run
    def heads_of(self, arm: str, draw: int | None) -> list[tuple[int, int]] | None:
        """The heads ``arm`` tunes (draw ``draw`` of a random arm); None for full SFT."""
        if arm in RANDOM:
            assert draw is not None, "a random arm's run names its draw"
            key = "random_draws" if arm == "precise-random" else "random_any_draws"
            return [tuple(h) for h in self.heads[key][draw]]
        return {"full": None, "precise-key": self.tuned, "precise-share": self.share}[arm]

    @property
    def tuned(self) -> list[tuple[int, int]]:
        return [tuple(h) for h in self.heads["tuned"]]

    @property
    def share(self) -> list[tuple[int, int]]:
        return [tuple(h) for h in self.heads["share"]]

    def args_hash(self, run: Run) -> str:
        """The hash of everything a run's record depends on (a record with the same hash is kept: resume)."""
        hs = self.heads_of(run.arm, run.draw)
        return _hash(
            {**self.common, "arm": run.arm, "lr": run.lr, "seed": run.seed, "heads": hs, "base": self.base_hash}
        )

    def made(self, run: Run) -> bool:
        """Whether this run's record exists with the same arguments (a cut rate keeps the runs made before it)."""
        return same_record(self.out, grid_of(run.arm), tag_of(run), self.args_hash(run))

    def evaluate(self, net, tok, shots: int) -> tuple[dict, dict]:
        """The validation and test scores (with ``shots`` solved examples before each carry item, where > 0)."""
        S, sizes, seed = self.S, self.sizes, self.data_seed
        if shots:
            assert S.shots is not None, "the suite has no solved examples"
            return S.shots(net, tok, "val", sizes, seed, shots), S.shots(net, tok, "test", sizes, seed, shots)
        ev = lambda side: S.evaluate(net, tok, side, sizes, seed, data_dir=self.c.data_dir)
        return ev("val"), ev("test")

    def record(self, mode: str, tag: str | None, trained: tuple, run: Run, started: float, shots: int = 0) -> None:
        """Evaluate the trained (or base) model and write ``finetune/<mode>[-tag].json``."""
        c, (net, tok, tr) = self.c, trained
        hs = None if mode == "base" else self.heads_of(run.arm, run.draw)
        t0 = time.time()
        val, test = self.evaluate(net, tok, shots)
        extra = (
            self.S.base_only(net, tok, self.sizes, self.data_seed, data_dir=c.data_dir)
            if mode == "base" and not shots and self.S.base_only
            else {}
        )
        eval_s = round(time.time() - t0, 1)
        base = None if mode == "base" else records.read_finetune(self.out, "base")
        h = {"base": self.base_hash, "shots": self.shots_hash}[tag or "base"] if mode == "base" else self.args_hash(run)
        rec = records.finetune_record(
            model=results_io.folder_name(c.model_name),
            mode=mode,
            tag=tag,
            command=self.command,
            seed=run.seed,
            device=c.device,
            dtype=c.dtype,
            heads=None if mode == "base" else ([list(x) for x in hs] if hs else "all"),
            mlps=[] if mode == "precise" else ("all" if mode == "full" else None),
            tuned_parameters=(tr or {}).get("tuned_parameters", 0),
            total_parameters=(tr or {}).get("total_parameters"),
            parameters={
                "arm": run.arm,
                "lr": run.lr,
                "draw": run.draw,
                "suite": c.suite,
                "steps": self.steps,
                "batch_size": c.batch_size,
                "data_seed": self.data_seed,
                "sizes": self.sizes,
                "args_sha256": h,
                "validation": val,
                "base_only": extra,
                "eval_s": eval_s,
                **({"shots": shots} if shots else {}),
            },
            train=tr,
            results=test,
            delta=None if base is None else records.paired_deltas(base["results"], test, run.seed),
            data={
                "suite": c.suite,
                "splits": "validation and test disjoint by operand pair and phrasing (arithmech.evals.suites)",
            },
            versions=provenance.versions(),
            wall_s=round(time.time() - started, 1),
        )
        records.write_finetune(self.out, rec, inputs=("key_heads.json", "effects.csv") if mode == "precise" else ())

    def run_one(self, run: Run, bar: Progress) -> None:
        """Train and record ``run`` unless its record exists with the same arguments; add its row either way."""
        assert run.lr is not None, "a trained run has a learning rate"
        mode, tag = "full" if run.arm == "full" else "precise", tag_of(run)
        fresh = not same_record(self.out, mode, tag, self.args_hash(run))
        if fresh:
            records.check_finetune_writable(records.finetune_path(self.out, mode, tag), self.c.overwrite)
            bar.note = f"{run.arm} seed {run.seed} lr {lr_tag(run.lr)}"
            started = time.time()
            hs = self.heads_of(run.arm, run.draw)
            trained = train_arm(self.c, self.S, hs, run.lr, run.seed, self.steps, self.data_seed)
            self.record(mode, tag, trained, run, started)
        bar.advance()
        val = records.read_finetune(self.out, mode, tag)["parameters"]["validation"]
        self.rows[run.arm].append(
            {
                "lr": run.lr,
                "seed": run.seed,
                "draw": run.draw,
                "tag": f"{mode}-{tag}",
                "val_math": val_math(val, self.S),
                "val_nll": val["math_nll"]["value"],
                "val_loss": (val.get("lm_loss") or {}).get("value", 0.0),
            }
        )
        if fresh:
            self.write_plan(False)

    # ---------------------------------------------------------------------------------- the plan
    def plan_arms(self) -> dict:
        """Each arm that has run: its grid, every run's row, the grid's extensions, its frontier rates, the rate the
        single-rate rule chooses and whether it is interior, and the runs at that rate."""
        out = {}
        for a in [a for a in self.arms if self.rows[a]]:
            grp, rows = grid_of(a), self.rows[a]
            lr = choose([r for r in rows if r["seed"] == self.seeds[0] and r["draw"] == 0])
            out[a] = {
                "grid": self.g[grp],
                "grid_rows": sorted(rows, key=lambda r: (r["lr"], r["draw"], r["seed"])),
                "extensions": self.ext[grp],
                "frontier_rates": frontier_rates(rows),
                "chosen_lr": lr,
                "interior": self.g[grp][0] < lr < self.g[grp][-1],
                "runs": [r["tag"] for r in rows if r["lr"] == lr],
            }
        return out

    def cap(self) -> str:
        """``""``, or where a random arm has fewer distinct head sets than ``--draws``: what it was capped at."""
        capped = {a: self.replicas(a) for a in RANDOM if self.replicas(a) < self.c.draws}
        if not capped:
            return ""
        return ", distinct; capped at the distinct head sets: " + ", ".join(f"{a} {n}" for a, n in capped.items())

    def rules(self) -> dict:
        """The rules the plan was made under, in words (bracketing, the single-rate choice, seeds, the cut)."""
        c, seeds = self.c, self.seeds
        return {
            "bracket": BRACKET_RULE,
            "single_rate": RULE,
            "seeds": f"every rate: {len(seeds)} seeds (random arms: {c.draws} draws{self.cap()}); frontier rates: "
            f"{max(c.frontier_seeds, len(seeds))}",
            "cut": "none: every rate of a grid is replicated"
            if c.replicate_ends
            else "--no-replicate-ends: a bracketed grid's two end rates keep their first run and get "
            "no further seeds, draws or frontier seeds (made before the cut: kept); the rules "
            "read a point from 3 runs, so they decide on the interior rates",
        }

    def cost(self, plan_arms: dict) -> dict:
        """What each run cost where it ran (its record's wall clock) and in all, the learning curve included."""
        every = (
            ["base"]
            + (["base-shots"] if self.S.shots else [])
            + [r["tag"] for a in plan_arms.values() for r in a["grid_rows"]]
        )
        run_s = {t: records.read_tag(self.out, t).get("wall_s") for t in every}
        curve_s = (self.curve or {}).get("wall_s")
        return {
            "runs": len(every),
            "run_s": run_s,
            "curve_s": curve_s,
            "total_s": round(sum(v or 0 for v in run_s.values()) + (curve_s or 0), 1),
            "machine": "what each run cost where it ran (run_s: training + evaluation; curve_s: the learning curve)",
        }

    def write_plan(self, complete: bool) -> dict:
        """``finetune/table1.json`` from the runs so far (``complete``: every planned run is done); written after
        each new run too, so an interrupted table is readable and its records committed with it."""
        c, plan_arms = self.c, self.plan_arms()
        plan = {
            "suite": c.suite,
            "model": results_io.folder_name(c.model_name),
            "command": self.command,
            "complete": complete,
            "rules": self.rules(),
            "replicated": {grp: self.keep[grp] for grp in ("full", "precise")},
            "rule": RULE,
            "seeds": self.seeds,
            "draws": c.draws,
            "frontier_seeds": c.frontier_seeds,
            "data_seed": self.data_seed,
            "steps": self.steps,
            "steps_from": "the learning curve's knee" if self.curve else "--steps",
            "batch_size": c.batch_size,
            "sizes": self.sizes,
            "shots": c.shots,
            "heads": self.heads,
            "arms": plan_arms,
            "runs": ["base"] + [t for a in plan_arms.values() for t in a["runs"]],
            "cost": self.cost(plan_arms),
        }
        results_io.write_step(
            self.out,
            "table1",
            {"finetune/table1.json": plan},
            record={
                "parameters": {k: v for k, v in plan.items() if k not in ("arms", "runs")},
                "wall_s": round(time.time() - self.t_start, 1),
                "versions": provenance.versions(),
                "peak_memory": provenance.peak_memory(),
                "estimate": self.est.record() if self.est else None,
            },
        )
        return plan

    # ---------------------------------------------------------------------------------- the phases
    def replicas(self, arm: str) -> int:
        """How many runs each rate of ``arm`` gets: its distinct draws (random arms: ``--draws``, capped at the distinct
        head sets the draw rule can make, :func:`arithmech.table1.plan.distinct_draws`) or its seeds."""
        if arm in RANDOM:
            return len(self.heads["random_draws" if arm == "precise-random" else "random_any_draws"])
        return len(self.seeds)

    def members(self, grp: str) -> list[str]:
        return [a for a in self.arms if grid_of(a) == grp]

    def base_runs(self, bar: Progress) -> None:
        """The base model, and with ``shots`` solved examples (where the suite has them), unless already recorded."""
        c = self.c
        for tag, h, shots in ((None, self.base_hash, 0), ("shots", self.shots_hash, c.shots)):
            if shots and self.S.shots is None:
                continue
            if not same_record(self.out, "base", tag, h):
                records.check_finetune_writable(records.finetune_path(self.out, "base", tag), c.overwrite)
                started = time.time()
                net, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
                run = Run("base" if not shots else "base-shots", None, self.seeds[0], None)
                self.record("base", tag, (net, tok, None), run, started, shots)
            bar.advance()

    def bracket(self, bar: Progress) -> None:
        """Every rate at the first seed (first draw), each grid extended until it is bracketed, then the rates each
        grid replicates fixed (the ends cut only where ``--no-replicate-ends`` and the grid is bracketed)."""
        base_val = val_math(records.read_finetune(self.out, "base")["parameters"]["validation"], self.S)
        for a in self.arms:
            for lr in self.g[grid_of(a)]:
                self.run_one(Run(a, lr, self.seeds[0], 0), bar)
        for grp in ("full", "precise"):
            members = self.members(grp)
            while members and self.ext[grp] < self.c.max_extend:
                side = next((s for a in members if (s := bracket_side(self.rows[a], base_val))), None)
                new = extension(self.g[grp], side) if side else None
                if new is None:
                    break
                self.g[grp], self.ext[grp] = sorted(self.g[grp] + [new]), self.ext[grp] + 1
                bar.total += len(members) * max(self.replicas(a) for a in members)
                for a in members:
                    self.run_one(Run(a, new, self.seeds[0], 0), bar)
        for grp in ("full", "precise"):
            members = self.members(grp)
            closed = bool(members) and not any(bracket_side(self.rows[a], base_val) for a in members)
            self.keep[grp] = replicated(self.g[grp], closed, self.c.replicate_ends)

    def round_(self, i: int, bar: Progress) -> None:
        """Every arm's ``i``-th seed (random arms: draw ``i``) at every rate it replicates (a cut rate: only a run
        made before the cut)."""
        for a in self.arms:
            if i < self.replicas(a):
                seed, draw = (self.seeds[i % len(self.seeds)], i) if a in RANDOM else (self.seeds[i], 0)
                for lr in self.g[grid_of(a)]:
                    run = Run(a, lr, seed, draw)
                    if lr in self.keep[grid_of(a)] or self.made(run):
                        self.run_one(run, bar)
                    else:
                        bar.advance()

    def frontier_seeds(self, bar: Progress) -> None:
        """The seeded arms' frontier rates (final once every seed has run) up to ``frontier_seeds`` seeds."""
        extra = [max(self.seeds) + 1 + j for j in range(max(0, self.c.frontier_seeds - len(self.seeds)))]
        for a in [a for a in self.arms if a not in RANDOM]:
            front = [lr for lr in frontier_rates(self.rows[a]) if lr in self.keep[grid_of(a)]]
            bar.total += len(front) * len(extra)
            for fs in extra:
                for lr in front:
                    self.run_one(Run(a, lr, fs, 0), bar)

    def run(self) -> dict:
        """Every phase in order (module docstring); returns the complete plan."""
        n_runs = 2 + sum(len(self.g[grid_of(a)]) * self.replicas(a) for a in self.arms)
        with Progress("table1", n_runs) as bar:
            self.base_runs(bar)
            self.bracket(bar)
            for i in range(1, len(self.seeds)):  # the other seeds (and as many draws), in balanced rounds
                self.round_(i, bar)
            self.frontier_seeds(bar)
            for i in range(len(self.seeds), max(self.replicas(a) for a in self.arms)):  # the random arms' other draws
                self.round_(i, bar)
        return self.write_plan(True)


def tag_of(run: Run) -> str:
    """A run's tag: ``<arm>[draw]-s<seed>-lr<rate>`` (full SFT: ``s<seed>-lr<rate>``)."""
    arm = run.arm
    assert run.lr is not None, "a trained run has a learning rate"
    return (f"{TAGS[arm]}{run.draw if arm in RANDOM else ''}-" if TAGS[arm] else "") + f"s{run.seed}-lr{lr_tag(run.lr)}"
