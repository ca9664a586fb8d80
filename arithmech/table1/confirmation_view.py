"""Table 1's confirmation on the page: the answer in one sentence per contrast, the protocol as written, the
decided table and the exploration's trade-off plane with the confirmatory runs marked.

Every function takes a :class:`~arithmech.table1.confirmation.Confirmation` (the protocol and its records, read
once) and computes nothing the Confirmation does not: the sentences and verdicts are its own.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from arithmech.report.charts import colours
from arithmech.report.charts.theme import COLUMN
from arithmech.table1 import protocol
from arithmech.table1.confirmation import Confirmation
from arithmech.table1.frontier import Curves

LIKE = {
    "key": "precise-key",
    "key-qo": "precise-key",
    "full-equal-gain": "full",
    "format": "base-shots",
    "random-any": "precise-random-any",
    "random-layer-qo": "precise-random",
}
"""Each confirmatory arm's colour: the exploratory arm it is a version of (the format arm: base-shots' colour)."""


def status(c: Confirmation) -> str:
    """How far the confirmation is: runs made of planned, seeds per arm, the pilots' rates, the machine time so far."""
    p = c.protocol
    made = sum(map(len, c.records.values()))
    planned = len(p["seeds"]) * len(p["arms"])
    low = min(map(len, c.records.values()))
    pilots = len(c.pilots), sum(len(r) for _, r in protocol.PILOT.values())
    return (
        f"{made} of {planned} confirmatory runs made ({low} of {len(p['seeds'])} fresh seeds in every arm; pilots "
        f"{pilots[0]} of {pilots[1]}; base on the fresh items {'made' if c.base else 'not yet'}; "
        f"{c.cost_s / 3600:.1f} hours of this 2-core machine so far, the protocol's estimate "
        f"{p['budget']['estimated_s'] / 3600:.1f} hours). Protocol version {p['version']}, written "
        f"from the exploration's {p['exploration']['runs']} runs and committed before any of its runs (a test reads "
        "git's order); scored on items no "
        f"exploratory run was scored on. {p['power']['target'].capitalize()}: the power target (every carry contrast "
        "detectable within 5 points) "
        + (
            "is met."
            if p["power"]["target"].startswith("reached")
            else "is not met, so the table says what each "
            "contrast can detect at this n; an inconclusive reading where it cannot is expected, not evidence."
        )
    )


def answers(c: Confirmation) -> list[str]:
    """One sentence per contrast (:meth:`Confirmation.sentence`), in the protocol's order."""
    return [c.sentence(x["name"]) for x in c.protocol["contrasts"]]


def protocol_table(c: Confirmation) -> pd.DataFrame:
    """The protocol as written: per contrast, its arms with rate and what each tunes, its measures with margins, the
    paper's claim it reads, and the smallest true difference the design detects (80 % power, the family's level)."""
    arms = {a["name"]: a for a in c.protocol["arms"]}

    def arm(name: str) -> str:
        a = arms[name]
        what = (
            "every parameter" if a["mode"] == "full" else f"8 heads' {'Q/O' if a['kv_policy'] == 'none' else 'Q/K/V/O'}"
        )
        data = ", no-carry data" if a["train"] == "plain" else ""
        rate = f"{a['lr']:.0e}" if a.get("lr") else f"rate from the {a['rate'].split(':')[1]} pilot"
        return f"{name} ({what}{data}, {rate})"

    rows = []
    for x in c.protocol["contrasts"]:
        det = c.protocol["power"]["detectable"][x["name"]]
        rows.append(
            {
                "contrast": x["name"],
                "a − b": f"{arm(x['a'])} − {arm(x['b'])}",
                "measures (margin)": ", ".join(f"{m} (±{x['margins'][m]:g})" for m in x["measures"]),
                "paper's claim": x["claim"],
                "detects at n": ", ".join(f"{m} {det[m]:g}" for m in x["measures"]),
            }
        )
    out = pd.DataFrame(rows)
    out.attrs["n"] = len(c.protocol["seeds"])
    return out


def verdict_table(c: Confirmation) -> pd.DataFrame:
    """Every primary test: runs a side, ``a − b`` with its interval at the family's level, per phrasing, the two
    readings and what the realised design detects; pending rows say how many seeds are in."""
    rows = []
    for r in c.rows():
        unit = "nats" if r.measure == "text loss" else "points"
        f = ".3f" if r.measure == "text loss" else ".1f"
        rows.append(
            {
                "contrast": r.contrast,
                "measure": f"{r.measure} ({unit})",
                "runs": f"{r.n_a} + {r.n_b} of {r.planned} + {r.planned}",
                "a − b [interval]": "—" if r.estimate is None else f"{r.estimate:+{f}} [{r.lo:+{f}}, {r.hi:+{f}}]",
                "by phrasing": ", ".join(f"{k} {v:+{f}}" for k, v in r.by_phrasing.items()),
                "direction": r.direction,
                "paper's claim": r.claim,
                "detects": "—" if r.detectable is None else f"{r.detectable:{f}}",
            }
        )
    return pd.DataFrame(rows)


def chart(c: Confirmation, curves: Curves) -> alt.LayerChart | alt.FacetChart:
    """The exploration's runs (small, hollow: every run of every grid point) on the trade-off plane — carry gain over
    base against the pooled cloze change — with the confirmatory runs marked (large, filled, shaped by arm)."""
    rows = []
    for arm, pts in curves.points.items():
        for p in pts:
            for m, g in zip(p.values(curves.math), p.values("general")):
                rows.append({"arm": arm, "run": f"{arm} {p.lr:.0e}", "math": m, "general": g, "phase": "exploration"})
    if c.base is not None:  # the confirmatory runs' changes from base on the fresh items
        b_math = sum(protocol.scores(c.base, "carry")) / 100 / protocol.ITEMS.carry_fresh
        b_gen = sum(protocol.scores(c.base, "cloze")) / 100 / len(protocol.scores(c.base, "cloze"))
        for arm, recs in c.records.items():
            for r in recs:
                math = sum(protocol.scores(r, "carry")) / 100 / protocol.ITEMS.carry_fresh - b_math
                gen = protocol.scores(r, "cloze")
                rows.append(
                    {
                        "arm": LIKE[arm],
                        "run": f"{arm} seed {r['seed']}",
                        "math": math,
                        "general": sum(gen) / 100 / len(gen) - b_gen,
                        "phase": f"confirmation: {arm}",
                    }
                )
    frame = pd.DataFrame(rows)
    enc = dict(
        x=alt.X("general:Q", title="change of pooled cloze from base", axis=alt.Axis(format="+.0%")),
        y=alt.Y("math:Q", title="change of carry accuracy from base", axis=alt.Axis(format="+.0%")),
        color=alt.Color("arm:N", scale=colours.scale("arm"), title=None, legend=alt.Legend(orient="bottom")),
        tooltip=["run", "phase", alt.Tooltip("math:Q", format="+.1%"), alt.Tooltip("general:Q", format="+.1%")],
    )
    explored = alt.Chart(frame[frame.phase == "exploration"]).mark_point(filled=False, size=25, opacity=0.35)
    layers = [explored.encode(**enc)]
    confirmed = frame[frame.phase != "exploration"]
    if len(confirmed):  # filled and larger; the colour names the arm, the title says filled is fresh seeds
        layers.append(alt.Chart(confirmed).mark_point(filled=True, size=110, opacity=0.9).encode(**enc))
    return alt.layer(*layers).properties(
        width=COLUMN,
        height=320,
        title=alt.TitleParams(
            "the exploration's 149 runs (hollow) and the confirmation's fresh seeds (filled)",
            subtitle=[
                "each point one run: carry gain (up) against the pooled cloze change (right), both from base",
                "the exploration on its items, the confirmation on fresh items (each against base on the same items)",
            ],
        ),
    )
