"""The confirmation read from constructed records (arithmech.table1.confirmation): each primary test pending until
every planned seed is in, then decided — holds, does not hold, reversed, inconclusive — exactly as the protocol's
readings say; records of another protocol refused."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from arithmech.core import safe_read
from arithmech.table1 import protocol
from arithmech.table1.confirmation import Confirmation
from arithmech.table1.protocol import record_path

SIZES = {"carry_test": 40, "hellaswag": 10, "piqa": 10, "arc_easy": 10, "csqa": 10}


def _protocol(seeds) -> dict:
    return {
        "schema": "arithmech.table1.protocol/1",
        "model": "constructed",
        "seeds": list(seeds),
        "arms": [
            {"name": a.name, "mode": a.mode, "kv_policy": a.kv_policy, "lr": 1e-3, "train": a.train}
            for a in protocol.ARMS
        ],
        "training": {"steps": 1, "batch_size": 1, "data_seed": 0, "sizes": SIZES},
        "contrasts": [
            {
                "name": c.name,
                "question": c.question,
                "a": c.a,
                "b": c.b,
                "measures": list(c.measures),
                "claim": c.kind,
                "margins": {m: protocol.MARGIN[m] for m in c.measures},
            }
            for c in protocol.CONTRASTS
        ],
        "correction": {"family": protocol.FAMILY},
    }


def _record(arm: str, seed: int, sha: str, p_carry: float, p_cloze: float, loss: float, rng) -> dict:
    item = lambda p, n: [int(rng.random() < p) for _ in range(n)]
    return {
        "parameters": {"phase": "confirmation", "protocol_sha256": sha, "arm": arm},
        "wall_s": 10.0,
        "results": {
            "carry": {"items": item(p_carry, SIZES["carry_test"])},
            **{k: {"items": item(p_cloze, 10)} for k in protocol.CLOZE},
            "lm_loss": {"items": [loss + 0.001 * rng.random() for _ in range(8)]},
        },
    }


def _folder(tmp_path: Path, rates: dict, n_made: int | None = None, seeds=(5, 6, 7, 8)) -> Path:
    folder = tmp_path / "m"
    (folder / "confirmation").mkdir(parents=True)
    (folder / protocol.FILE).write_text(json.dumps(_protocol(seeds)))
    sha = safe_read.sha256(folder / protocol.FILE, folder)
    rng = random.Random(0)
    for i, seed in enumerate(seeds):
        for arm, (pc, pz, loss) in rates.items():
            if n_made is not None and i >= n_made and arm == "key":
                continue
            record_path(folder, arm, seed).write_text(json.dumps(_record(arm, seed, sha, pc, pz, loss, rng)))
    return folder


BASE = {a.name: (0.5, 0.5, 3.0) for a in protocol.ARMS}


def test_pending_until_every_planned_seed_is_in(tmp_path):
    """Protects the protocol's single look: no verdict while a planned seed of either arm is missing."""
    c = Confirmation.load(_folder(tmp_path, BASE, n_made=2))
    rows = c.rows()
    waiting = [r for r in rows if "key" in (r.a, r.b)]  # key has 2 of 4 seeds; key-qo vs random-layer-qo all 4
    assert waiting and {r.claim for r in waiting} == {"pending"} and all(r.estimate is None for r in waiting)
    assert all(r.claim != "pending" for r in rows if r not in waiting)
    assert "Pending" in c.sentence("matches-full") and "2 of 4" in c.sentence("matches-full")


def test_each_reading_from_constructed_records(tmp_path):
    """Protects each verdict from records: holds, does not hold, reversed (the control ahead), inconclusive."""
    rates = {
        **BASE,
        "key": (0.6, 0.45, 3.2),
        "full": (1.0, 0.5, 3.0),  # far above key: matches-full does not hold, full ahead
        "random-any": (1.0, 0.5, 3.0),  # reversed: the control beats the paper's heads
        "key-qo": (1.0, 0.5, 3.0),
        "random-layer-qo": (0.0, 0.5, 3.0),  # key-qo far ahead: holds
        "full-equal-gain": (0.6, 0.45, 3.0),  # equal cloze; loss 0.2 nats higher for key: does not hold
        "format": (0.55, 0.5, 3.0),  # close to key on 4 x 40 items: inconclusive
    }
    rows = {(r.contrast, r.measure): r for r in Confirmation.load(_folder(tmp_path, rates)).rows()}
    assert rows[("matches-full", "carry")].claim == "does not hold"
    assert rows[("matches-full", "carry")].direction == "b ahead"
    assert rows[("beats-random-any", "carry")].claim == "does not hold"
    assert rows[("beats-random-any", "carry")].direction == "b ahead"  # reversed
    assert rows[("beats-layer-matched", "carry")].claim == "holds"
    assert rows[("beats-layer-matched", "carry")].direction == "a ahead"
    assert rows[("keeps-at-equal-gain", "text loss")].claim == "does not hold"
    assert rows[("beyond-format", "carry")].claim == "inconclusive"
    r = rows[("beats-layer-matched", "carry")]
    assert (
        r.lo <= r.estimate <= r.hi
        and r.detectable >= 0
        and set(r.by_phrasing) <= {"addition-3", "addition-7", "subtraction-3", "subtraction-7"}
    )


def test_a_record_of_another_protocol_is_refused(tmp_path):
    """Protects the protocol binding: a record made under another protocol is refused, not counted."""
    folder = _folder(tmp_path, BASE)
    path = record_path(folder, "key", 5)
    rec = json.loads(path.read_text())
    rec["parameters"]["protocol_sha256"] = "0" * 64
    path.write_text(json.dumps(rec))
    with pytest.raises(ValueError, match="does not follow"):
        Confirmation.load(folder)
