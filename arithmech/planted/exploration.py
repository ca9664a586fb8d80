"""The planted model's Table 1 exploration records (``results/planted/exploration/``), read once and checked.

No rule decides them; the Planted chapter quotes them (:func:`arithmech.planted.exploration_page.exploration`), and
their README says how each was made. :meth:`Exploration.load` reads:

* the learning curves of full SFT on the ``planted`` suite, one per rate: ``curve.json`` (the 1e-3 curve, the middle
  of full's grid, the one the budget rule reads) and ``curve_lr<rate>.json`` (the sweep), each beside the ``run.json``
  of the scratch folder it was made in (``curve_run.json``, ``curve_lr<rate>_run.json``), whose sha256 of the curve
  the copy must match;
* ``truth_after_tune.json``: whether the construction survives 320 steps of each kind of arm;
* ``first_step.json``: AdamW's first update alone, by its size (where it exists).

    >>> x = Exploration.load()
    >>> sorted(x.curves)                   # the rates: 1e-07 ... 0.001, both sweeps and the 1e-3 curve
    >>> x.curves[1e-3].points[0]["val_math"]
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from arithmech.core.results import ResultsError
from arithmech.core.stats import t_interval, wilson_interval
from arithmech.data import planted_items
from arithmech.table1.frontier import SCOPE_GAIN
from arithmech.table1.train import bend
from arithmech.table1.verdicts import COLLAPSE

EXPLORATION = Path(__file__).resolve().parents[2] / "results" / "planted" / "exploration"
"""Where the exploration records are shipped."""

_SWEEP = re.compile(r"^curve_lr(?P<rate>[0-9.e+-]+)\.json$")

AFTER_FIRST_STEP = (1e-7, 3e-7, 1e-6, 3e-6)
"""The second sweep's rates, chosen after ``first_step.json`` was read (the README's second design): exploration."""


@dataclass(frozen=True)
class Curve:
    """One learning curve: its ``lr``; ``points`` (per scored step: ``step``, ``val_math``, ``val_items`` one 0/1 per
    validation cluster, ``val_fig8``, ``val_nll``, and ``train_loss`` where the run logged it); the ``knee`` it
    recorded; the ``command`` that made it and its ``wall_s``."""

    lr: float
    points: list[dict]
    knee: int | None
    command: str
    wall_s: float


@dataclass(frozen=True)
class Exploration:
    """The records (module docstring): ``curves`` (rate → :class:`Curve`), ``truth`` (``truth_after_tune.json``),
    ``first_step`` (``first_step.json``, or None)."""

    curves: dict[float, Curve]
    truth: dict
    first_step: dict | None

    @classmethod
    def load(cls, folder: str | Path = EXPLORATION) -> Exploration:
        """Read and check every record of ``folder``: a curve whose bytes its ``run.json`` did not hash is refused."""
        f = Path(folder)
        names = ["curve.json"] + sorted(p.name for p in f.glob("curve_lr*.json") if _SWEEP.match(p.name))
        curves = {}
        for name in names:
            c = _checked_curve(f / name, f / name.replace(".json", "_run.json"))
            if c.lr in curves:
                raise ResultsError(f"{f / name}: a second curve at rate {c.lr:g}")
            curves[c.lr] = c
        first = f / "first_step.json"
        return cls(
            curves=dict(sorted(curves.items())),
            truth=json.loads((f / "truth_after_tune.json").read_text()),
            first_step=json.loads(first.read_text()) if first.exists() else None,
        )


def _checked_curve(path: Path, run: Path) -> Curve:
    """The curve at ``path``, refused unless ``run`` (its folder's ``run.json``) hashed these very bytes."""
    data = path.read_bytes()
    steps = json.loads(run.read_text())["steps"]["curve"]
    if hashlib.sha256(data).hexdigest() != steps["files"]["finetune/curve.json"]:
        raise ResultsError(f"{path}: not the curve {run.name} hashed (copied from another run, or edited)")
    c = json.loads(data)
    if float(c["lr"]) != float(steps["parameters"]["lr"]):
        raise ResultsError(f"{path}: rate {c['lr']} but {run.name} records {steps['parameters']['lr']}")
    return Curve(float(c["lr"]), c["points"], c["knee"], c["command"], float(steps["wall_s"]))


@dataclass(frozen=True)
class Reading:
    """One curve read by the sweep's design (the exploration README; the existing rules on one run): ``n`` validation
    clusters; ``base`` and ``best`` new-skill exact match (``best``: the highest point, at ``best_step``, a maximum
    chosen after the fact) with Wilson intervals; ``kept`` Fig. 8 retention at ``best_step`` with its Wilson interval;
    ``last`` the last point; ``bend`` the budget (:data:`arithmech.table1.train.BEND_RULE`, None: none);
    ``gain`` the new skill's change from step 0 to ``bend`` (paired 95 % t interval over the clusters) and ``scope``
    whether its lower end clears :data:`arithmech.table1.frontier.SCOPE_GAIN`; ``collapse_line`` retention's collapse
    line (chance + COLLAPSE x (base - chance), :data:`arithmech.table1.verdicts.COLLAPSE`) and ``kept_at_bend``
    whether retention's Wilson upper end at ``bend`` reaches it (``kept_at_end``: at the last point);
    ``candidate``: budget, scope and no collapse."""

    n: int
    base: tuple[float, float, float]
    best: tuple[float, float, float]
    best_step: int
    kept: tuple[float, float, float]
    last: dict
    bend: int | None
    gain: tuple[float, float, float] | None
    scope: bool
    collapse_line: float
    kept_at_bend: bool
    kept_at_end: bool
    candidate: bool


def read_curve(c: Curve) -> Reading:
    """:class:`Reading` of ``c``: every number from its points and the package's rules, none typed here."""
    kept_items = planted_items.retention_items("val")
    n, n_kept = len(c.points[0]["val_items"]), len(kept_items)
    chance = planted_items.side_chance("val", kept_items)

    def acc(v: float, m: int) -> tuple[float, float, float]:
        return (v, *wilson_interval(round(v * m), m))

    by = {p["step"]: p for p in c.points}
    base, best = by[0], max(c.points, key=lambda p: (p["val_math"], -p["step"]))
    line = chance + COLLAPSE * (base["val_fig8"] - chance)
    s = bend(c.points)
    gain = t_interval([b - a for a, b in zip(base["val_items"], by[s]["val_items"])]) if s is not None else None
    scope = gain is not None and gain[1] > SCOPE_GAIN
    kept_at_bend = s is not None and acc(by[s]["val_fig8"], n_kept)[2] >= line
    return Reading(
        n=n,
        base=acc(base["val_math"], n),
        best=acc(best["val_math"], n),
        best_step=best["step"],
        kept=acc(best["val_fig8"], n_kept),
        last=c.points[-1],
        bend=s,
        gain=gain,
        scope=scope,
        collapse_line=line,
        kept_at_bend=kept_at_bend,
        kept_at_end=acc(c.points[-1]["val_fig8"], n_kept)[2] >= line,
        candidate=s is not None and scope and kept_at_bend,
    )
