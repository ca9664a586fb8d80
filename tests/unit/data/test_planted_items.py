"""The planted model's Table 1 items (arithmech.data.planted_items): sides by problem cluster, mirrors together,
at least 20 clusters a side, retention outside the fine-tune's stream, chance computed from the items."""

import re
from collections import Counter

import pytest

from arithmech.data import planted_items
from arithmech.data.splits import cluster


def _pattern(t) -> str:
    """``t``'s prompt as a regular expression: operands are numbers, every other field one word."""
    out = re.escape(t.clean)
    for f in set(re.findall(r"\{([A-Z_0-9]+)\}", t.clean)):
        out = out.replace(re.escape("{" + f + "}"), r"\d+" if f in ("A", "B") else r"\S+")
    return out


def _fits(templates, prompt: str) -> bool:
    """Whether ``prompt`` is a rendering of one of ``templates``."""
    return any(re.fullmatch(_pattern(t), prompt) for t in templates)


def _numbers(prompt: str) -> tuple[int, ...]:
    return tuple(sorted(map(int, re.findall(r"\d+", prompt))))


def test_sides_partition_the_problems_and_hold_at_least_20_clusters_each():
    """Protects the design's counting unit: the three sides partition the 158 App. A problem clusters (no cluster on
    two sides), each side holds at least 20 (and every operation some), and a cluster names an unordered pair."""
    s = planted_items.sides()
    allc = [c for side in planted_items.SIDES for c in s[side]]
    assert len(allc) == len(set(allc)) == len(planted_items.universe()) == 158
    assert all(len(s[side]) >= planted_items.MIN_CLUSTERS for side in planted_items.SIDES)
    assert all({c[0] for c in s[side]} == set(planted_items.OPERATIONS) for side in planted_items.SIDES)
    assert all(c[1] <= c[2] for c in allc)
    assert planted_items.sides(1) != s  # fixed by data_seed


def test_mirrors_stay_on_their_pairs_side():
    """Protects "a pair and its mirror on one side": both orders of every addition / multiplication cluster with two
    distinct operands belong to it, and a prompt's cluster (operation, unordered pair) lies on the prompt's side."""
    assert planted_items.orders(("addition", 3, 5)) == [(3, 5), (5, 3)] and planted_items.orders(("subtraction", 3, 5)) == [(5, 3)]
    side_of = {c: side for side in planted_items.SIDES for c in planted_items.sides()[side]}
    for side in ("val", "test"):
        for c in planted_items.sides()[side]:
            for a, b in planted_items.orders(c):
                assert side_of[cluster(type("S", (), {"op": c[0], "a": a, "b": b}))] == side


def test_every_cluster_is_asked_once_a_measure_with_its_own_operands_and_answer():
    """Protects intervals over problem clusters: each validation / test measure has one item per cluster of its side,
    whose operands are that cluster's and whose answer is the operation's; the new skill's phrasings are held-out ones
    (never Fig. 8), retention's are Fig. 8."""
    for side in ("val", "test"):
        cl = planted_items.sides()[side]
        for items in (planted_items.skill_items(side), planted_items.retention_items(side)):
            assert len(items) == len(cl) >= planted_items.MIN_CLUSTERS
            assert [_numbers(p) for p, _ in items] == [(c[1], c[2]) for c in cl]
        assert all(_fits(planted_items.PHRASINGS, p) and not _fits(planted_items.FIG8, p) for p, _ in planted_items.skill_items(side))
        assert all(_fits(planted_items.FIG8, p) and not _fits(planted_items.PHRASINGS, p) for p, _ in planted_items.retention_items(side))
        assert set(planted_items.skill_items(side)).isdisjoint(planted_items.retention_items(side))


def test_the_fine_tunes_stream_never_draws_a_validation_or_test_problem():
    """Protects retention (and the new skill's held-out test) from training: the clusters every row of a long
    fine-tune stream asks (its two operands, its recorded cluster) all lie on the train side, so their intersection with
    the validation and test clusters of either measure is empty, and no evaluation prompt appears in the stream."""
    rows = planted_items.train_rows(20_000, seed=0) + planted_items.train_rows(5_000, seed=7)
    streamed = {c for _, _, c in rows}
    assert all(_numbers(p) == (c[1], c[2]) for p, _, c in rows)
    assert streamed <= set(planted_items.sides()["train"])
    prompts = {p for p, _, _ in rows}
    for side in ("val", "test"):
        assert streamed & set(planted_items.sides()[side]) == set()
        assert prompts & {p for p, _ in planted_items.skill_items(side) + planted_items.retention_items(side)} == set()
    kinds = [(_fits(planted_items.PHRASINGS, p), _fits(planted_items.FIG8, p)) for p, _, _ in rows[:400]]
    assert kinds == [(True, False), (False, True)] * 200  # alternately the new skill and the Fig. 8 replay


def test_chance_is_the_sides_per_operation_majority_share():
    """Protects the chance level from being typed or set too low: every phrasing names its operation, so chance is
    the per-operation majority (each operation's most frequent answer's share of its items, weighted by its items:
    what an operand-blind model that reads the operation scores), at least the pooled majority share and above 0 on
    every side; the operations are the side's clusters', in order."""
    items = [("a", "1"), ("b", "1"), ("c", "2"), ("d", "3")]
    assert planted_items.majority_share(items) == 0.5
    assert planted_items.majority_share(items, ["add", "add", "mul", "mul"]) == 0.75  # 2 of 2, then 1 of 2
    with pytest.raises(ValueError):
        planted_items.majority_share(items, ["add"])
    for side in ("val", "test"):
        ops = [c[0] for c in planted_items.sides()[side]]
        for items in (planted_items.skill_items(side), planted_items.retention_items(side)):
            per = sum(Counter(a for (_, a), o in zip(items, ops) if o == op).most_common(1)[0][1] for op in set(ops))
            assert planted_items.side_chance(side, items) == per / len(items) >= planted_items.majority_share(items) > 0.05
