"""What the protocol builds from (arithmech.table1.protocol, arithmech.data.splits): the format-only data holds
no carry, no borrow and no held-out pair; the phrasing labels are the items' own; the random draws keep their
promises on a constructed grouped-query geometry; the measures read the records' items."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from arithmech.core import safe_read
from arithmech.data import splits
from arithmech.table1 import plan, protocol
from arithmech.table1.result import Table1Result


def test_plain_items_need_no_carry_and_ask_no_held_out_pair():
    """Protects the format-only arm's data: no carry, no borrow, no validation or test pair; seeded."""
    held = {(min(a, b), max(a, b)) for s in ("val", "test") for a, b, _ in splits.carry_pairs(0)[s]}
    for prompt, answer in splits.plain_items(400, 0, 3):
        a, b = map(int, re.findall(r"\d+", prompt)[:2])
        assert (min(a, b), max(a, b)) not in held
        if int(answer) == a + b:
            assert a % 10 + b % 10 < 10
        else:
            assert int(answer) == a - b and a % 10 >= b % 10
    assert splits.plain_items(50, 0, 3) == splits.plain_items(50, 0, 3) != splits.plain_items(50, 0, 4)


def test_the_phrasing_labels_are_the_items_own():
    """Protects the strata: each carry item's phrasing label names its own operation and form."""
    items, labels = splits.carry_items("test", 40, 0), splits.carry_phrasings("test", 40, 0)
    forms = {t.clean.split("{")[0]: splits.form(t) for t in splits.carry_forms("test")}
    for (prompt, answer), label in zip(items, labels):
        op, form = label.split("-")
        assert (op == "addition") == (int(answer) == sum(map(int, re.findall(r"\d+", prompt)[:2])))
        assert form in {"3", "7"}
    assert len(set(labels)) == 4 and forms


@pytest.mark.parametrize("draw", range(5))
def test_random_any_matched_reads_as_many_groups_and_none_of_the_keys(draw):
    """Protects parameter matching under grouped-query attention on a constructed geometry."""
    key = [(2, 0), (2, 1), (3, 4), (5, 8)]  # 3 groups of 3 query heads per layer: key reads 3 groups
    pick = [tuple(h) for h in plan.random_any_matched(key, 8, 9, 3, draw)]
    groups = lambda hs: {(layer, h // 3) for layer, h in hs}
    assert len(pick) == 4 and len(groups(pick)) == len(groups(key)) and not groups(pick) & groups(key)


def test_random_layer_keeps_the_layers_and_avoids_the_key_heads():
    """Protects layer matching: the key heads' layers, never a key head; a full layer refused."""
    key = [(2, 0), (2, 1), (2, 2), (5, 8)]
    pick = [tuple(h) for h in plan.random_layer(key, 9, 0)]
    assert sorted(layer for layer, _ in pick) == [2, 2, 2, 5] and not set(pick) & set(key)
    with pytest.raises(ValueError, match="no free head"):
        plan.random_layer([(0, 0), (0, 1)], 2, 0)


def test_the_measures_read_the_records_items():
    """Protects the measures: carry, subtraction (odd items), pooled cloze and loss read from a record's fresh items."""
    rec = {
        "results": {
            "carry_fresh": {"items": [1, 0, 0, 1]},
            "lm_loss_fresh": {"items": [3.0, 2.5]},
            **{f"{k}_fresh": {"items": [1, 0]} for k in protocol.CLOZE},
        }
    }
    assert protocol.scores(rec, "carry") == [100, 0, 0, 100]
    assert protocol.scores(rec, "subtraction") == [0, 100]  # the odd items: subtraction with borrow
    assert protocol.scores(rec, "cloze") == [100, 0] * 4
    assert protocol.scores(rec, "text loss") == [3.0, 2.5]


# ---------------------------------------------------------------- the shipped protocol (results/smollm2-135m)
ROOT = Path(__file__).resolve().parents[3]
FOLDER = ROOT / "results" / "smollm2-135m"
SHIPPED = json.loads((FOLDER / protocol.FILE).read_text())


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def _added_in(path: Path) -> str:
    """The commit that first added ``path`` (the last line of git's log of additions, following no renames)."""
    out = _git("log", "-m", "--diff-filter=A", "--format=%H", "--", str(path.relative_to(ROOT)))  # -m: merges too
    assert out, f"{path} is not committed"
    return out.splitlines()[-1]


@pytest.mark.parametrize(
    ("protocol_file", "records"),
    [("confirmation/protocol.json", "confirmation"), (protocol.FILE, protocol.RECORDS)],  # version 1, superseded; 2
)
def test_every_confirmatory_record_was_committed_after_its_protocol(protocol_file, records):
    """Protects rules before results: every record of a protocol version (each of its runs, pilots and base) was
    committed in a commit that descends from — and is not — the one that added its protocol, and says so itself (its
    phase and the protocol's sha256)."""
    first = _added_in(FOLDER / protocol_file)
    sha = safe_read.sha256(FOLDER / protocol_file, FOLDER)
    made = sorted(p for p in (FOLDER / records).glob("*.json") if not p.name.startswith(("protocol", "confirmation")))
    for path in made:
        if not _git("ls-files", str(path.relative_to(ROOT))):
            continue  # made here and not yet committed: the next commit is after the protocol's by construction
        commit = _added_in(path)
        assert commit != first, f"{path.name} was committed with the protocol"
        assert subprocess.run(["git", "-C", str(ROOT), "merge-base", "--is-ancestor", first, commit]).returncode == 0
        p = json.loads(path.read_text())["parameters"]
        assert p["phase"] in ("confirmation", "pilot") and p["protocol_sha256"] == sha, path.name


def test_the_protocols_rates_are_the_rule_applied_to_the_exploration():
    """Protects the rate rule: the shipped rates are the validation rule applied to the 149 records; seeds fresh."""
    rates = plan.choose_rates(plan.exploration(Table1Result.load(FOLDER)))
    assert {k: rates[k] for k in ("key", "equal-gain")} == {k: SHIPPED["rates"][k] for k in ("key", "equal-gain")}
    assert {a["name"]: a["lr"] for a in SHIPPED["arms"]} == {a.name: rates.get(a.rate) for a in protocol.ARMS}
    used = set(SHIPPED["exploration"]["seeds_used"])
    assert (
        used >= {0, 1, 2, 3, 4, 5}
        and not used & set(SHIPPED["seeds"])
        and protocol.PILOT_SEED not in used | set(SHIPPED["seeds"])
    ), "confirmatory and pilot seeds must be fresh"


def test_the_random_arms_match_what_they_claim():
    """Protects the controls' design: parameter-matched any-layer draws and truly layer-matched Q/O draws. SmolLM2: 9 query heads on 3 key/value groups per layer. The any-layer arm reads exactly as many groups as the
    key heads (so the same number of tuned parameters) and none of theirs; the Q/O arm keeps the key heads' layers
    and never a key head."""
    key = [tuple(h) for h in SHIPPED["heads"]["key"]]
    groups = lambda hs: {(layer, head // 3) for layer, head in hs}
    for draw in SHIPPED["heads"]["random-any"]:
        draw = [tuple(h) for h in draw]
        assert len(draw) == len(key) and len(groups(draw)) == len(groups(key)) and not groups(draw) & groups(key)
    for draw in SHIPPED["heads"]["random-layer-qo"]:
        draw = [tuple(h) for h in draw]
        assert sorted(layer for layer, _ in draw) == sorted(layer for layer, _ in key) and not set(draw) & set(key)
    assert len(SHIPPED["heads"]["random-any"]) == len(SHIPPED["seeds"])


def test_fresh_items_are_none_the_exploration_scored():
    """Protects the fresh items: the carry items past the first 200 problems of each operation share no problem with
    the exploration's 400, and the fresh cloze draw shares no item with the exploration's 100 per set."""
    from arithmech.evals import cloze

    old = set(splits.carry_items("test", 400, 0))
    fresh = splits.carry_items("test", protocol.ITEMS.carry_fresh, 0, start=protocol.ITEMS.carry_start)
    assert len(fresh) == 280 and not old & set(fresh) and len(set(fresh)) == 280
    for name in protocol.CLOZE:
        used = {(it.context, tuple(it.choices), it.gold) for it in cloze.sample(name, 100, 0)}
        new = {(it.context, tuple(it.choices), it.gold) for it in cloze.fresh(name, 200, 0, 100)}
        assert len(new) == 200 and not used & new
