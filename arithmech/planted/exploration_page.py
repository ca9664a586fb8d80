"""The Planted chapter's exploration section: the learning-rate sweeps and AdamW's first update, from
:class:`~arithmech.planted.exploration.Exploration` (no rule decides them; every number is read from its files)."""

from __future__ import annotations

import re

import pandas as pd

from arithmech.core.stats import wilson_interval
from arithmech.planted.exploration import AFTER_FIRST_STEP, Exploration, read_curve


def exploration(x: Exploration) -> list[str]:
    """The Table 1 section's exploration (:class:`~arithmech.planted.exploration.Exploration`): the 1e-3 curve's
    first and last points (new skill, Fig. 8 retention, validation loss) and whether the bend rule found a budget;
    per tuned arm of the construction check, its rate and the largest attention a blind or off head puts on a
    forbidden token."""
    curve = x.curves[1e-3]
    first, last = curve.points[0], curve.points[-1]
    lines = [
        f"Learning curve (full SFT at {curve.lr:g}, {len(curve.points)} points, {curve.wall_s:.0f} s): validation new "
        f"skill {first['val_math']:.1%} at step {first['step']} -> {last['val_math']:.1%} at step {last['step']}; "
        f"Fig. 8 retention on the validation clusters {first['val_fig8']:.1%} -> {last['val_fig8']:.1%}; "
        f"validation loss {first['val_nll']:.1f} -> {last['val_nll']:.1f} nats; budget: "
        + ("none (no step the bend rule accepts)" if curve.knee is None else f"{curve.knee} steps")
    ]
    for arm, t in x.truth.items():
        if t["lr"] is None:
            continue
        fa = t["forbidden_attention_max"]
        named = re.sub(r"(\d+\.\d+)", r"head \1", arm)  # "blind 1.0, 1.1" reads as numbers: "blind head 1.0, head 1.1"
        lines.append(
            f"Construction after {t['steps']} steps, {named} at {t['lr']:g}: forbidden attention "
            f"blind {fa['blind']:.2g}, off {fa['off']:.2g}; "
            f"largest non-planted output change {t['nonplanted_output_change_max']:.2g}"
        )
    return lines


def _acc(v: tuple[float, float, float]) -> str:
    return f"{v[0]:.1%} [{v[1]:.1%}, {v[2]:.1%}]"


def sweep(x: Exploration) -> pd.DataFrame:
    """Full SFT's learning curve at every rate explored, both sweeps in one table, one row a rate in order
    (:func:`arithmech.planted.exploration.read_curve`): when the rate was chosen (:data:`~arithmech.planted.
    exploration.AFTER_FIRST_STEP`), the new skill at step 0 and at its best point (Wilson, n validation clusters),
    retention there, the last point's losses, the bend rule's budget, the gain at the bend (paired 95 % t interval)
    and the three tests ("-": no bend to read them at)."""
    rows = []
    for lr, c in x.curves.items():
        r = read_curve(c)
        train = r.last.get("train_loss")
        rows.append(
            {
                "rate": f"{lr:g}",
                "chosen": "after first step" if lr in AFTER_FIRST_STEP else "before",
                "n": r.n,
                "new skill, step 0": _acc(r.base),
                "best new skill (step)": f"{_acc(r.best)} ({r.best_step})",
                "retention there": _acc(r.kept),
                "last loss, val / train (step)": f"{r.last['val_nll']:.2f} / "
                + ("not logged" if train is None else f"{train:.2f}")
                + f" ({r.last['step']})",
                "bend (budget)": "none" if r.bend is None else str(r.bend),
                "gain at bend": "-" if r.gain is None else _acc(r.gain),
                "scope": "-" if r.bend is None else "yes" if r.scope else "no",
                "retention kept": "-" if r.bend is None else "yes" if r.kept_at_bend else "no",
                "candidate": "yes" if r.candidate else "no",
            }
        )
    return pd.DataFrame(rows)


def sweep_line(x: Exploration) -> str:
    """What the sweep shows, in one sentence computed from :func:`sweep`'s readings."""
    readings = {lr: read_curve(c) for lr, c in x.curves.items()}
    rates = ", ".join(f"{lr:g}" for lr in readings)
    yes = [f"{lr:g}" for lr, r in readings.items() if r.candidate]
    bent = [f"{lr:g} (step {r.bend})" for lr, r in readings.items() if r.bend is not None]
    if yes:
        after = [f"{lr:g}" for lr, r in readings.items() if r.candidate and lr in AFTER_FIRST_STEP]
        fallen = [f"{lr:g}" for lr, r in readings.items() if r.candidate and not r.kept_at_end]
        line = next(iter(readings.values())).collapse_line
        return (
            f"At {', '.join(f'{lr:g} (budget {r.bend} steps)' for lr, r in readings.items() if r.candidate)} of "
            f"{rates}, full SFT has a budget, learns the new skill past the scope gate's margin, and Fig. 8 retention "
            f"is not shown to collapse there (its Wilson upper end at or above the collapse line, {line:.1%}): a "
            "candidate, one run each"
            + (f" ({', '.join(after)} chosen after the first-step diagnosis)" if after else "")
            + "; by the last point retention has fallen under the line at "
            + (", ".join(fallen) if fallen else "none of them")
            + "."
            + (
                " Every candidate is a rate chosen after the diagnosis, which read the same 53 validation clusters "
                "the sweep is read on: those clusters are spent on choosing rates."
                if len(after) == len(yes)
                else ""
            )
            + " Only a later, versioned planted-table1 rule set could turn a candidate into full SFT's grid and "
            "budget, confirmed on fresh clusters and several seeds; the precise arms' rates would need their own "
            "grid, and an arms run (several runs at a grid rate) would have to confirm it."
        )
    r0 = next(iter(readings.values()))
    lift = max(r.best[0] - r.base[0] for r in readings.values())
    fell = sum(not r.kept_at_end for r in readings.values())
    return (
        f"No rate of {rates} is a candidate: the bend rule gives a budget at "
        + (", ".join(bent) if bent else "none of them")
        + f"; the best point of any curve lies {100 * lift:+.1f} points from step 0's new skill ({r0.n} clusters), and "
        f"at the last point Fig. 8 retention is under the collapse line ({r0.collapse_line:.1%}, Wilson upper end) at "
        f"{fell} of {len(readings)} rates. The toy's Table 1 stays not runnable at these rates."
    )


KEYS = ("val_math", "val_fig8")


def first_step(x: Exploration) -> pd.DataFrame:
    """AdamW's first update alone, by its size (``first_step.json``): the validation new skill and retention (Wilson,
    n clusters), the validation loss and the largest forbidden attention (blind, off, composer heads)."""

    rows = []
    for size, r in (x.first_step or {}).get("step_sizes", {}).items():
        acc = {k: (r[k], *wilson_interval(sum(r[f"{k}_items"]), len(r[f"{k}_items"]))) for k in KEYS}
        rows.append(
            {
                "step size": size,
                "n": len(r["val_math_items"]),
                "new skill": _acc(acc["val_math"]),
                "retention": _acc(acc["val_fig8"]),
                "val loss": f"{r['val_nll']:.2f}",
                "forbidden attention (max)": f"{max(r['forbidden_attention_max'].values()):.2g}",
            }
        )
    return pd.DataFrame(rows)


def first_step_line(x: Exploration, top: int = 3) -> str:
    """The parameter tensors whose share of that first update (at ``per_tensor_at``) moves the validation loss most."""
    f = x.first_step
    if not f:
        return "first_step.json is not shipped."
    base = f["step_sizes"]["0"]["val_nll"]
    worst = sorted(f["per_tensor_val_nll"].items(), key=lambda kv: -kv[1])[:top]
    return (
        f"The update at {f['per_tensor_at']:g} applied to one tensor at a time (validation loss {base:.2f} untouched): "
        + "; ".join(f"{name} {v:.2f}" for name, v in worst)
        + f"; {sum(v <= base + 0.01 for v in f['per_tensor_val_nll'].values())} of {len(f['per_tensor_val_nll'])} "
        "tensors move it by 0.01 or less."
    )
