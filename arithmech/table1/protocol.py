"""The confirmation protocol: written from the exploration's records, frozen in a file, committed before any run.

:func:`build` reads the 149 exploratory runs (``finetune/``, listed by ``finetune/table1.json``) and fixes, by rules
stated here and copied into the file:

* **the rates** — each arm's rate is chosen on the exploration's *validation* items (never test): precise-key and
  full SFT each take their replicated rate of highest mean validation carry; the retention arm takes the full
  rate whose mean validation carry is nearest precise-key's at its rate (equal gain); every precise arm takes
  precise-key's rate (matched rates, as in the exploration); the format arm takes full SFT's;
* **the arms** (:data:`ARMS`) — precise-key as explored; a random arm of any layer that tunes *exactly* as many
  parameters (its heads read as many key/value groups as the key heads, none of theirs); Q/O-only twins of
  precise-key and of a truly layer-matched random arm (with K/V frozen every head of a key head's layer is a
  free control: layer 20 can be matched); full SFT at its rate and at the equal-gain rate; a format-only full SFT
  trained on two-digit problems *without* carry or borrow (:func:`arithmech.data.splits.plain_items`);
* **the contrasts** (:data:`CONTRASTS`) — each on carry and on subtraction with borrow (retention: pooled cloze
  and text loss), two-sided, with the exploration's margins (5 points, 0.05 nats), one Bonferroni correction over
  this primary family only;
* **the seeds** — fresh (none of the exploration's), as many per arm as the power calculation asks
  (:func:`choose_n`) within the budget; the random arms' heads drawn now, one draw per seed, and written down.

:func:`write` refuses to replace a protocol: a protocol is changed only by a new file under a new name, in git.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from arithmech.core import records, safe_read
from arithmech.core.atomic import atomic_json
from arithmech.core.inputs import quoted
from arithmech.data.splits import carry_phrasings
from arithmech.table1.contrasts import KINDS, Spread, detectable

FILE = "confirmation/protocol.json"
"""Where a model's protocol lives, inside its results folder."""

MARGIN = {"carry": 5.0, "subtraction": 5.0, "cloze": 5.0, "text loss": 0.05}
"""The margin of each measure (points; nats), the exploration's (:data:`arithmech.claims.curves.MARGIN`)."""

CLOZE = ("hellaswag", "piqa", "arc_easy", "csqa")
"""The pooled cloze sets of the retention contrast (MMLU's cloze sits at chance for every arm and is left out)."""

RATE_RULE = (
    "chosen on the exploration's validation items, never test: precise-key and full SFT each take their replicated "
    "rate (>= 3 runs) of highest mean validation carry; the equal-gain arm takes the replicated full rate whose mean "
    "validation carry is nearest precise-key's at its rate; every precise arm takes precise-key's rate; the format "
    "arm takes full SFT's"
)

BUDGET_S = 8 * 3600
"""The confirmation's budget: 8 hours of this 2-core machine."""


@dataclass(frozen=True)
class Arm:
    """One confirmatory arm: full SFT or precise SFT of some heads, at a rate chosen by a rule, on some data."""

    name: str
    mode: str  # "full" | "precise"
    heads: str  # "key" | "random-any-matched" | "random-layer" | "" (full)
    kv_policy: str  # "any": a head's K/V group trains too; "none": W_Q rows and W_O columns only
    rate: str  # "key" | "full" | "equal-gain"
    train: str  # "carry" | "plain" (no carry, no borrow: the format alone)
    like: str  # the exploratory arm and rate whose spread the power calculation borrows


ARMS = (
    Arm("key", "precise", "key", "any", "key", "carry", "precise-key@key"),
    Arm("full", "full", "", "", "full", "carry", "full@full"),
    Arm("random-any", "precise", "random-any-matched", "any", "key", "carry", "precise-random-any@key"),
    Arm("key-qo", "precise", "key", "none", "key", "carry", "precise-key@key"),
    Arm("random-layer-qo", "precise", "random-layer", "none", "key", "carry", "precise-random@key"),
    Arm("full-equal-gain", "full", "", "", "equal-gain", "carry", "full@equal-gain"),
    Arm("format", "full", "", "", "full", "plain", "full@full"),
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
        "matches-full",
        "Does tuning the paper's heads match full SFT on math?",
        "key",
        "full",
        ("carry", "subtraction"),
        "not-worse",
    ),
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
        "At equal math gain, does precise SFT keep general skill at least as well?",
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

assert all(c.kind in KINDS for c in CONTRASTS)


def record_path(folder: Path, arm: str, seed: int) -> Path:
    """Where the confirmation keeps ``arm``'s run at ``seed``: ``<folder>/confirmation/<arm>-s<seed>.json``."""
    return folder / "confirmation" / f"{arm}-s{seed}.json"


# ------------------------------------------------------------------------------------ measures
def scores(record: dict, measure: str) -> list[float]:
    """One run's per-item scores on ``measure`` (points of accuracy; nats per token for the text loss)."""
    r = record["results"]
    if measure == "carry":
        return [100.0 * x for x in r["carry"]["items"]]
    if measure == "subtraction":  # carry items alternate addition, subtraction (arithmech.data.splits.carry_items)
        return [100.0 * x for x in r["carry"]["items"][1::2]]
    if measure == "cloze":
        return [100.0 * x for k in CLOZE for x in r[k]["items"]]
    if measure == "text loss":
        return [float(x) for x in r["lm_loss"]["items"]]
    raise ValueError(f"measure {measure!r}: one of {tuple(MARGIN)}")


def strata(measure: str, sizes: dict, data_seed: int) -> list[str] | None:
    """Each item's stratum on ``measure``: the test phrasing (carry, subtraction), the cloze set, none for loss."""
    if measure in ("carry", "subtraction"):
        p = carry_phrasings("test", sizes["carry_test"], data_seed)
        return p if measure == "carry" else p[1::2]
    if measure == "cloze":
        return [k for k in CLOZE for _ in range(sizes[k])]
    return None


def kind_of(contrast: Contrast, measure: str) -> str:
    """A loss is read lower-is-better."""
    return "not-worse-lower" if measure == "text loss" else contrast.kind


# ------------------------------------------------------------------------------------ the exploration
def exploration(folder: Path) -> dict[tuple[str, float], list[dict]]:
    """Every exploratory run listed by ``finetune/table1.json``, by ``(arm, rate)``, each record checked."""
    plan = _plan(folder)
    out: dict[tuple[str, float], list[dict]] = {}
    for arm, a in plan["arms"].items():
        for row in a["grid_rows"]:
            mode, tag = row["tag"].split("-", 1)
            out.setdefault((arm, row["lr"]), []).append(records.read_finetune(folder, mode, tag))
    return out


def _plan(folder: Path) -> dict:
    return json.loads(safe_read.read_text(folder / "finetune" / "table1.json", folder))


def _val(runs: list[dict]) -> float:
    return sum(r["parameters"]["validation"]["carry"]["value"] for r in runs) / len(runs)


def choose_rates(runs: dict[tuple[str, float], list[dict]], min_runs: int = 3) -> dict:
    """The rates by the module's rules, from validation carry alone (replicated rates: at least ``min_runs``)."""
    val = {k: _val(v) for k, v in runs.items() if len(v) >= min_runs}
    best = lambda arm: max((v, lr) for (a, lr), v in val.items() if a == arm)[1]
    key, full = best("precise-key"), best("full")
    target = val[("precise-key", key)]
    equal = min((abs(v - target), lr) for (a, lr), v in val.items() if a == "full")[1]
    return {
        "key": key,
        "full": full,
        "equal-gain": equal,
        "validation_carry": {f"{a}@{lr:g}": round(v, 4) for (a, lr), v in sorted(val.items())},
    }


# ------------------------------------------------------------------------------------ the heads
def _groups(heads, group: int) -> set[tuple[int, int]]:
    return {(l, h // group) for l, h in heads}


def random_any_matched(key, n_layers: int, n_heads: int, group: int, draw: int) -> list[list[int]]:
    """``len(key)`` heads of any layer reading exactly as many key/value groups as ``key`` (so precise SFT tunes
    exactly as many parameters) and none of ``key``'s groups (so no tuned parameter is shared); seeded by ``draw``."""
    taken, want = _groups(key, group), len(_groups(key, group))
    free = [(l, h) for l in range(n_layers) for h in range(n_heads) if (l, h // group) not in taken]
    rng = random.Random(f"confirm:random-any-matched:{draw}")
    for _ in range(100_000):
        pick = sorted(rng.sample(free, len(key)))
        if len(_groups(pick, group)) == want:
            return [list(h) for h in pick]
    raise ValueError(f"no draw of {len(key)} free heads reads exactly {want} key/value groups")


def random_layer(key, n_heads: int, draw: int) -> list[list[int]]:
    """For each key head, a non-key head of the same layer (Q/O only: no parameter is shared); seeded by ``draw``."""
    rng = random.Random(f"confirm:random-layer:{draw}")
    out: list[tuple[int, int]] = []
    for layer in sorted(l for l, _ in key):
        pool = [(layer, h) for h in range(n_heads) if (layer, h) not in key and (layer, h) not in out]
        if not pool:
            raise ValueError(f"layer {layer} has no free head left")
        out.append(rng.choice(pool))
    return [list(h) for h in sorted(out)]


# ------------------------------------------------------------------------------------ power and the protocol
def spreads(runs, rates: dict, plan: dict) -> dict[str, dict[str, Spread]]:
    """Each contrast's spreads, borrowed from the exploratory points its arms resemble (:attr:`Arm.like`)."""
    arm = {a.name: a for a in ARMS}
    point = lambda name: runs[(arm[name].like.split("@")[0], rates[arm[name].like.split("@")[1]])]
    out: dict[str, dict[str, Spread]] = {}
    for c in CONTRASTS:
        out[c.name] = {}
        for m in c.measures:
            a = [scores(r, m) for r in point(c.a)]
            b = [scores(r, m) for r in point(c.b)]
            out[c.name][m] = Spread.of(a, b, strata(m, plan["sizes"], plan["data_seed"]))
    return out


def choose_n(sp: dict[str, dict[str, Spread]], round_s: float, low: int = 3, high: int = 10) -> int:
    """The smallest number of seeds per arm at which every contrast's detectable difference on carry is within its
    margin; where none within the budget, the most the budget allows."""
    fits = [n for n in range(low, high + 1) if n * round_s <= BUDGET_S]
    for n in fits:
        if all(detectable(s["carry"], n, n, FAMILY) <= MARGIN["carry"] for s in sp.values() if "carry" in s):
            return n
    return fits[-1] if fits else low


def build(folder: Path, geometry, date: str) -> dict:
    """The protocol of the model whose results are in ``folder`` (module docstring), written on ``date``."""
    plan = _plan(folder)
    runs = exploration(folder)
    rates = choose_rates(runs)
    key = [tuple(h) for h in plan["heads"]["tuned"]]
    cost = {
        a: sorted(v for t, v in plan["cost"]["run_s"].items() if t.startswith(a + "-s"))
        for a in ("full", "precise-key")
    }
    median = {a: v[len(v) // 2] for a, v in cost.items()}
    round_s = sum(median["full" if a.mode == "full" else "precise-key"] for a in ARMS)
    sp = spreads(runs, rates, plan)
    n = choose_n(sp, round_s)
    used = sorted({r["seed"] for v in runs.values() for r in v})
    seeds = [max(used) + 1 + i for i in range(n)]
    g = geometry
    return {
        "schema": "arithmech.table1.protocol/1",
        "model": plan["model"],
        "phase": "confirmation",
        "written": date,
        "exploration": {
            "runs": sum(map(len, runs.values())),
            "table1_sha256": safe_read.sha256(folder / "finetune" / "table1.json", folder),
            "seeds_used": used,
        },
        "rates": {**rates, "rule": RATE_RULE},
        "arms": [
            {
                "name": a.name,
                "mode": a.mode,
                "heads": a.heads,
                "kv_policy": a.kv_policy,
                "lr": rates[a.rate],
                "rate_rule": a.rate,
                "train": a.train,
                "spread_from": a.like,
            }
            for a in ARMS
        ],
        "heads": {
            "key": [list(h) for h in key],
            "random-any": [random_any_matched(key, g.n_layers, g.n_heads, g.group, s) for s in seeds],
            "random-layer-qo": [random_layer(key, g.n_heads, s) for s in seeds],
        },
        "seeds": seeds,
        "training": {k: plan[k] for k in ("steps", "batch_size", "data_seed", "sizes")},
        "contrasts": [
            {
                "name": c.name,
                "question": c.question,
                "a": c.a,
                "b": c.b,
                "measures": list(c.measures),
                "claim": c.kind,
                "margins": {m: MARGIN[m] for m in c.measures},
            }
            for c in CONTRASTS
        ],
        "interval": "d = mean(a) - mean(b) over runs and items; crossed interval (arithmech.core.stats."
        "crossed_interval): each arm's variance of run means on its own t (n - 1 df), plus the item term of "
        "the per-item difference, stratified by test phrasing (cloze: by set), on I - S df, added in "
        "quadrature; per-phrasing estimates shown beside",
        "correction": {
            "family": FAMILY,
            "level": round(1 - 0.05 / FAMILY, 6),
            "note": "Bonferroni over the primary family only; nothing else is corrected or decided",
        },
        "readings": {
            "direction": "two-sided, from the interval of a - b: 'a ahead' above 0, 'b ahead' below 0, 'within the "
            "margin' inside (-m, m), else 'inconclusive'",
            "better": "the paper's claim that a beats b: holds when the interval lies above 0, does not hold when it "
            "lies below +m (any advantage smaller than the margin, or a reversal), else inconclusive",
            "not-worse": "the paper's claim that a is within m of b or above: holds when the interval lies above -m, "
            "does not hold when below -m, else inconclusive (a loss: lower is better, the bound is +m)",
        },
        "decision": "a verdict is read only once every planned seed of both arms is in; before that: pending",
        "diverged_runs": "every confirmatory run counts as it scored (no run is dropped or treated as collapsed)",
        "power": {
            "rule": f"the smallest n in 3..10 (within {BUDGET_S // 3600} hours) at which every contrast's "
            "detectable difference on carry (80 % power, the family's level) is within 5 points",
            "n": n,
            "detectable": {c: {m: round(detectable(s, n, n, FAMILY), 2) for m, s in v.items()} for c, v in sp.items()},
            "spreads": {c: {m: vars(s) for m, s in v.items()} for c, v in sp.items()},
        },
        "budget": {
            "runs": n * len(ARMS),
            "estimated_s": round(n * round_s),
            "median_run_s": median,
            "limit_s": BUDGET_S,
        },
    }


def write(folder: Path, protocol: dict) -> Path:
    """Write ``protocol`` to ``<folder>/confirmation/protocol.json``; never over an existing one."""
    path = folder / FILE
    if path.exists():
        raise ValueError(f"{quoted(path)} exists: a protocol is never replaced (write a new one under a new name)")
    path.parent.mkdir(exist_ok=True)
    return atomic_json(path, protocol)


def read(folder: Path) -> dict:
    """The protocol of ``folder``, checked against this module's arms and contrasts."""
    path = folder / FILE
    if not path.exists():
        raise FileNotFoundError(
            f"{quoted(path)} does not exist: write it first (`python -m arithmech confirm "
            "--write-protocol`) and commit it before any run"
        )
    p = json.loads(safe_read.read_text(path, folder))
    if p.get("schema") != "arithmech.table1.protocol/1" or [a["name"] for a in p["arms"]] != [a.name for a in ARMS]:
        raise ValueError(f"{quoted(path)}: not a protocol of this version (schema, arms)")
    return p
