"""Few-shot prompts (arithmech.data.shots): the solved examples keep the counterfactual meaningful."""
from __future__ import annotations

import hashlib
import json
import re

import pytest

from arithmech.data import pairs, shots, templates
from arithmech.data.batches import group_by_length

OPS = {"+": "addition", "-": "subtraction", "*": "multiplication", "/": "division"}


# sha256 (first 16 hex digits) of the JSON rows of make_pairs(tok, task, n=96, seed=3, draw=Draw("last-digit", 0, 1))
# at commit 30387f0, the last one before solved examples existed (division's draw changed since, by design).
BEFORE_SHOTS = {"addition": "c06aa098a7c52ec6", "fig10": "c76b79dcc9f89c97", "subtraction": "d0815ef8a75fb22f",
                "multiplication": "fd2b51f0c3d1b89c"}


@pytest.mark.parametrize("task", sorted(BEFORE_SHOTS))
def test_zero_shots_draws_exactly_the_pairs_of_before(tok, task):
    """Protects: shots=0 reproduces the pairs drawn before few-shot prompts existed, byte for byte (text,
    answer, positions and JSON row), and writes no prefix field."""
    ss, st = pairs.make_pairs(tok, task, n=96, seed=3, draw=pairs.Draw("last-digit", 0, 1))
    digest = hashlib.sha256(json.dumps([s.to_json() for s in ss], sort_keys=True).encode()).hexdigest()[:16]
    assert digest == BEFORE_SHOTS[task] and st.redrawn == 0
    assert "prefix" not in ss[0].to_json()


@pytest.mark.parametrize("k", [2, 3, 4, 8])
@pytest.mark.parametrize("seed", range(6))
def test_examples_are_balanced_solved_and_never_point_at_the_query(k, seed):
    """Protects: K correctly solved examples in the query's phrasing row whose operations are balanced — each
    k // 4 or k // 4 + 1 times, the query's own k // 4 times (absent below four) and never in the last
    example, next to the query — and whose operand pairs are distinct in either order."""
    ex = shots.examples(templates.TEMPLATES["mul-1"], k, seed=seed, index=seed * 7)
    rows = ex.text.split(shots.SEPARATOR)[:-1]
    assert len(rows) == k and len(ex.pairs) <= 2 * k
    ops = []
    for r in rows:
        a, sym, b, _, c = r.split()
        ops.append(OPS[sym])
        x, y = int(a), int(b)
        assert int(c) == {"addition": x + y, "subtraction": x - y, "multiplication": x * y,
                          "division": x // y}[OPS[sym]]
    counts = {op: ops.count(op) for op in OPS.values()}
    assert counts["multiplication"] == k // 4 and set(counts.values()) <= {k // 4, k // 4 + 1}
    assert ops[-1] != "multiplication"
    assert len({frozenset((a, b)) for a, b in ex.pairs}) == k      # distinct pairs, either order


def test_examples_are_in_the_template_family():
    """Protects: a Fig. 8 row takes its examples from the same row of every operation; Fig. 10 templates
    (addition only) take the equation row, never their own addition phrasing."""
    text = shots.examples(templates.TEMPLATES["sub-6"], 4, seed=1, index=0).text
    assert all(r.startswith("Q: How much is ") for r in text.split("\n")[:-1])
    assert {t.id for t in shots.phrasing(templates.TEMPLATES["div-6"]).values()} == {"add-6", "sub-6", "mul-6", "div-6"}
    assert {t.id for t in shots.phrasing(templates.TEMPLATES["span-3"]).values()} == {"add-1", "sub-1", "mul-1", "div-1"}
    # a two-digit twin takes its one-digit template's rows (the examples the ranking prompts of that form carry)
    assert shots.phrasing(templates.TEMPLATES["mul-6-2d"]) == shots.phrasing(templates.TEMPLATES["mul-6"])


def test_few_shot_pairs_share_examples_and_avoid_their_operands(tok):
    """Protects: X_r and X_c start with the same examples (the k-th prompt's own set), differ after
    them only where the zero-shot pair differs, and no query has an example's operand pair (in either order)
    or the answer of an example of its own operation."""
    ss, _ = pairs.make_pairs(tok, "all", n=192, seed=0, draw=pairs.Draw("last-digit", 4, shots.EXAMPLE_SETS))
    by_tpl = {}
    for i, s in enumerate(ss):
        assert s.prefix and s.clean.startswith(s.prefix) and s.corrupt.startswith(s.prefix)
        by_tpl.setdefault(s.template, set()).add(s.prefix)
        ex = shots.examples(templates.TEMPLATES[s.template], 4, seed=0, index=shots.set_index(i, 48, shots.EXAMPLE_SETS))
        assert s.prefix == ex.text
        assert (s.a, s.b) not in ex.pairs and (s.b, s.a) not in ex.pairs and (s.op, int(s.target)) not in ex.answers
        assert len(tok(s.clean)["input_ids"]) == len(tok(s.corrupt)["input_ids"])
        assert s.positions["A"][0] >= len(tok(s.prefix)["input_ids"])     # roles point into the query
    assert len(by_tpl) == 48
    assert all(len(p) == 4 for p in by_tpl.values())           # 192 prompts: 4 per template, 4 sets


def test_templates_cycle_through_their_example_sets(tok):
    """Protects: a template's prompts take its EXAMPLE_SETS sets in turn, so that a template with few queries
    (subtraction with single digits: 36-45) still gives many distinct prompts — with one set per template,
    2,560 draws repeated a few hundred prompts — while the prompts of one set share a prefix to run once."""
    n = 9 * shots.EXAMPLE_SETS * 4
    ss, _ = pairs.make_pairs(tok, "subtraction", n=n, seed=0, draw=pairs.Draw("last-digit", 2, shots.EXAMPLE_SETS))
    sets = {}
    for s in ss:
        sets.setdefault(s.template, {}).setdefault(s.prefix, 0)
        sets[s.template][s.prefix] += 1
    assert len(sets) == 9 and sum(map(len, sets.values())) >= 9 * shots.EXAMPLE_SETS - 3   # two sets may coincide
    assert all(c % 4 == 0 for v in sets.values() for c in v.values())                     # 4 prompts per set
    assert len({s.clean for s in ss}) >= 0.85 * n
    assert [shots.set_index(k, 9, 16) for k in (0, 8, 9, 9 * 16, 9 * 17 + 3)] == [0, 0, 1, 0, 1]


def test_operand_counterfactual_keeps_the_examples(tok):
    """Protects: the operand counterfactual changes only the query's operands, after the same examples."""
    ss, _ = pairs.make_operand_pairs(tok, "addition", n=42, seed=0, draw=pairs.Draw("last-digit", 2, shots.EXAMPLE_SETS))
    for s in ss:
        assert s.corrupt.startswith(s.prefix) and s.corrupt != s.clean
        ex = shots.examples(templates.TEMPLATES[s.template], 2, seed=0, index=shots.set_index(ss.index(s), 21, shots.EXAMPLE_SETS))
        nums = tuple(int(x) for x in re.findall(r"\d+", s.corrupt[len(s.prefix):]))[:2]
        assert nums not in ex.pairs


def test_one_separator_for_every_model(tok):
    """Protects: examples end with " . " for every model (the embedded word-level tokenizer drops newlines,
    which would run the examples together; the shipped SmolLM2 runs were made with " . " too)."""
    assert shots.SEPARATOR == " . "
    ss, _ = pairs.make_pairs(tok, "addition", n=21, seed=0, draw=pairs.Draw("last-digit", 4, shots.EXAMPLE_SETS))
    assert all(s.prefix.count(" . ") == 4 for s in ss)


def test_group_by_length_batches_one_prefix_together():
    """Protects: prompts with the same examples sit next to each other in their length's batches (their
    prefix runs once), and prompts with other examples still fill a batch; zero-shot batching is unchanged
    (a prompt without a separator groups by length only)."""
    class Chars:                                  # a character tokenizer
        def __call__(self, text, add_special_tokens=True):
            return {"input_ids": [ord(c) for c in text]}
    prompts = ["a . b + c", "x . b + c", "a . d + e", "x . d + e", "a . f + g"]
    assert shots.prefix_key("1 + 2 = 3 . 4 - 1 = 3 . 5 + 5 =") == "1 + 2 = 3 . 4 - 1 = 3 . " and shots.prefix_key("3 + 4 =") == ""
    got = [idx for idx, _ in group_by_length(Chars(), prompts, batch_size=3)]
    assert got == [[0, 2, 4], [1, 3]]
    got = [idx for idx, _ in group_by_length(Chars(), prompts + ["ab"], batch_size=64)]
    assert got == [[5], [0, 2, 4, 1, 3]]


def test_zero_shot_batching_is_by_length_only(tok):
    """Protects: zero-shot prompts (no separator) batch exactly as before the few-shot grouping existed."""
    zs, _ = pairs.make_pairs(tok, "addition", n=63, seed=0, draw=pairs.Draw("last-digit", 0, 1))
    got = [idx for idx, _ in group_by_length(tok, [s.clean for s in zs], batch_size=8)]
    lens = [len(tok(s.clean)["input_ids"]) for s in zs]
    want = []
    for L in sorted(set(lens)):
        same = [i for i, n in enumerate(lens) if n == L]
        want += [same[j:j + 8] for j in range(0, len(same), 8)]
    assert got == want


def test_negative_shots_is_refused():
    """Protects: a negative number of examples is a clear error, not an empty prefix."""
    with pytest.raises(ValueError, match="shots=-1"):
        shots.examples(templates.TEMPLATES["add-1"], -1, 0, 0)


# sha256 (first 16 hex digits) of the JSON rows of make_pairs(tok, task, n=96, seed=3, draw=Draw("last-digit", 0, 1),
# shots=K) at commit 509cde0, the last one with one set of examples per template (the shipped SmolLM2 K = 2 run's).
ONE_SET = {("subtraction", 2): "6d091eaec3750ac1", ("addition", 4): "ce88391c863762a2", ("fig10", 8): "c04ff91ca163bc57"}


@pytest.mark.parametrize("task,k", sorted(ONE_SET))
def test_one_example_set_draws_exactly_the_first_scheme(tok, task, k):
    """Protects: example_sets=1 reproduces the few-shot pairs of the first scheme byte for byte (one set per
    template, seeded without a set number), so the shipped runs made with it stay reproducible and reusable."""
    ss, _ = pairs.make_pairs(tok, task, n=96, seed=3, draw=pairs.Draw("last-digit", k, 1))
    digest = hashlib.sha256(json.dumps([s.to_json() for s in ss], sort_keys=True).encode()).hexdigest()[:16]
    assert digest == ONE_SET[(task, k)]


def test_a_run_made_with_other_example_sets_is_never_reused(tmp_path):
    """Protects: run.json records the sets beside K, and the reuse check (results.made_with) asks for them, so a
    run made with 16 sets is not reused for one set or the reverse, and a record made before sets existed
    (no field) counts as one set; a zero-shot run records nothing about examples."""
    import pandas as pd

    from arithmech.core import results
    from arithmech.prompts.config import Shots
    from arithmech.steps import shots as shots_step
    assert shots.recorded(4, 16) == {"examples": "16 sets per template"} and shots.recorded(0, 16) == {}
    assert shots.recorded(2, 1) == {"examples": "1 set per template"}
    table = pd.DataFrame({c: [0] for c in ("shots", "drawn", "token_correct", "correct", "xc_valid", "kept",
                                          "kept_rate", "kept_lo", "kept_hi")}).assign(op="addition")
    # a record from before sets existed (no "examples") is not reused: no value is assumed for an absent parameter
    for made, want, same in ((16, 16, True), (16, 1, False), (1, 16, False), (None, 1, False), (None, 16, False)):
        folder = tmp_path / f"{made}-{want}"
        rec = shots_step.recorded(Shots(model_name="embedded", example_sets=made or 1))
        if made is None:
            rec.pop("examples")                                    # a record from before sets existed
        results.write_step(folder, "shots", {"shots.csv": table}, {"parameters": rec})
        got = results.made_with(folder, "shots", shots_step.recorded(Shots(model_name="embedded", example_sets=want)))
        assert got is same, (made, want)
    with pytest.raises(ValueError, match="example_sets=0"):
        pairs.Draw("last-digit", 2, 0)
