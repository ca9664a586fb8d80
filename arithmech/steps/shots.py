"""How many solved examples (``shots``) identify puts before its prompts, chosen on the yield alone.

Identify patches only the prompts a model answers right (X_r) and whose counterfactual moves the answer
away; a weak calculator leaves it few. :mod:`arithmech.data.shots` writes K solved examples of mixed
operations before every X_r and X_c. This step measures, for each K of a grid, what that does to the
**yield** on a *validation* draw (its own seed, never the draw identify patches), per operation:

    drawn ──► answer token right ──► whole answer right (greedy) ──► X_c moves the answer ──► kept

with Wilson 95% intervals, and picks K by a rule that reads only those counts — never an effect, a key
head or a knockout. The rule (:func:`choose`, fixed before any run):

1. ``floor(K)`` = the smallest kept rate over the four operations (identify needs every operation);
2. the best K has the highest ``floor``; every K whose weakest operation's Wilson interval reaches the best
   floor's point estimate is as good as the best (the draw cannot tell them apart);
3. among those, the **smallest** K: shorter prompts, closer to the paper's zero-shot prompts, cheaper.

An operation the model "can do" at K keeps at least 5% of its draws (Wilson lower bound): identify then
reaches 256 X_r with at most ~5,000 draws. ``shots.csv`` holds the counts; ``run.json`` the rule's choice.

>>> python -m arithmech shots --model smollm2-135m            # results/smollm2-135m/shots.csv
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import pandas as pd

from arithmech.core import admission, results
from arithmech.core.models import load_model
from arithmech.core.progress import Progress, announce
from arithmech.core.stats import wilson_interval
from arithmech.data import pairs
from arithmech.data import shots as shots_module
from arithmech.data.draw import Draw
from arithmech.methods.prepare import NoReferenceData, prepare
from arithmech.prompts.config import Shots as Config

CAN_DO = 0.05  # an operation the model can do at K: the kept rate's Wilson lower bound reaches this
RULE = (
    "K = the smallest value of the grid whose weakest operation's kept rate (Wilson 95% upper bound) reaches "
    "the highest weakest-operation kept rate of the grid (point estimate); kept = answer token and whole "
    "answer right, X_c moves the answer; measured on a validation draw, never on identify's"
)


def validation_seed(seed: int) -> int:
    """The validation draw's seed: a stream of its own, so identify's draw (``seed``) is never the one K is chosen
    on."""
    return zlib.crc32(f"shots-validation:{seed}".encode())


def yield_table(
    model,
    tok,
    grid=(0, 2, 4, 8),
    n_per_template: int = 12,
    seed: int = 0,
    batch_size: int = 64,
    *,
    answer_token: str,
    example_sets: int,
) -> pd.DataFrame:
    """One row per (shots, operation), each K's pairs drawn with ``Draw(answer_token, K, example_sets)``
    (:class:`arithmech.data.draw.Draw`): ``drawn, token_correct, exact_correct, correct`` (both), ``xc_valid``
    (of the correct, X_c moves the top-1 token away), ``kept`` and each rate of the drawn with its Wilson
    interval (``kept_rate, kept_lo, kept_hi``), and the kept prompts' most frequent answer token's share."""
    rows = []
    with Progress("shots", len(grid) * len(pairs.TASKS)) as bar:
        for k in grid:
            for op in pairs.TASKS:
                n = n_per_template * len(pairs.select_templates(op))
                try:
                    kept, info = prepare(
                        model, tok, op, n, validation_seed(seed), batch_size, draw=Draw(answer_token, k, example_sets)
                    )
                except NoReferenceData as e:  # nothing kept: a yield of zero, with its counts
                    kept, info = [], e.info
                answers = pd.Series([s.answer for s in kept])
                row = {
                    "shots": k,
                    "op": op,
                    "drawn": n,
                    "token_correct": info["n_correct"],
                    "correct": info["n_exact_correct"],
                    "xc_valid": info["counterfactual_check"]["passed"],
                    "kept": info["n_kept"],
                    "top_share": float(answers.value_counts().iloc[0] / len(answers)) if len(answers) else float("nan"),
                }
                for what in ("token_correct", "correct", "kept"):
                    lo, hi = wilson_interval(row[what], n)
                    row[f"{what}_rate"], row[f"{what}_lo"], row[f"{what}_hi"] = row[what] / n, lo, hi
                rows.append(row)
                bar.advance(note=f"shots {k} {op}: kept {row['kept']} of {n}")
    return pd.DataFrame(rows)


def choose(table: pd.DataFrame) -> dict:
    """The rule of the module docstring, applied to :func:`yield_table`'s rows: ``{"shots", "floors", "rule",
    "can_do"}`` (``floors[K]`` = the weakest operation, its kept rate and interval; ``can_do[K]`` = the
    operations whose kept rate's lower bound reaches :data:`CAN_DO`)."""
    floors, can_do = {}, {}
    for k, g in table.groupby("shots", sort=True):
        w = g.loc[g.kept_rate.idxmin()]
        floors[int(k)] = {
            "op": w.op,
            "kept_rate": float(w.kept_rate),
            "kept_lo": float(w.kept_lo),
            "kept_hi": float(w.kept_hi),
        }
        can_do[int(k)] = [op for op, lo in zip(g.op, g.kept_lo) if lo >= CAN_DO]
    best = max(f["kept_rate"] for f in floors.values())
    tied = [k for k, f in sorted(floors.items()) if f["kept_hi"] >= best]
    return {"shots": tied[0], "best_floor": best, "tied": tied, "floors": floors, "can_do": can_do, "rule": RULE}


def recorded(config: Config) -> dict:
    """What ``run.json`` records of a run made with ``config`` (the parameters a reused table must match)."""
    c = config
    return {
        "grid": list(c.grid),
        "n_per_template": c.n_per_template,
        "seed": c.seed,
        "validation_seed": validation_seed(c.seed),
        "answer_token": c.answer_token,
        **shots_module.recorded(max(c.grid), c.example_sets),
    }


@dataclass(frozen=True)
class Result:
    """The shots step's file as a run made with ``config`` wrote it (:func:`read`; what
    :func:`arithmech.pipeline.ensure.ensure` returns for a :class:`Shots` config):

    * ``table`` — ``shots.csv`` (checked): the yield per K and operation, with Wilson intervals;
    * ``shots``, ``best_floor``, ``tied``, ``floors``, ``can_do``, ``rule`` — :func:`choose`'s keys, the rule
      applied to ``table`` (the K it picks, the best floor, the Ks tied with it, each K's weakest operation, the
      operations the model can do per K, the rule's words);
    * ``config`` — the config the file was made with (or reused for)."""

    config: Config
    table: pd.DataFrame
    shots: int
    best_floor: float
    tied: list[int]
    floors: dict[int, dict]
    can_do: dict[int, list[str]]
    rule: str


def read(folder, config: Config) -> Result:
    """``folder``'s ``shots.csv`` (checked) and :func:`choose`'s choice on it, as the :class:`Result` of a run made
    with ``config``."""
    table = results.read(folder, "shots.csv")
    return Result(config=config, table=table, **choose(table))


def summary(choice: Result) -> str:
    """The command line's summary: each K's weakest operation and what the model can do, and the K chosen."""
    lines = [
        f"shots {k}: weakest operation {f['op']} keeps {f['kept_rate']:.1%} [{f['kept_lo']:.1%}, {f['kept_hi']:.1%}]; "
        f"can do: {', '.join(choice.can_do[k]) or 'none'}"
        for k, f in choice.floors.items()
    ]
    return "\n".join(lines + [f"chosen: shots = {choice.shots} ({choice.rule})"])


def run(config: Config, model=None, tok=None) -> Result:
    """Measure the yield for every K of ``config.grid``, write ``shots.csv`` and the choice (run.json's
    ``shots`` step) to the model's folder; returns the :class:`Result` read back from them (:func:`read`)."""
    c = config
    folder = results.model_folder(c.results, c.model_name)
    results.check_writable(folder, "shots", c.overwrite)
    est = admission.check(c)  # refused here when it cannot fit, before the model loads
    if model is None:
        model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
    announce("shots", est.line() if est else "")
    table = yield_table(
        model,
        tok,
        c.grid,
        c.n_per_template,
        c.seed,
        c.batch_size,
        answer_token=c.answer_token,
        example_sets=c.example_sets,
    )
    choice = choose(table)
    results.write_step(folder, "shots", {"shots.csv": table}, {"parameters": recorded(c), "choice": choice})
    return read(folder, c)
