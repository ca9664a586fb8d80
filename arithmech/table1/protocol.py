"""The confirmation protocol: written from the exploration's records, frozen in a file, committed before any run.

:func:`build` reads the 149 exploratory runs (``finetune/``, listed by ``finetune/table1.json``) and fixes, by rules
stated here and copied into the file:

* **fresh items** — every confirmatory run is scored on items no exploratory run was scored on: the test side's
  carry problems past the first 200 of each operation (:func:`arithmech.data.splits.carry_items` with ``start``),
  cloze items outside the exploration's draw (:func:`arithmech.evals.cloze.fresh`) and the second half of the
  generic text; the exploration's 400 carry items are scored too, shown beside, never decided on;
* **the rates** — on the exploration's *validation* items (never test): precise-key takes its replicated rate of
  highest mean validation carry, which random-any shares (matched rates); the equal-gain arm the replicated full rate
  whose mean validation carry is nearest precise-key's; the Q/O arms and the format arm, which the exploration never
  ran, take the rate of highest validation carry in a **pilot** (one run per rate at a seed of its own, validation
  only, made after this protocol and before any confirmatory run; the Q/O random arm takes the Q/O key arm's rate);
* **the arms** (:data:`ARMS`) — base (scored on the fresh items); precise-key as explored; a random arm of any layer
  tuning *exactly* as many parameters (as many key/value groups as the key heads, none of theirs); Q/O-only twins of
  precise-key and of a truly layer-matched random arm (with K/V frozen every head of a key head's layer is a free
  control); full SFT at the equal-gain rate; a format-only full SFT trained on two-digit problems *without* carry or
  borrow (:func:`arithmech.data.splits.plain_items`);
* **the contrasts** (:data:`CONTRASTS`) — each on carry and on subtraction with borrow (retention: pooled cloze and
  text loss), two-sided, the exploration's margins (5 points, 0.05 nats), one Bonferroni correction over this primary
  family only; a gate before the layer-matched contrast (the Q/O key arm must learn); "precise matches full" is not
  re-run (:data:`SECONDARY`);
* **the seeds** — fresh (none of any earlier run), the same in every arm (the interval pairs over them), as many as the
  budget allows: no n within it reaches the power target, and the file says what each contrast can detect.

:func:`write` refuses to replace a protocol: a protocol is changed only by a new file under a new name, in git.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from arithmech.core import safe_read
from arithmech.core.atomic import atomic_json
from arithmech.core.inputs import quoted
from arithmech.data.splits import carry_phrasings
from arithmech.table1.contrasts import KINDS, Spread, detectable
from arithmech.table1.plan import choose_rates, exploration, random_any_matched, random_layer
from arithmech.table1.result import Table1Result

VERSION = 2
FILE = f"confirmation/protocol-v{VERSION}.json"
"""Where a model's protocol lives, inside its results folder (version 1, ``confirmation/protocol.json``, was
superseded after a hostile reading, before its second run: it scored on the exploration's own test items)."""
RECORDS = f"confirmation/v{VERSION}"
"""Where its runs' records live."""

MARGIN = {"carry": 5.0, "subtraction": 5.0, "cloze": 5.0, "text loss": 0.05}
"""The margin of each measure (points; nats), the exploration's (:data:`arithmech.table1.curves.MARGIN`)."""
CLOZE = ("hellaswag", "piqa", "arc_easy", "csqa")
"""The pooled cloze sets (MMLU's cloze sits at chance for every arm and is left out, as in the exploration)."""


@dataclass(frozen=True)
class Items:
    """The fresh items: carry problems 200–339 of each operation of the test side (280 items, alternating), 200 cloze
    items per set outside the exploration's 100, the generic text's chunks 8–15 (the exploration read 0–7)."""

    carry_start: int = 200
    carry_fresh: int = 280
    cloze_used: int = 100
    cloze_fresh: int = 200
    lm_chunks: tuple[int, int] = (8, 16)


ITEMS = Items()
PILOT = {"qo": ("key-qo", (1e-3, 3e-3, 9e-3)), "format": ("format", (3e-5, 1e-4, 3e-4))}
"""Each pilot: the arm it runs and its rates (the exploration's interior rates of that kind of arm)."""
PILOT_SEED = 99
BUDGET_S = 8 * 3600
"""The confirmation's budget: 8 hours of wall clock on this 2-core machine, the unit the exploration's cost is in."""


@dataclass(frozen=True)
class Arm:
    """One confirmatory arm: full SFT or precise SFT of some heads, at a rate chosen by a rule, on some data."""

    name: str
    mode: str  # "full" | "precise"
    heads: str  # "key" | "random-any-matched" | "random-layer" | "" (full)
    kv_policy: str  # "any": a head's K/V group trains too; "none": W_Q rows and W_O columns only
    rate: str  # "key" | "equal-gain" | "pilot:qo" | "pilot:format"
    train: str  # "carry" | "plain" (no carry, no borrow: the format alone)
    like: str  # the exploratory arm and rate whose spread the power calculation borrows


ARMS = (
    Arm("key", "precise", "key", "any", "key", "carry", "precise-key@key"),
    Arm("random-any", "precise", "random-any-matched", "any", "key", "carry", "precise-random-any@key"),
    Arm("key-qo", "precise", "key", "none", "pilot:qo", "carry", "precise-key@key"),
    Arm("random-layer-qo", "precise", "random-layer", "none", "pilot:qo", "carry", "precise-random@key"),
    Arm("full-equal-gain", "full", "", "", "equal-gain", "carry", "full@equal-gain"),
    Arm("format", "full", "", "", "pilot:format", "plain", "full@full"),
)


@dataclass(frozen=True)
class Contrast:
    """``a − b`` on ``measures``, with the paper's claim of ``kind`` (:data:`arithmech.table1.contrasts.KINDS`)."""

    name: str
    question: str
    a: str
    b: str
    measures: tuple[str, ...]
    kind: str


CONTRASTS = (
    Contrast(
        "beats-random-any",
        "Do the paper's heads beat as many random heads of any layer, parameters matched?",
        "key",
        "random-any",
        ("carry", "subtraction"),
        "better",
    ),
    Contrast(
        "beats-layer-matched",
        "Do the paper's heads beat random heads of the same layers (Q/O only)?",
        "key-qo",
        "random-layer-qo",
        ("carry", "subtraction"),
        "better",
    ),
    Contrast(
        "keeps-at-equal-gain",
        "At (nearly) equal math gain, does precise SFT keep general skill at least as well as full SFT?",
        "key",
        "full-equal-gain",
        ("cloze", "text loss"),
        "not-worse",
    ),
    Contrast(
        "beyond-format",
        "Do the paper's heads teach more than the answer format?",
        "key",
        "format",
        ("carry", "subtraction"),
        "better",
    ),
)
FAMILY = sum(len(c.measures) for c in CONTRASTS)
"""The primary family: every (contrast, measure) test; the Bonferroni correction covers these and no other."""
GATES = {"beats-layer-matched": "key-qo"}
"""A contrast read only where its arm learns: the arm's carry gain over base on the fresh items, 95 % interval above
the margin; else *not testable* (a Q/O arm that learns nothing tells nothing about which heads matter)."""
SECONDARY = (
    "precise matches full SFT on math: not re-run; the exploration answers it (tenth version: does not hold, "
    "precise-key's validation frontier at least 31 points below full SFT's top on carry)"
)

assert all(c.kind in KINDS for c in CONTRASTS)


def record_path(folder: Path, arm: str, seed: int | None = None, lr: float | None = None) -> Path:
    """A run's record: ``<records>/<arm>-s<seed>.json``; a pilot's ``<records>/pilot-<arm>-lr<rate>.json``; base's
    ``<records>/base.json``."""
    if arm == "base":
        return folder / RECORDS / "base.json"
    if lr is not None:
        return folder / RECORDS / f"pilot-{arm}-lr{lr:.0e}.json"
    return folder / RECORDS / f"{arm}-s{seed}.json"


# ------------------------------------------------------------------------------------ measures
def scores(record: dict, measure: str) -> list[float]:
    """One run's per-item scores on ``measure``, on the fresh items (points of accuracy; nats per token for the
    text loss)."""
    r = record["results"]
    if measure == "carry":
        return [100.0 * x for x in r["carry_fresh"]["items"]]
    if measure == "subtraction":  # carry items alternate addition, subtraction (arithmech.data.splits.carry_items)
        return [100.0 * x for x in r["carry_fresh"]["items"][1::2]]
    if measure == "cloze":
        return [100.0 * x for k in CLOZE for x in r[f"{k}_fresh"]["items"]]
    if measure == "text loss":
        return [float(x) for x in r["lm_loss_fresh"]["items"]]
    raise ValueError(f"measure {measure!r}: one of {tuple(MARGIN)}")


def strata(measure: str, data_seed: int) -> list[str] | None:
    """Each fresh item's stratum: the test phrasing (carry, subtraction), the cloze set, none for the loss."""
    if measure in ("carry", "subtraction"):
        p = carry_phrasings("test", ITEMS.carry_fresh, data_seed, ITEMS.carry_start)
        return p if measure == "carry" else p[1::2]
    if measure == "cloze":
        return [k for k in CLOZE for _ in range(ITEMS.cloze_fresh)]
    return None


def kind_of(contrast: Contrast, measure: str) -> str:
    """A loss is read lower-is-better."""
    return "not-worse-lower" if measure == "text loss" else contrast.kind


# ------------------------------------------------------------------------------------ power and the protocol
def spreads(runs, rates: dict) -> dict[str, dict[str, Spread]]:
    """Each contrast's spreads, borrowed from the exploratory points its arms resemble (:attr:`Arm.like`), on the
    exploration's items (the fresh items are not read before the runs)."""
    arm = {a.name: a for a in ARMS}
    point = lambda name: runs[(arm[name].like.split("@")[0], rates[arm[name].like.split("@")[1]])]
    old = {  # the exploration's measures, for the spreads only
        "carry": lambda r: [100.0 * x for x in r["results"]["carry"]["items"]],
        "subtraction": lambda r: [100.0 * x for x in r["results"]["carry"]["items"][1::2]],
        "cloze": lambda r: [100.0 * x for k in CLOZE for x in r["results"][k]["items"]],
        "text loss": lambda r: [float(x) for x in r["results"]["lm_loss"]["items"]],
    }
    return {
        c.name: {m: Spread.of([old[m](r) for r in point(c.a)], [old[m](r) for r in point(c.b)]) for m in c.measures}
        for c in CONTRASTS
    }


def power(sp: dict[str, dict[str, Spread]], round_s: float, fixed_s: float) -> dict:
    """The seeds per arm: the smallest n in 3..20 at which every contrast's detectable difference on carry (80 %
    power, the family's level, items scaled to the fresh sets) is within its margin, if the budget allows it; else the
    most the budget allows, and the n the target would need (or that 20 does not reach it)."""
    fits = [n for n in range(3, 21) if fixed_s + n * round_s <= BUDGET_S]
    at = lambda n: {c: {m: detectable(s, n, n, FAMILY) for m, s in v.items()} for c, v in sp.items()}
    ok = lambda n: all(d["carry"] <= MARGIN["carry"] for d in at(n).values() if "carry" in d)
    target = next((n for n in range(3, 21) if ok(n)), None)
    n = target if target is not None and target in fits else fits[-1]
    return {
        "rule": "the smallest n in 3..20 at which every contrast's detectable difference on carry (80 % power, the "
        f"family's level) is within 5 points, if the {BUDGET_S // 3600}-hour budget allows it; else the most it allows",
        "target_n": target,
        "target": "reached within the budget"
        if target is not None and target in fits
        else (f"needs n = {target}, beyond the budget" if target else "not reached by any n up to 20"),
        "n": n,
        "detectable": {c: {m: round(d, 2) for m, d in v.items()} for c, v in at(n).items()},
        "spreads": {c: {m: vars(s) for m, s in v.items()} for c, v in sp.items()},
        "assumptions": "each arm's run variance from the exploratory point it resembles (the Q/O arms: their Q/K/V/O "
        "versions'; the format arm: full SFT's); no correlation between arms at a seed (pairing can only narrow the "
        "interval); the item variance of the exploration's items scaled to the fresh items' number",
    }


def _fresh_spreads(sp: dict[str, dict[str, Spread]]) -> dict[str, dict[str, Spread]]:
    """The spreads with the item term moved to the fresh sets' sizes (the per-item variance kept)."""
    n = {
        "carry": ITEMS.carry_fresh,
        "subtraction": ITEMS.carry_fresh // 2,
        "cloze": ITEMS.cloze_fresh * len(CLOZE),
        "text loss": ITEMS.lm_chunks[1] - ITEMS.lm_chunks[0],
    }
    return {c: {m: Spread(s.run_var_a, s.run_var_b, s.item_var, n[m]) for m, s in v.items()} for c, v in sp.items()}


def build(folder: Path, geometry, date: str) -> dict:
    """The protocol of the model whose results are in ``folder`` (module docstring), written on ``date``."""
    explored = Table1Result.load(folder)  # the plan and its 149 records, each checked
    plan, runs = explored.plan, exploration(explored)
    rates = choose_rates(runs)
    key = [tuple(h) for h in plan["heads"]["tuned"]]
    median, round_s, fixed_s = _costs(plan)
    pw = power(_fresh_spreads(spreads(runs, rates)), round_s, fixed_s)
    used = sorted({r["seed"] for v in runs.values() for r in v} | {5})  # 5: protocol version 1's one run
    seeds = [max(used) + 8 + i for i in range(pw["n"])]
    g = geometry
    return {
        "schema": f"arithmech.table1.protocol/{VERSION}",
        "version": VERSION,
        "supersedes": "confirmation/protocol.json (version 1, 2026-12-07, one run made: key-s5): it scored the "
        "confirmation on the exploration's own test items, on which the leads were found; its loss direction words "
        "were reversed; its n came from an unstated budget fallback",
        "model": plan["model"],
        "phase": "confirmation",
        "written": date,
        "exploration": {
            "runs": sum(map(len, runs.values())),
            "table1_sha256": safe_read.sha256(folder / "finetune" / "table1.json", folder),
            "seeds_used": used,
        },
        "items": {
            **asdict(ITEMS),
            "rule": " ".join(__doc__.split("* **fresh items** — ")[1].split(";\n* **the rates**")[0].split()),
        },
        "rates": {k: v for k, v in rates.items() if k != "full"},
        "pilot": {
            "seed": PILOT_SEED,
            "runs": {k: {"arm": arm, "rates": list(r)} for k, (arm, r) in PILOT.items()},
            "rule": "one run per rate at the pilot seed, scored on the validation items only; the rate of highest "
            "validation carry (a tie: the lower rate); made after this file is committed, before any confirmatory run",
        },
        "arms": _arms(rates),
        "heads": {
            "key": [list(h) for h in key],
            "random-any": [random_any_matched(key, g.n_layers, g.n_heads, g.group, s) for s in seeds],
            "random-layer-qo": [random_layer(key, g.n_heads, s) for s in seeds],
        },
        "seeds": seeds,
        "training": {k: plan[k] for k in ("steps", "batch_size", "data_seed")},
        "contrasts": _contrasts(),
        **_reading_rules(),
        "power": pw,
        "budget": {
            "runs": pw["n"] * len(ARMS) + sum(len(r) for _, r in PILOT.values()) + 1,
            "estimated_s": round(fixed_s + pw["n"] * round_s),
            "median_run_s": median,
            "limit_s": BUDGET_S,
            "unit": "wall clock of this 2-core machine",
        },
    }


def _costs(plan: dict) -> tuple[dict, float, float]:
    """What the confirmation costs, from the exploration's run seconds: the median run of each kind (``full``,
    ``precise-key``), one round (every arm once) and the fixed part (base's evaluation, and the pilots).
    Returns ``(median, round_s, fixed_s)``."""
    median = {}
    for a in ("full", "precise-key"):
        v = sorted(s for t, s in plan["cost"]["run_s"].items() if t.startswith(a + "-s"))
        median[a] = v[len(v) // 2]
    cost = lambda arm: median["full" if arm.mode == "full" else "precise-key"]
    round_s = sum(cost(a) for a in ARMS)
    fixed_s = median["precise-key"] + sum(  # base's evaluation, and the pilots
        len(r) * cost(next(a for a in ARMS if a.name == name)) for name, r in PILOT.values()
    )
    return median, round_s, fixed_s


def _arms(rates: dict) -> list[dict]:
    """The arms as the protocol states them: what each trains, at which rate (and its learning rate)."""
    return [
        {
            "name": a.name,
            "mode": a.mode,
            "heads": a.heads,
            "kv_policy": a.kv_policy,
            "rate": a.rate,
            "lr": rates.get(a.rate),
            "train": a.train,
            "spread_from": a.like,
        }
        for a in ARMS
    ]


def _contrasts() -> list[dict]:
    """The primary contrasts as the protocol states them: the question, the two arms, the measures and their
    margins, the claim read and its gate."""
    return [
        {
            "name": c.name,
            "question": c.question,
            "a": c.a,
            "b": c.b,
            "measures": list(c.measures),
            "claim": c.kind,
            "margins": {m: MARGIN[m] for m in c.measures},
            "gate": GATES.get(c.name),
        }
        for c in CONTRASTS
    ]


def _reading_rules() -> dict:
    """How the contrasts are read, fixed before any run: the secondary measures, the gate, the interval, the
    correction, the readings, when a contrast is decided, diverged runs and the analysis code."""
    return {
        "secondary": SECONDARY,
        "gate": "the layer-matched contrast is read only where key-qo's carry gain over base on the fresh items has "
        "its 95 % crossed interval above +5 points; else not testable",
        "interval": "d = mean(a) - mean(b) over the same seeds and the same fresh items; run term: the variance over "
        "seeds of the per-seed difference of run means, on n - 1 df (paired over seeds: both arms train on a seed's "
        "data order); item term: the per-item difference of the arms' means, its variance within strata (test "
        "phrasing; cloze set) weighted by each stratum's share, on I - S df; each term studentized by its own t and "
        "added in quadrature (conservative: the binomial residual is counted in both). The estimand: the two held-out "
        "phrasings at their realised shares (a random phrasing term would have 1 df); per-phrasing estimates beside",
        "correction": {
            "family": FAMILY,
            "level": round(1 - 0.05 / FAMILY, 6),
            "note": "Bonferroni over the primary family only; nothing else is corrected or decided",
        },
        "readings": {
            "direction": "two-sided, from the interval of a - b: 'a better' when it lies above 0 (for the text loss: "
            "below 0), 'b better' on the other side, 'within the margin' inside (-m, m), else 'inconclusive'",
            "better": "the paper's claim that a beats b: holds when the interval lies above 0 (read first); does not "
            "hold when it lies below +m (any advantage smaller than the margin, or a reversal); else inconclusive",
            "not-worse": "the paper's claim that a is within m of b or above: holds when the interval lies above -m, "
            "does not hold when below -m, else inconclusive (the text loss: lower is better, the bound is +m)",
        },
        "decision": "each contrast is read once, when every planned seed of both arms is in; before that: pending. If "
        "the runs stop early for good (budget, time), the contrasts are read on the complete rounds (every arm the "
        "same seeds), said so, with what that n detects",
        "diverged_runs": "every confirmatory run counts as it scored (no run is dropped or treated as collapsed)",
        "code": "the analysis is arithmech/table1/contrasts.py and confirmation.py as of the commit adding this file",
    }


def write(folder: Path, protocol: dict) -> Path:
    """Write ``protocol`` to ``<folder>/<FILE>``; never over an existing one."""
    path = folder / FILE
    if path.exists():
        raise ValueError(f"{quoted(path)} exists: a protocol is never replaced (write a new one under a new name)")
    path.parent.mkdir(exist_ok=True)
    return atomic_json(path, protocol)


def read(folder: Path) -> dict:
    """The protocol of ``folder``, checked against this module's version, arms and contrasts."""
    path = folder / FILE
    if not path.exists():
        raise FileNotFoundError(
            f"{quoted(path)} does not exist: write it first (`python -m arithmech confirm "
            "--write-protocol`) and commit it before any run"
        )
    p = json.loads(safe_read.read_text(path, folder))
    if p.get("schema") != f"arithmech.table1.protocol/{VERSION}" or [a["name"] for a in p["arms"]] != [
        a.name for a in ARMS
    ]:
        raise ValueError(f"{quoted(path)}: not a protocol of version {VERSION} (schema, arms)")
    return p
