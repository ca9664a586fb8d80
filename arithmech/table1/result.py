"""Table 1's files read back once: the one reader of an arms run's files for its rules and pages.

:meth:`Table1Result.load` reads ``finetune/table1.json`` (the plan the runner wrote: arms, grids, seeds, heads,
cost), the base record, base-shots where it exists, every run the plan names (each record checked by
:func:`arithmech.core.records.read_finetune`: its format, and that the files it was computed from are unchanged) and
full SFT's learning curve where it exists. Rules and pages take the result, never the folder: the 149 records of
SmolLM2's grid are parsed and checked once per result, not once per table.

    >>> t = Table1Result.load("results/smollm2-135m")
    >>> t.record("precise-key-s0-lr3e-03")["results"]["carry"]["value"]
    >>> curves_of(t).points["full"][0].lr       # every run grouped into grid points (arithmech.table1.frontier)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from arithmech.core import records, results
from arithmech.evals.suites import Suite, get_suite

PLAN = "finetune/table1.json"
CURVE = "finetune/curve.json"


def run_tags(arm: dict) -> list[str]:
    """Every run of an arm of the plan, in order: its ``grid_rows`` (the runner lists every run there), then its
    ``runs`` (the chosen-rate runs of an older plan)."""
    return list(dict.fromkeys([r["tag"] for r in arm.get("grid_rows") or []] + list(arm.get("runs") or [])))


@dataclass(frozen=True)
class Table1Result:
    """An arms run as its files hold it: ``plan`` (``table1.json``), ``base`` and ``shots`` (the base model zero-shot
    and with shots; ``shots`` None where no such run was made), ``runs`` (tag → record, every run the plan names),
    ``curve`` (``curve.json``, or None) and ``folder`` (where they were read: for messages, never re-read);
    ``memo`` holds what is computed from them once (:func:`arithmech.table1.frontier.curves_of`)."""

    plan: dict
    base: dict
    shots: dict | None
    runs: dict[str, dict] = field(repr=False)
    curve: dict | None
    folder: Path
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def ran(folder: str | Path) -> bool:
        """Whether ``folder`` holds an arms run (its plan, written after the first run and after each)."""
        return results.exists(folder, PLAN)

    @classmethod
    def load(cls, folder: str | Path) -> Table1Result:
        """Read and check every file of the arms run in ``folder`` (module docstring)."""
        plan = results.read(folder, PLAN)
        shots = records.finetune_path(folder, "base", "shots").exists()
        tags = [t for name, a in plan["arms"].items() if name not in ("base", "base-shots") for t in run_tags(a)]
        return cls(
            plan=plan,
            base=records.read_finetune(folder, "base"),
            shots=records.read_tag(folder, "base-shots") if shots else None,
            runs={t: records.read_tag(folder, t) for t in dict.fromkeys(tags)},
            curve=results.read(folder, CURVE) if results.exists(folder, CURVE) else None,
            folder=Path(folder),
        )

    @classmethod
    def made(cls, folder: str | Path) -> Table1Result | None:
        """:meth:`load` the arms run in ``folder``, or ``None`` where none was made (:meth:`ran`)."""
        return cls.load(folder) if cls.ran(folder) else None

    @property
    def suite(self) -> Suite:
        """The suite the runs were scored on (its measures, the primary math and general ones)."""
        return get_suite(self.plan["suite"])

    def record(self, tag: str) -> dict:
        """The record of run ``tag`` (``"base"``, ``"base-shots"``, or a run the plan names)."""
        if tag == "base":
            return self.base
        if tag == "base-shots" and self.shots is not None:
            return self.shots
        return self.runs[tag]

    def arm_tags(self, arm: str) -> list[str]:
        """Every run of ``arm`` (:func:`run_tags`)."""
        return run_tags(self.plan["arms"][arm])
