"""Few-shot prompts (arithmech.data.shots): the solved examples keep the counterfactual meaningful."""
from __future__ import annotations

import re

import pytest

from arithmech.data import pairs, shots, templates

OPS = {"+": "addition", "-": "subtraction", "*": "multiplication", "/": "division"}


def test_zero_shots_draws_exactly_the_zero_shot_pairs(tok):
    """Protects: shots=0 reproduces today's pairs byte for byte (text, answer, positions and JSON row)."""
    a, sa = pairs.make_pairs(tok, "all", n=96, seed=3, answer_token="last-digit")
    b, sb = pairs.make_pairs(tok, "all", n=96, seed=3, answer_token="last-digit", shots=0)
    assert [s.to_json() for s in a] == [s.to_json() for s in b] and sa.redrawn == sb.redrawn
    assert "prefix" not in a[0].to_json()


@pytest.mark.parametrize("k", [2, 4, 8])
def test_examples_mix_operations_and_are_solved(k):
    """Protects: K examples of mixed operations (every block of four holds each operation once), each
    correctly solved, in the query's phrasing row; their operand pairs are distinct."""
    text, used = shots.examples(templates.TEMPLATES["mul-1"], k, seed=0)
    rows = text.split(shots.SEPARATOR)[:-1]
    assert len(rows) == k and len(used) == k
    ops = []
    for r in rows:
        a, sym, b, _, c = r.split()
        ops.append(OPS[sym])
        x, y = int(a), int(b)
        assert int(c) == {"addition": x + y, "subtraction": x - y, "multiplication": x * y,
                          "division": x // y}[OPS[sym]]
    assert len(set(ops)) == min(k, 4)                      # never one operation only
    if k == 8:
        assert sorted(ops) == sorted(list(OPS.values()) * 2)


def test_examples_are_in_the_template_family():
    """Protects: a Fig. 8 row takes its examples from the same row of every operation; Fig. 10 templates
    (addition only) take the equation row, never their own addition phrasing."""
    text, _ = shots.examples(templates.TEMPLATES["sub-6"], 4, seed=1)
    assert all(r.startswith("Q: How much is ") for r in text.split("\n")[:-1])
    assert {t.id for t in shots.phrasing(templates.TEMPLATES["div-6"]).values()} == {"add-6", "sub-6", "mul-6", "div-6"}
    assert {t.id for t in shots.phrasing(templates.TEMPLATES["span-3"]).values()} == {"add-1", "sub-1", "mul-1", "div-1"}


def test_few_shot_pairs_share_examples_and_avoid_their_operands(tok):
    """Protects: X_r and X_c start with the same examples (one text per template and seed), differ after
    them only where the zero-shot pair differs, and no query uses an example's operand pair."""
    ss, _ = pairs.make_pairs(tok, "all", n=192, seed=0, answer_token="last-digit", shots=4)
    by_tpl = {}
    for s in ss:
        assert s.prefix and s.clean.startswith(s.prefix) and s.corrupt.startswith(s.prefix)
        assert by_tpl.setdefault(s.template, s.prefix) == s.prefix
        _, used = shots.examples(templates.TEMPLATES[s.template], 4, seed=0)
        assert (s.a, s.b) not in used
        assert len(tok(s.clean)["input_ids"]) == len(tok(s.corrupt)["input_ids"])
        assert s.positions["A"][0] >= len(tok(s.prefix)["input_ids"])     # roles point into the query
    assert len(by_tpl) == 48


def test_operand_counterfactual_keeps_the_examples(tok):
    """Protects: the operand counterfactual changes only the query's operands, after the same examples."""
    ss, _ = pairs.make_operand_pairs(tok, "addition", n=42, seed=0, answer_token="last-digit", shots=2)
    for s in ss:
        assert s.corrupt.startswith(s.prefix) and s.corrupt != s.clean
        _, used = shots.examples(templates.TEMPLATES[s.template], 2, seed=0)
        nums = tuple(int(x) for x in re.findall(r"\d+", s.corrupt[len(s.prefix):]))[:2]
        assert nums not in used


def test_group_by_length_batches_one_prefix_together(tok):
    """Protects: prompts with the same examples share a batch (their prefix runs once); zero-shot batching
    is unchanged (a prompt without a newline groups by length only)."""
    ss, _ = pairs.make_pairs(tok, "addition", n=63, seed=0, answer_token="last-digit", shots=4)
    for idx, ids in pairs.group_by_length(tok, [s.clean for s in ss], batch_size=64):
        assert len({ss[i].prefix for i in idx}) == 1
    zs, _ = pairs.make_pairs(tok, "addition", n=63, seed=0, answer_token="last-digit")
    got = [idx for idx, _ in pairs.group_by_length(tok, [s.clean for s in zs], batch_size=8)]
    lens = [len(tok(s.clean)["input_ids"]) for s in zs]
    want = []
    for L in sorted(set(lens)):
        same = [i for i, n in enumerate(lens) if n == L]
        want += [same[j:j + 8] for j in range(0, len(same), 8)]
    assert got == want


def test_negative_shots_is_refused():
    """Protects: a negative number of examples is a clear error, not an empty prefix."""
    with pytest.raises(ValueError, match="shots=-1"):
        shots.examples(templates.TEMPLATES["add-1"], -1, 0)
