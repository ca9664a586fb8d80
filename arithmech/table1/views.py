"""Table 1's views for the Fine-tune chapter and the SmolLM2 appendix: what an arms run decided and cost.

Each function reads one model's arms run (:class:`~arithmech.table1.result.Table1Result`: its plan, its records,
full SFT's learning curve) and returns a frame, a chart or a line of text; nothing here trains or scores a model.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.core.names import components
from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN, integer_axis
from arithmech.table1 import verdicts
from arithmech.table1.curve import KNEE as KNEE_SHARE
from arithmech.table1.detectable import design_runs
from arithmech.table1.frontier import MIN_RUNS, curves_of
from arithmech.table1.grid import ARMS, grid_of
from arithmech.table1.heads import layer_offsets
from arithmech.table1.result import Table1Result


def _draws_run(p: dict, arm: str) -> list[int]:
    """The draws of a random ``arm`` run at every rate the plan gives draws (not only at some), in order."""
    a = p["arms"].get(arm) or {}
    rates = (p.get("replicated") or {}).get("precise", a.get("grid") or [])
    at = [{r.get("draw", 0) for r in a.get("grid_rows") or [] if r["lr"] == lr} for lr in rates]
    return sorted(set.intersection(*at)) if at else []


def _span(xs: list[int]) -> str:
    """``0–8`` for consecutive numbers, else the list (``0, 1, 3``)."""
    if len(xs) > 1 and xs == list(range(xs[0], xs[-1] + 1)):
        return f"{xs[0]}–{xs[-1]}"
    return ", ".join(map(str, xs))


def setup_line(t: Table1Result) -> str:
    """One paragraph: the tuned heads (and how they were chosen), the random draws and how closely their layers
    match, the step budget and where it came from, the seeds, and what the run cost (and on what)."""
    p = t.plan
    h = p["heads"]
    fmt = components
    offsets = [layer_offsets(h["tuned"], d) for d in h["random_draws"]]
    exact = sorted({o.count(0) for o in offsets})
    far = max((max(o) for o in offsets), default=0)
    matched = (
        "each head paired with a tuned head of its own layer"
        if far == 0
        else f"{exact[0]}{f'–{exact[-1]}' if len(exact) > 1 else ''} of {len(h['tuned'])} heads of each draw paired "
        f"with a tuned head of their own layer, the others up to {far} layer{'s' if far > 1 else ''} away (a layer "
        "whose key/value groups the key or share heads all read has no free head; the nearest layer with one stands "
        "in)"
    )
    # the draws listed are precise-random's (``random_draws``): its own runs say how far they are, not random-any's;
    # a draw counts as run where it is run at every rate the plan gives draws (not only at some)
    pr, pa = (_draws_run(p, a) for a in ("precise-random", "precise-random-any"))
    short = [
        f"{name}{_span(d)}"
        for name, d in (("draws ", pr), ("precise-random-any's ", pa))
        if d and len(d) < len(offsets) and (name == "draws " or d != pr)
    ]
    ran = f", {' and '.join(short)} run at every rate so far" if short else ""
    cost = p.get("cost") or {}
    trained = sum(len(a.get("grid_rows") or []) for a in p["arms"].values())
    made = [f"{trained} fine-tuning runs", "base"]
    made += ["base-shots"] if cost.get("runs", 0) > trained + 1 else []  # cost's runs: base, base-shots and the arms'
    made += ["the learning curve"] if cost.get("curve_s") else []
    minutes = f"{cost['total_s'] / 60:.0f} minutes of compute ({', '.join(made)})" if cost.get("total_s") else ""
    front = p.get("frontier_seeds", 0)
    cut = " but the cut ends (below)" if p.get("replicated") else ""
    return (
        f"precise-key tunes **{fmt(h['tuned'])}** ({h['selection']}); precise-random draws "
        + " | ".join(fmt(d) for d in h["random_draws"])
        + f" — {len(offsets)} draw{'s' if len(offsets) != 1 else ''} planned{ran}: {matched}. "
        + f"{p['steps']} steps of batch {p['batch_size']} per run ({p.get('steps_from', '--steps')}), "
        + f"seeds {', '.join(map(str, p['seeds']))} at every rate{cut}"
        + (f" and up to {front} at each arm's frontier rates" if front > len(p["seeds"]) else "")
        + (f"; {minutes} on this machine" if minutes else "")
        + "."
    )


def progress_line(t: Table1Result) -> str:
    """How far the design is: runs made of those planned, points the rules can read, machine time (wall clock) so far
    and the rest estimated at each arm's mean cost per run. A point's planned runs are what the design gives its rate
    (:func:`arithmech.table1.detectable.design_runs`: a random arm's draws, a frontier rate's ``frontier_seeds``,
    another rate's seeds, a rate the plan cuts its first run), or the runs it has where it has more (a cut rate's runs
    made before the cut, a rate that was on the frontier when the runner planned it)."""
    p = t.plan
    cost = p.get("cost") or {}
    run_s = cost.get("run_s") or {}
    design = design_runs(p)
    planned = made = ready = points = 0
    left_s = 0.0
    for arm, a in p["arms"].items():
        per = pd.Series([r["lr"] for r in a["grid_rows"]], dtype=float).value_counts()
        want = sum(max(design(arm, lr), int(per.get(lr, 0))) for lr in a["grid"])
        have = len(a["grid_rows"])
        spent = [run_s[r["tag"]] for r in a["grid_rows"] if run_s.get(r["tag"])]
        planned, made = planned + want, made + have
        left_s += max(0, want - have) * (sum(spent) / len(spent) if spent else 0.0)
        read = (p.get("replicated") or {}).get(grid_of(arm), a["grid"])  # the points the rules read: rates not cut
        points, ready = points + len(read), ready + sum(int(per.get(lr, 0)) >= MIN_RUNS for lr in read)
    hours = lambda x: f"{x / 3600:.1f} hours"
    cut = (p.get("rules") or {}).get("cut", "")
    return (
        f"**{made} of {planned} planned runs made** ({'complete' if p.get('complete') else 'in progress'}): "
        f"{ready} of the {points} grid points the rules read have the {MIN_RUNS} runs they need; "
        + (
            f"{hours(cost.get('total_s') or 0)} of this machine (wall clock of each run)."
            if p.get("complete") and made >= planned
            else f"{hours(cost.get('total_s') or 0)} of this machine so far (wall clock of each run), "
            f"about {hours(left_s)} more at each arm's mean cost per run."
        )
        + (f" Cut: {cut}." if cut and not cut.startswith("none") else "")
    )


def grid_frame(t: Table1Result) -> pd.DataFrame:
    """Every learning rate tried per arm (first seed): validation math accuracy and loss, the choice (★),
    and whether the chosen rate is interior."""
    p = t.plan
    first = lambda rows: [r for r in rows if r.get("seed") == min(x.get("seed", 0) for x in rows) and not r.get("draw")]
    return pd.DataFrame(
        [
            {
                "arm": arm,
                "lr": f"{r['lr']:.0e}",
                "validation math accuracy": f"{r['val_math']:.1%}",
                "validation math loss": f"{r['val_nll']:.3f}" if r.get("val_nll") is not None else "—",
                "chosen": "★" if r["lr"] == a.get("chosen_lr") else "",
                "chosen rate interior": "yes" if a.get("interior") else "no",
            }
            for arm, a in p["arms"].items()
            for r in first(a.get("grid_rows") or [])
        ]
    )


def base_vs_chance(t: Table1Result) -> pd.DataFrame:
    """The base model on every general measure: value with its 95% interval, items, chance, and whether
    the measure decides a rule (:func:`arithmech.table1.verdicts.deciding`); base-only measures too."""
    base = t.base
    rows = []
    for m, r in {**base["results"], **(base["parameters"].get("base_only") or {})}.items():
        ci = r.get("ci")
        rows.append(
            {
                "measure": m.replace("_", " "),
                "base": r["value"],
                "95% interval": f"{ci[0]:.3f} – {ci[1]:.3f}" if ci else "—",
                "items": r["n"],
                "chance": r.get("chance"),
                "decides a rule": m in verdicts.deciding(base["results"], [m]) if m in base["results"] else "base only",
            }
        )
    return pd.DataFrame(rows)


def arm_frame(t: Table1Result) -> pd.DataFrame:
    """:func:`arithmech.table1.verdicts.arm_table` for reading: value and change as text with their
    intervals, a measure with a collapsed run reported as collapsed instead of a point estimate."""
    tab = verdicts.arm_table(t)

    def show(r):
        if r.collapsed_runs:
            return f"collapsed ({int(r.collapsed_runs)} of {r.runs} runs)"
        v = f"{r.value:.3f}" + (f" [{r.ci_low:.3f}, {r.ci_high:.3f}]" if pd.notna(r.ci_low) else "")
        return v + (f"; Δ {r.delta:+.3f} [{r.delta_ci_low:+.3f}, {r.delta_ci_high:+.3f}]" if pd.notna(r.delta) else "")

    out = tab.assign(result=[show(r) for r in tab.itertuples()])
    return out.pivot(index="measure", columns="arm", values="result")[[a for a in ("base", *ARMS) if a in set(tab.arm)]]


def arm_numbers(t: Table1Result) -> pd.DataFrame:
    """:func:`arithmech.table1.verdicts.arm_table` with readable columns, one row per arm × measure: the mean over
    the arm's runs, the spread between seeds, the mean's 95 % interval (``level_interval`` there), the change from
    base with its hierarchical interval, items per run and collapsed runs (a measure's name as the suite writes it)."""
    tab = verdicts.arm_table(t)
    num = lambda v, f="{:.3f}": "—" if v is None or pd.isna(v) else f.format(v)
    span = lambda lo, hi, f="{:.3f}": "—" if lo is None or pd.isna(lo) else f"{f.format(lo)} – {f.format(hi)}"
    return pd.DataFrame(
        {
            "arm": tab.arm,
            "measure": tab.measure.str.replace("_", "-"),
            "runs": tab.runs,
            "mean": [num(v) for v in tab.value],
            "seed sd": [num(v) for v in tab.seed_sd],
            "95% interval": [span(a, b) for a, b in zip(tab.ci_low, tab.ci_high)],
            "change from base": [num(v, "{:+.3f}") for v in tab.delta],
            "its 95% interval": [span(a, b, "{:+.3f}") for a, b in zip(tab.delta_ci_low, tab.delta_ci_high)],
            "items per run": tab.n_items,
            "collapsed runs": tab.collapsed_runs,
        }
    )


def phrasings_frame(t: Table1Result) -> pd.DataFrame:
    """Per arm, its chosen-rate runs' primary math measure on the validation items (the phrasings and operand pairs
    the learning rate is chosen on) and on the test items (others: what the rules score), as the mean over the
    runs with the lowest and highest run beside it; items per run. Base has one run."""
    m = t.suite.primary_math
    span = lambda v: f"{sum(v) / len(v):.1%}" + (f" ({min(v):.1%}–{max(v):.1%})" if len(v) > 1 else "")
    rows = []
    for arm, runs in verdicts.arm_runs(t).items():
        val = [r["parameters"]["validation"][m]["items"] for r in runs]
        rows.append(
            {
                "arm": arm,
                "runs": len(runs),
                "validation": span([sum(v) / len(v) for v in val]),
                "validation items": len(val[0]),
                "test": span([verdicts.value(r, m) for r in runs]),
                "test items": len(verdicts.items(runs[:1], m)),
            }
        )
    return pd.DataFrame(rows).set_index("arm")


def curve_chart(t: Table1Result) -> alt.LayerChart | alt.FacetChart | alt.VConcatChart | None:
    """Full SFT's validation learning curve with its knee (the arms' step budget) and, where the curve
    recorded them, the general skills' validation values along the same run (the curve of forgetting);
    None without a curve."""
    c = t.curve
    if c is None:
        return None
    df = pd.DataFrame(c["points"])
    line = (
        alt.Chart(df)
        .mark_line(point=True, color=colours.colour("arm", "full"))
        .encode(
            x=alt.X("step:Q", title="optimizer steps (full SFT)", axis=integer_axis()),
            y=alt.Y("val_math:Q", title="validation math accuracy", axis=alt.Axis(format=".0%")),
            tooltip=["step", alt.Tooltip("val_math:Q", format=".1%"), alt.Tooltip("val_nll:Q", format=".3f")],
        )
    )
    knee = (
        alt.Chart(pd.DataFrame({"step": [c["knee"]]}))
        .mark_rule(strokeDash=[4, 3], color=colours.colour("reference", "marker"))
        .encode(x="step:Q")
    )
    learnt = alt.layer(line, knee).properties(
        width=COLUMN,
        height=220,
        title=alt.TitleParams(
            "full SFT's learning curve: the step budget is its knee",
            subtitle=[
                f"knee: {c['knee']} steps, the fewest reaching base + {KNEE_SHARE} x (best - base)",
                f"lr {c['lr']:.0e} constant after warm-up, batch {c['batch_size']}",
            ],
        ),
    )
    kept = [k for k in df.columns if k.startswith("val_") and k not in ("val_math", "val_nll")]
    if not kept:
        return learnt
    long = df.melt(id_vars="step", value_vars=kept, var_name="measure", value_name="value")
    forgot = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="optimizer steps (full SFT)", axis=integer_axis()),
            y=alt.Y("value:Q", title="validation value"),
            color=alt.Color(
                "measure:N",
                title=None,
                scale=alt.Scale(domain=kept, range=colours.series(len(kept))),
                legend=alt.Legend(orient="bottom"),
            ),
            tooltip=["step", "measure", alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(width=COLUMN, height=180, title="what the same run keeps (validation items of the general skills)")
    )
    return alt.vconcat(learnt, alt.layer(forgot, knee))


def verdict_lines(t: Table1Result) -> list[str]:
    """Each rule's verdict as a line: claim, comparison, measure, estimate with interval (points), verdict."""
    out = []
    for _, r in verdicts.verdicts(t).iterrows():
        est = (
            "not run"
            if r["estimate"] is None or pd.isna(r["estimate"])
            else f"{100 * r['estimate']:+.1f} points [{100 * r['ci_low']:+.1f}, {100 * r['ci_high']:+.1f}]"
        )
        out.append(
            f"{r['claim']} ({r['comparison']}, {r['measure']}): **{r['verdict']}** — {est}"
            + (f"; collapsed: {r['collapsed']}" if r.get("collapsed") else "")
        )
    return out


def toy_scope(t: Table1Result, plan: dict) -> str:
    """What the embedded model's Table 1 can and cannot test, from its own records: the scope gate of the curve rules
    (:func:`arithmech.table1.frontier.scope`: full SFT's validation gain over base, its interval above +5 points)."""
    ok, why = curves_of(t).scope
    if ok:
        return (
            f"Full SFT learns the toy's new skills ({why.removeprefix('full SFT learns the skill (').rstrip(')')}), so "
            "the toy tests whether precise SFT of the key heads learns them as well, and what each arm costs the "
            "generic facts."
        )
    return (
        f"**The toy cannot test whether precise SFT learns as much as full SFT**: {why.removeprefix('not testable: ')}"
        f" at {plan['steps']} steps, so every Table 1 rule reads *not testable* here, with this reason, in the verdict "
        "table and the findings box. What it can test: the machinery (the records, rules and charts SmolLM2 uses); it "
        "shows forgetting — how much of its generic facts each arm loses at every rate of its grid — without deciding "
        "it (the gate holds that rule too). SmolLM2-135M below tests precise SFT at small scale, on a skill its base "
        "lacks: not the paper's Table 1 itself."
    )
