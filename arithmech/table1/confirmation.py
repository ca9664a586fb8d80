"""The confirmation's result: the protocol and its records, read once, and every primary contrast decided.

:meth:`Confirmation.load` reads ``<model>/confirmation/`` (the protocol and each record that follows it: phase
``confirmation`` and the protocol's sha256; a record of another protocol is refused); :meth:`Confirmation.rows`
decides each (contrast, measure) of the primary family by :mod:`arithmech.table1.contrasts`, or says ``pending``
while a planned seed of either arm is missing (no interim verdict: the protocol reads once, at the end);
:meth:`Confirmation.sentence` is a contrast's answer in one sentence, for the pages.

    >>> c = Confirmation.load("results/smollm2-135m")
    >>> [(r.contrast, r.measure, r.claim) for r in c.rows()]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from arithmech.core import safe_read
from arithmech.core.inputs import quoted
from arithmech.table1 import contrasts, protocol
from arithmech.table1.protocol import record_path

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

    @property
    def complete(self) -> bool:
        return self.n_a == self.planned and self.n_b == self.planned


@dataclass(frozen=True)
class Confirmation:
    """The protocol (as written) and its records by arm, in seed order."""

    protocol: dict
    records: dict[str, list[dict]]
    cost_s: float

    @classmethod
    def load(cls, folder: str | Path) -> Confirmation:
        """Read the protocol and every record it plans that exists, each checked to follow it."""
        folder = Path(folder)
        written = protocol.read(folder)
        sha = safe_read.sha256(folder / protocol.FILE, folder)
        recs: dict[str, list[dict]] = {a["name"]: [] for a in written["arms"]}
        for seed in written["seeds"]:
            for arm in recs:
                path = record_path(folder, arm, seed)
                if not path.exists():
                    continue
                rec = json.loads(safe_read.read_text(path, folder))
                p = rec.get("parameters") or {}
                if p.get("phase") != "confirmation" or p.get("protocol_sha256") != sha or p.get("arm") != arm:
                    raise ValueError(
                        f"{quoted(path)} does not follow {quoted(folder / protocol.FILE)} (phase, sha256, arm)"
                    )
                recs[arm].append(rec)
        cost = sum(r.get("wall_s") or 0 for v in recs.values() for r in v)
        return cls(written, recs, round(cost, 1))

    @property
    def family(self) -> int:
        return self.protocol["correction"]["family"]

    def scores(self, arm: str, measure: str) -> list[list[float]]:
        return [protocol.scores(r, measure) for r in self.records[arm]]

    def rows(self) -> list[Row]:
        """Every primary test, decided where both arms have every planned seed (module docstring)."""
        t, planned = self.protocol["training"], len(self.protocol["seeds"])
        out = []
        for c in self.protocol["contrasts"]:
            contrast = next(x for x in protocol.CONTRASTS if x.name == c["name"])
            for m in c["measures"]:
                a, b = self.scores(c["a"], m), self.scores(c["b"], m)
                row = Row(c["name"], m, c["a"], c["b"], len(a), len(b), planned)
                if row.complete:
                    strata = protocol.strata(m, t["sizes"], t["data_seed"])
                    d, lo, hi = contrasts.interval(a, b, strata, self.family)
                    margin = c["margins"][m]
                    row = replace(
                        row,
                        estimate=d,
                        lo=lo,
                        hi=hi,
                        direction=contrasts.direction(lo, hi, margin),
                        claim=contrasts.claim(protocol.kind_of(contrast, m), lo, hi, margin),
                        detectable=contrasts.detectable(contrasts.Spread.of(a, b, strata), len(a), len(b), self.family),
                        by_phrasing=contrasts.by_stratum(a, b, strata) if strata else {},
                    )
                out.append(row)
        return out

    def sentence(self, contrast: str) -> str:
        """A contrast's answer in one sentence: each measure's estimate, interval, n and what the design detects."""
        c = next(x for x in self.protocol["contrasts"] if x["name"] == contrast)
        rows = [r for r in self.rows() if r.contrast == contrast]
        if not all(r.complete for r in rows):
            have = min(min(r.n_a, r.n_b) for r in rows)
            return f"{c['question']} **Pending**: {have} of {rows[0].planned} fresh seeds per arm are in."
        name = {"a ahead": f"{c['a']} ahead", "b ahead": f"{c['b']} ahead"}
        parts = []
        for r in rows:
            f = ".3f" if r.measure == "text loss" else ".1f"
            parts.append(
                f"{r.measure} {r.estimate:+{f}} [{r.lo:+{f}}, {r.hi:+{f}}] {UNITS[r.measure]} "
                f"({name.get(r.direction, r.direction)}; the paper's claim {r.claim}; detects {r.detectable:{f}})"
            )
        n = rows[0].planned
        return f"{c['question']} {c['a']} − {c['b']}, {n} + {n} fresh seeds: " + "; ".join(parts) + "."
