"""The Table 1 runner, on any model: every arm over a whole learning-rate grid, with seeds and draws.

The paper's claim (§5.3, Table 1): tuning *the identified heads* improves math about as much as tuning every
parameter and keeps general skills. To test it, and not only restate it, the runner makes every run the
verdicts of :mod:`arithmech.table1.verdicts` read, decided over whole curves rather than at one chosen rate:

* **arms** — ``base`` and ``base-shots`` (no training: the base model, and the base model with K solved
  examples before each carry item, which separates the answer *format* from the arithmetic); ``full`` (every
  parameter); ``precise-key`` (the top ``k`` of the paper's ranking); ``precise-share`` (the heads the share
  rule names, filled up by share rank); ``precise-random`` (layer-matched random heads) and
  ``precise-random-any`` (random heads of any layer), both sharing **no tuned parameter** with the key or share
  arm, grouped-query attention included (:mod:`arithmech.table1.plan`);
* **grids** — full SFT has its own grid, the precise arms share one (matched rates); each is extended until it
  is bracketed (:mod:`arithmech.table1.plan`, validation scores only);
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
(:mod:`arithmech.table1.plan`), the grids and the chosen rate (:mod:`arithmech.table1.plan`), one run's
training and record and the learning curve (:mod:`arithmech.table1.train`), and the
:class:`~arithmech.table1.runner.Runner` that makes the runs in this order, its plan as fields.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from arithmech.core import admission, records
from arithmech.core import results as results_io
from arithmech.core.config import command_line
from arithmech.core.progress import announce
from arithmech.evals.measures import table1_sizes
from arithmech.evals.suites import CLOZE_SETS, Suite, get_suite
from arithmech.steps.config_training import Table1 as Config
from arithmech.table1 import plan as heads_mod
from arithmech.table1.plan import (
    ARMS,
    GRIDS,
    PRECISE,
)
from arithmech.table1.runner import Runner
from arithmech.table1.train import check_records, learning_curve


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


def _run(c: Config, S: Suite, sizes, grid, arms, data_seed, command, est) -> dict:
    """:func:`run` once its arguments are checked and its estimate made: every input checked before anything is
    written (the learning curve included), the curve made where no ``--steps`` is given, then the :class:`Runner`."""
    out = results_io.model_folder(c.results, c.model_name)
    heads = None
    if not c.curve_only:
        check_records(out)
        heads = heads_mod.plan_heads(out, c.model_name, c.top_k, c.draws)
    curve = learning_curve(c, data_seed) if c.curve_only or c.steps is None else None
    if c.curve_only:
        return {"curve": curve}
    assert heads is not None and (c.steps is not None or curve is not None)
    if c.steps is None and curve["knee"] is None:  # type: ignore[index]
        raise ValueError(
            f"the learning curve ({c.curve_steps} steps) has not bent ({curve['rule']}): extend it with a longer "  # type: ignore[index]
            "--curve-steps before any Table 1 run"
        )
    runner = Runner(
        c=c,
        S=S,
        sizes=sizes if sizes is not None else {"single_digit_per_template": 4},
        arms=[a for a in ARMS if a in arms],
        data_seed=data_seed,
        command=command or command_line("table1", c),  # a chapter's run: the command that makes the same files
        est=est,
        out=out,
        heads=heads,
        steps=c.steps if c.steps is not None else curve["knee"],  # type: ignore[index]
        curve=curve,
        g={"full": list(grid["full"]), "precise": list(grid[PRECISE[0]])},
    )
    return runner.run()


def summary(plan: dict) -> str:
    """The command line's summary of :func:`run`' plan: the learning curve's knee, or each arm's chosen rate."""
    if "curve" in plan:
        return json.dumps({"knee": plan["curve"]["knee"], "points": len(plan["curve"]["points"])})
    return json.dumps({arm: {"lr": v["chosen_lr"], "interior": v["interior"]} for arm, v in plan["arms"].items()})
