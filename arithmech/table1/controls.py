"""Table 1's gates and controls as a reader checks them: the scope gate every math rule passes through, the format
control's own score, and the parameters each precise arm tunes — each a line of text read from one model's arms run
(:class:`~arithmech.table1.result.Table1Result`); nothing here trains or scores."""

from __future__ import annotations

from arithmech.core.stats import wilson_interval
from arithmech.data.splits import carry_items
from arithmech.evals.suites import get_suite
from arithmech.table1 import curve_parts
from arithmech.table1.frontier import MIN_RUNS, SCOPE_GAIN, Curves, curves_of, variant_items
from arithmech.table1.result import Table1Result


def scope_line(t: Table1Result) -> str:
    """The gate every math rule passes through (:func:`arithmech.table1.frontier.scope`, tenth version: full SFT must
    learn the skill — at some replicated rate its validation gain over base has a crossed 95 % interval above the
    margin), as the curves decide it, and beside it full SFT's frontier top (picked on validation) on the test items."""
    c = curves_of(t)
    test = curve_parts.top(c, "full", c.math)
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
    pts = lambda arm: [p for p in curve_parts.live(c, arm) if p.decides]
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
