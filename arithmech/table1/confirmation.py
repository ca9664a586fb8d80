"""The confirmation's result: the protocol and its records, read once, and every primary contrast decided.

:meth:`Confirmation.load` reads ``<model>/confirmation/`` (the protocol, base on the fresh items, the pilots and each
run it plans that exists, each checked to follow it: phase and the protocol's sha256; a record of another protocol is
refused); :meth:`Confirmation.rows` decides each (contrast, measure) of the primary family by
:mod:`arithmech.table1.contrasts`, or says ``pending`` while a planned seed of either arm is missing (no interim
verdict: the protocol reads once, at the end), or ``not testable`` where a gate fails; :meth:`Confirmation.sentence`
is a contrast's answer in one sentence, for the pages.

The page's parts take a Confirmation and compute nothing it does not: :func:`status` (how far the runs are),
:func:`answers` (a sentence per contrast), :func:`protocol_table` (the protocol as written) and :func:`verdict_table`
(the decided table); its chart is :func:`arithmech.table1.charts.confirmation_chart`.

    >>> c = Confirmation.load("results/smollm2-135m")
    >>> [(r.contrast, r.measure, r.claim) for r in c.rows()]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from arithmech.core import safe_read
from arithmech.core.inputs import quoted
from arithmech.core.stats import crossed_interval
from arithmech.table1 import contrasts, protocol
from arithmech.table1.protocol import PILOT, record_path

UNITS = {"carry": "points", "subtraction": "points", "cloze": "points", "text loss": "nats"}


@dataclass(frozen=True)
class Row:
    """One primary test: ``d = a − b`` on ``measure`` with its interval at the family's level, the two readings,
    what the realised design can detect, the per-phrasing estimates and the runs behind it."""

    contrast: str
    measure: str
    a: str
    b: str
    n_a: int
    n_b: int
    planned: int
    estimate: float | None = None
    lo: float | None = None
    hi: float | None = None
    direction: str = "pending"
    claim: str = "pending"
    detectable: float | None = None
    by_phrasing: dict = field(default_factory=dict)
    why: str = ""

    @property
    def complete(self) -> bool:
        return self.n_a == self.planned and self.n_b == self.planned


@dataclass(frozen=True)
class Confirmation:
    """The protocol (as written), base on the fresh items, the pilots, and the records by arm in seed order."""

    protocol: dict
    base: dict | None
    pilots: dict[str, dict]
    records: dict[str, list[dict]]
    cost_s: float

    @classmethod
    def load(cls, folder: str | Path) -> Confirmation:
        """Read the protocol and every record it plans that exists, each checked to follow it."""
        folder = Path(folder)
        written = protocol.read(folder)
        sha = safe_read.sha256(folder / protocol.FILE, folder)

        def read(path: Path, arm: str) -> dict | None:
            if not path.exists():
                return None
            rec = json.loads(safe_read.read_text(path, folder))
            p = rec.get("parameters") or {}
            if (
                p.get("phase") not in ("confirmation", "pilot")
                or p.get("protocol_sha256") != sha
                or p.get("arm") != arm
            ):
                raise ValueError(
                    f"{quoted(path)} does not follow {quoted(folder / protocol.FILE)} (phase, sha256, arm)"
                )
            return rec

        recs: dict[str, list[dict]] = {a["name"]: [] for a in written["arms"]}
        for seed in written["seeds"]:
            for arm in recs:
                rec = read(record_path(folder, arm, seed), arm)
                if rec is not None:
                    recs[arm].append(rec)
        pilots = {
            f"{name}@{lr:.0e}": rec
            for name, rates in PILOT.values()
            for lr in rates
            if (rec := read(record_path(folder, name, lr=lr), name)) is not None
        }
        base = read(record_path(folder, "base"), "base")
        every = [r for v in recs.values() for r in v] + list(pilots.values()) + ([base] if base else [])
        return cls(written, base, pilots, recs, round(sum(r.get("wall_s") or 0 for r in every), 1))

    @classmethod
    def written(cls, folder: str | Path) -> Confirmation | None:
        """:meth:`load` the confirmation of ``folder``, or ``None`` where no protocol was written there."""
        return cls.load(folder) if (Path(folder) / protocol.FILE).exists() else None

    @property
    def family(self) -> int:
        return self.protocol["correction"]["family"]

    def scores(self, arm: str, measure: str) -> list[list[float]]:
        return [protocol.scores(r, measure) for r in self.records[arm]]

    def gate(self, arm: str) -> tuple[bool | None, str]:
        """Whether ``arm`` learns (its carry gain over base on the fresh items, 95 % crossed interval above the
        margin): True, False, or None while its runs or base are missing; with the gain as text."""
        runs = self.scores(arm, "carry")
        if self.base is None or len(runs) < 2:
            return None, ""
        b = protocol.scores(self.base, "carry")
        d, lo, hi = crossed_interval([[x - y for x, y in zip(r, b)] for r in runs])
        text = f"{arm}'s carry gain over base {d:+.1f} points [{lo:+.1f}, {hi:+.1f}], {len(runs)} runs"
        return lo > protocol.MARGIN["carry"], text

    def rows(self) -> list[Row]:
        """Every primary test, decided where both arms have every planned seed (module docstring)."""
        seed, planned = self.protocol["training"]["data_seed"], len(self.protocol["seeds"])
        out = []
        for c in self.protocol["contrasts"]:
            contrast = next(x for x in protocol.CONTRASTS if x.name == c["name"])
            for m in c["measures"]:
                a, b = self.scores(c["a"], m), self.scores(c["b"], m)
                row = Row(c["name"], m, c["a"], c["b"], len(a), len(b), planned)
                if not row.complete:
                    out.append(row)
                    continue
                learns, gain = self.gate(c["gate"]) if c.get("gate") else (True, "")
                if learns is False:
                    out.append(replace(row, direction="not testable", claim="not testable", why=gain))
                    continue
                strata = protocol.strata(m, seed)
                d, lo, hi = contrasts.interval(a, b, strata, self.family)
                margin = c["margins"][m]
                out.append(
                    replace(
                        row,
                        estimate=d,
                        lo=lo,
                        hi=hi,
                        direction=contrasts.direction(lo, hi, margin, lower_is_better=m == "text loss"),
                        claim=contrasts.claim(protocol.kind_of(contrast, m), lo, hi, margin),
                        detectable=contrasts.detectable(contrasts.Spread.of(a, b, strata), len(a), len(b), self.family),
                        by_phrasing=contrasts.by_stratum(a, b, strata) if strata else {},
                        why=gain,
                    )
                )
        return out

    def sentence(self, contrast: str) -> str:
        """A contrast's answer in one sentence: each measure's estimate, interval, n and what the design detects."""
        c = next(x for x in self.protocol["contrasts"] if x["name"] == contrast)
        rows = [r for r in self.rows() if r.contrast == contrast]
        if not all(r.complete for r in rows):
            have = min(min(r.n_a, r.n_b) for r in rows)
            return f"{c['question']} **Pending**: {have} of {rows[0].planned} fresh seeds per arm are in."
        if all(r.claim == "not testable" for r in rows):
            return f"{c['question']} **Not testable**: {rows[0].why} (the gate needs the interval above +5 points)."
        name = {"a better": f"{c['a']} better", "b better": f"{c['b']} better"}
        parts = []
        for r in rows:
            f = ".3f" if r.measure == "text loss" else ".1f"
            parts.append(
                f"{r.measure} {r.estimate:+{f}} [{r.lo:+{f}}, {r.hi:+{f}}] {UNITS[r.measure]} "
                f"({name.get(r.direction, r.direction)}; the paper's claim {r.claim}; detects {r.detectable:{f}})"
            )
        n = rows[0].planned
        return f"{c['question']} {c['a']} − {c['b']}, {n} + {n} fresh seeds: " + "; ".join(parts) + "."


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
