"""Table 1's views for the Fine-tune chapter and the SmolLM2 appendix: what an arms run decided and cost, and its
gates and controls as a reader checks them.

Each function reads one model's arms run (:class:`~arithmech.table1.result.Table1Result`: its plan, its records,
full SFT's learning curve) and returns a frame or a line of text; nothing here trains or scores a model. The gates and
controls: the scope gate every math rule passes through (:func:`scope_line`), the format control's own score
(:func:`shots_line`), the parameters each precise arm tunes (:func:`tuned_line`) and what the means alone lean to
(:func:`dominated_line`).
"""

from __future__ import annotations

import pandas as pd

from arithmech.core.names import components
from arithmech.core.stats import wilson_interval
from arithmech.data.splits import carry_items
from arithmech.evals.suites import get_suite
from arithmech.table1 import frontier, verdicts
from arithmech.table1.design import design_runs
from arithmech.table1.frontier import MIN_RUNS, SCOPE_GAIN, Curves, curves_of, variant_items
from arithmech.table1.plan import ARMS, grid_of, layer_offsets
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
    (:func:`arithmech.table1.design.design_runs`: a random arm's draws, a frontier rate's ``frontier_seeds``,
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


def ends_line(t: Table1Result) -> str | None:
    """The arms whose single-rate choice sits at an end of their grid (``interior`` false in ``table1.json``), with the
    grid's extensions: there the arm's highest validation math accuracy is the last rate the grid reached, so the
    grid does not bracket the arm, and its frontier top is where the grid stopped. None where every choice is
    interior."""
    ends = []
    for arm, a in t.plan["arms"].items():
        if a.get("chosen_lr") is None or a.get("interior", True):
            continue
        g = sorted(a["grid"])
        side = "highest" if a["chosen_lr"] == g[-1] else "lowest"
        ends.append(
            f"{arm} at {a['chosen_lr']:.0e}, the {side} of its {len(g)} rates ({a.get('extensions', 0)} extensions)"
        )
    if not ends:
        return None
    return (
        "Highest validation math accuracy at the end of the arm's grid, so the grid does not bracket it and its "
        "frontier top is where the grid stopped: " + "; ".join(ends) + "."
    )


def leans_line(rows: pd.DataFrame) -> str | None:
    """Where an inconclusive verdict's estimate lies (``rows``: the curve rules' verdict rows, with ``estimate`` and
    its interval at the rule's ``level``): which arm the difference favours, so that "inconclusive" says which way
    the data lean; None where no inconclusive row of one difference has an estimate."""
    out = []
    for r in rows.to_dict("records"):
        if r["verdict"] != "inconclusive" or pd.isna(r["estimate"]) or ";" in str(r["comparison"]):
            continue  # a two-part rule (keeps general skills) has no one difference to lean
        a, _, b = str(r["comparison"]).partition(" − ")
        side = "no side (0)" if r["estimate"] == 0 else f"{a if r['estimate'] > 0 else b}'s side"
        covers = " (the interval covers 0)" if r["ci_low"] <= 0 <= r["ci_high"] else ""
        out.append(
            f"{r['comparison']} on {r['measure']} {100 * r['estimate']:+.1f} points "
            f"[{100 * r['ci_low']:+.1f}, {100 * r['ci_high']:+.1f}] at {r['level']:.2%}: the estimate on {side}{covers}"
        )
    return "Undecided, and where each single difference's estimate lies: " + "; ".join(out) + "." if out else None


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


def scope_line(t: Table1Result) -> str:
    """The gate every math rule passes through (:func:`arithmech.table1.frontier.scope`, tenth version: full SFT must
    learn the skill — at some replicated rate its validation gain over base has a crossed 95 % interval above the
    margin), as the curves decide it, and beside it full SFT's frontier top (picked on validation) on the test items."""
    c = curves_of(t)
    test = frontier.top(c, "full", c.math)
    base = c.base["results"][c.math]
    return (
        f"**Scope gate** (full SFT must learn the skill, or every math rule reads *not testable*: at some rate of its "
        f"grid, its validation gain over base with the interval above +{100 * SCOPE_GAIN:.0f} points): "
        + (c.scope[1] or "no validation items recorded, so nothing gates the rules")
        + "."
        + (
            f" Full SFT's frontier top ({test.lr:.0e}, {test.n} runs, picked on validation) scores "
            f"{base['value'] + test.mean(c.math):.1%} on the test items (base {base['value']:.1%}; "
            f"n = {len(base['items'])} items, other phrasings and operand pairs)."
            if test
            else ""
        )
    )


def shots_line(t: Table1Result) -> str | None:
    """The format control's own score (``base-shots``: the base model with K solved problems of the training side
    before every test item; :func:`arithmech.evals.suites.cpu_shots`) beside the zero-shot base, each as counted
    items with its Wilson 95 % interval, by operation, and the K examples shown — so a reader sees what the rule
    "learns more than the answer format" subtracts; None where no base-shots record was made."""
    if t.shots is None:
        return None
    p, c = t.plan, curves_of(t)
    shots, base = t.shots, t.base

    def score(run: dict) -> str:
        its = run["results"][c.math]["items"]
        lo, hi = wilson_interval(sum(its), len(its))
        ops = [v for v in c.variants if ":" in v]
        by = ", ".join(f"{v.partition(':')[2]} {sum(x)}/{len(x)}" for v in ops for x in [variant_items(run, c.math, v)])
        return f"{sum(its)}/{len(its)} = {sum(its) / len(its):.1%} [{lo:.1%}, {hi:.1%}]" + (f" ({by})" if by else "")

    shown = " | ".join(f"`{q} {a}`" for q, a in carry_items("train", p["shots"], p.get("data_seed", 0), seed=10_000))
    return (
        f"**Format control** (base-shots): the base model with the same {p['shots']} solved problems before every "
        f"test item ({shown}; one fixed set from the training side) answers {score(shots)} of the {c.math} test "
        f"items; the zero-shot base {score(base)}. The rule against base-shots subtracts this control item by item; it "
        "measures what these examples show the model, not every way of showing the answer format."
    )


def tuned_line(t: Table1Result) -> str:
    """The parameters each precise arm's runs tune (the records' ``tuned_parameters``: the tuned heads' Q/K/V/O
    slices, and the key/value groups they read), each random arm's range over its draws against precise-key's — a
    random control that tunes fewer or more parameters is not matched in size, and the page says by how much."""
    p = t.plan
    per = {
        arm: sorted({t.record(r["tag"])["tuned_parameters"] for r in a["grid_rows"]})
        for arm, a in p["arms"].items()
        if arm != "full" and a.get("grid_rows")
    }
    key = per.get("precise-key")
    span = lambda v: f"{v[0]:,}" if len(v) == 1 else f"{v[0]:,}–{v[-1]:,}"
    rel = lambda v: (
        f" ({100 * (v[0] / key[0] - 1):+.1f} % to {100 * (v[-1] / key[0] - 1):+.1f} % of precise-key's)"
        if key and len(key) == 1 and v != key
        else ""
    )
    return "Tuned parameters per run: " + "; ".join(f"{a} {span(v)}{rel(v)}" for a, v in per.items()) + "."


def dominated_line(c: Curves, arms: tuple[str, ...] = ("precise-key", "precise-share")) -> str | None:
    """Which points of each precise arm a full-SFT point dominates **in means alone** on the trade-off plane (math
    gain on the primary measure, change of the general measure: at least as high on both, higher on one), and
    whether one of those also loses less text loss — the picture a reader of the chart sees, beside the rule "keeps
    general skills", which reads intervals and may leave it undecided. Points are those that decide a rule (not cut,
    at least 3 runs, not collapsed); an arm whose points all collapsed says so. It decides nothing; None where the
    model's scope rules the math out (the toy), or full SFT or every precise arm has no such point."""
    pts = lambda arm: [p for p in frontier.live(c, arm) if p.decides]
    full = pts("full")
    if not c.scope[0] or not full:
        return None
    S = get_suite(c.suite)
    loss_general = S.primary_general in S.lower_is_better  # then the general change is a fall in nats
    unit = "nats" if loss_general else "points"
    num = (lambda x: f"{x:+.3f}") if loss_general else (lambda x: f"{100 * x:+.1f}")
    pos = lambda p: (p.mean(c.math), p.mean("general"))
    parts = []
    for arm in arms:
        if c.points.get(arm) and not pts(arm):
            parts.append(f"none of {arm}'s points (every point read collapsed or has fewer than {MIN_RUNS} runs)")
        if not pts(arm):
            continue
        beaten = []
        for k in pts(arm):
            over = [f for f in full if pos(f)[0] >= pos(k)[0] and pos(f)[1] >= pos(k)[1] and pos(f) != pos(k)]
            if not over:
                continue
            both = [f for f in over if k.loss and f.loss and f.mean("loss") <= k.mean("loss")]
            f = max(both or over, key=lambda f: pos(f)[0])  # one that also wins on text loss, else the most math gain
            loss = (
                ""
                if loss_general or not (k.loss and f.loss)
                else " and on text loss"
                if both
                else ", though no dominating full point has less text loss"
            )
            beaten.append(
                f"{k.lr:.0e} ({num(pos(k)[0])}, {num(pos(k)[1])}) by full {f.lr:.0e} ({num(pos(f)[0])}, "
                f"{num(pos(f)[1])}){loss}"
            )
        parts.append(
            f"{len(beaten)} of {arm}'s {len(pts(arm))} points read" + (": " + "; ".join(beaten) if beaten else "")
        )
    if not parts:
        return None
    return (
        f"**In means alone** (no interval: this decides nothing; the rules above read intervals): on the plane of "
        f"math gain ({c.math}, points) and change of {c.general} ({unit}), a full-SFT point dominates "
        + " — ".join(parts)
        + ". It shows what the means lean to beside the rule *keeps general skills*; not a finding."
    )
