"""The controls as the claims decide them (arithmech.claims.controls, arithmech.claims.evidence): the
control recomputed from prompts.jsonl over distinct problems, the task decided on, and the two-sided ablation rule.
Each test writes a synthetic results folder whose stored (version 1) control or one-sided rule gives another
verdict, so it fails on the old behaviour."""
from __future__ import annotations

import pandas as pd
import pytest

from arithmech.claims import decide
from arithmech.claims.evidence import Context
from arithmech.core import results
from arithmech.data.pairs import Sample
from arithmech.identify import claims


def _mk(op, a, b, template="t"):
    c = {"addition": a + b, "subtraction": a - b, "multiplication": a * b}[op]
    return Sample("p", "q", str(c)[-1], str(c), a, b, op, template, "equation", answer_token="last-digit", carried=str(c)[:-1])


NARROW = [_mk("addition", a, b, f"t{i}") for a, b in [p for p in [(a, b) for a in range(1, 10) for b in range(1, 10)][
    ::3][:24] if p not in ((4, 1), (7, 1), (7, 4))] + [(9, 1), (9, 4), (5, 5)] for i in range(4)]  # 24 clusters
SUMS = [_mk("addition", a, b, f"t{i}") for a in range(1, 10) for b in range(1, 10) for i in range(4)]  # 81 problems
PRODUCTS = [_mk("multiplication", a, b) for a in range(1, 10) for b in range(a, 10)]           # 45 clusters


def _effects(task, key_effect):
    rows = []
    for l in range(3):
        for h in ("0", "1", "mlp"):
            e = key_effect if (l, h) == (1, "0") else 0.0
            rows.append({"task": task, "layer": l, "head": h, "effect": e, "effect_lo": e - 0.01,
                         "effect_hi": e + 0.01, "logit_diff": 10 * e, "n": 96})
    return pd.DataFrame(rows)


def _sanity(task, heads_out, lo, hi):
    rows = {"nothing-out": 1.0, "all-heads-out": heads_out, "all-mlps-out": 0.2, "x_c": 0.0, "majority-floor": 0.2,
            "conditioned-floor": 0.9}
    d = pd.DataFrame([dict(task=task, kind="sanity", order=o, seed=-1, k=0, accuracy=a, n=96) for o, a in rows.items()])
    d = d.assign(positions="end", mean_source="pool", correct=(d.accuracy * 96).round().astype(int))
    return d.assign(ci_low=d.accuracy - 0.05, ci_high=d.accuracy + 0.05).assign(
        ci_low=lambda x: x.ci_low.where(x.order != "all-heads-out", lo),
        ci_high=lambda x: x.ci_high.where(x.order != "all-heads-out", hi))


def _write(folder, prompts, effects, control, task="all", knockout=None, extra=None):
    files = {"prompts.jsonl": [s.to_json() for s in prompts], "effects.csv": effects,
             "key_heads.json": {"task": task, "heads": [], "control": control}, **(extra or {})}
    if knockout is not None:
        files["knockout.csv"] = knockout
    results.write_step(folder, "identify", files, {"parameters": {}})
    return folder


def test_a_task_failed_by_its_copies_is_decided_under_the_new_control(tmp_path):
    """Protects the zero-shot addition case (science review §2.2): the run's stored control (version 1) failed
    addition at 64 % because each prompt was guessed from its copies in other templates; recomputed over
    distinct problems it passes, so the identify claims are decided (version 1: inconclusive)."""
    v1 = {"floors": {"addition": {"conditioned": 0.64}}, "failed": {"addition": "conditioned floor 64%"},
          "pooled": ["addition"]}
    folder = _write(tmp_path / "a", SUMS, _effects("addition", -0.08), v1, task="addition")
    row = decide.claims(Context(folder), ["key-heads-exist"]).iloc[0]
    assert row.holds is True and "fails its control" not in row.here


def test_a_floor_whose_interval_straddles_the_bound_leaves_the_claims_undecided(tmp_path):
    """Protects the control's version 6 in its gate: 24 problems whose floor is 42 % (under the 50 % bound, so
    version 2 passed the task and decided its claims) have a simultaneous interval of [21 %, 67 %] across the bound:
    the task does not pass (its identify claims are inconclusive), and the rule says it is undecided on 24 problems,
    not that it fails (version 5: "fails its control ... (uncertain)")."""
    folder = _write(tmp_path / "a", NARROW, _effects("addition", -0.08), {}, task="addition")
    row = decide.claims(Context(folder), ["key-heads-exist"]).iloc[0]
    assert row.holds is None and "does not pass its control: undecided on 24 problem clusters" in row.here, row.here
    assert "fails its control" not in row.here


def test_claims_move_to_the_one_task_that_passes(tmp_path):
    """Protects the re-decision of a run whose all pools a failing task: the stored control pooled addition and
    multiplication; recomputed, multiplication fails (its tens digit and one operand pin the answer), so the
    claims are decided on addition's own rows (no key head there) and not on all's (a key head)."""
    v1 = {"floors": {"addition": {}, "multiplication": {}}, "failed": {}, "pooled": ["addition", "multiplication"]}
    eff = pd.concat([_effects("all", -0.08), _effects("addition", -0.001), _effects("multiplication", -0.2)])
    folder = _write(tmp_path / "a", SUMS + PRODUCTS, eff, v1)
    row = decide.claims(Context(folder), ["key-heads-exist"]).iloc[0]
    assert row.holds is False and "n = 96 prompts" in row.here
    two = {**v1, "floors": {"addition": {}, "multiplication": {}, "division": {}}}
    assert decide.claims(Context(_write(tmp_path / "b", SUMS + PRODUCTS, eff, two)), ["key-heads-exist"]).holds.iloc[0] is True


def test_ablation_below_a_uniform_guess_is_over_ablation(tmp_path):
    """Protects the two-sided ablation rule: every head out at 1 % [0 %, 4 %] lies below a uniform guess among
    the ten answer tokens (10 %): over-ablation, does not hold (version 2 held: its interval reached the floor);
    at 12 % [6 %, 20 %] it lies between the guess and the floor and holds; at 60 % [50 %, 70 %] it lies above the
    floor (the floor over distinct problems, not the file's 90 % conditioned row) and does not hold."""
    ok = {"floors": {"addition": {}}, "failed": {}, "pooled": ["addition"]}
    verdict = lambda name, *s: decide.claims(Context(_write(tmp_path / name, SUMS, _effects("addition", -0.08), ok, "addition",
                                               _sanity("addition", *s))), ["ablation-removes-information"]).iloc[0]
    low = verdict("low", 0.01, 0.0, 0.04)
    assert len({s.answer for s in SUMS}) == 10
    assert low.holds is False and "over-ablation" in low.here
    assert verdict("mid", 0.12, 0.06, 0.20).holds is True
    high = verdict("high", 0.6, 0.5, 0.7)
    assert high.holds is False and "too little" in high.here
    few = decide.claims(Context(_write(tmp_path / "few", SUMS, _effects("addition", -0.08), ok, "addition",
                          _sanity("addition", 0.12, 0.06, 0.20).assign(n_clusters=8))),
                   ["ablation-removes-information"]).iloc[0]
    assert few.holds is None and "insufficient: 8 problem clusters < 20" in few.here      # version 2 held


@pytest.mark.parametrize("rule", ["key-heads-exist", "few-heads", "middle-layers", "mlps-late", "key-heads-exist-share",
                                  "logit-diff-ranking", "knockout-key-vs-random", "knockout-random-flat", "transfer"])
def test_a_floor_counted_over_copies_is_read_with_its_effective_problems(tmp_path, rule):
    """Protects the control's version 4 in every identify rule it gates (B2): 272 prompts from 40 addition problems,
    8 of them kept 20–40 times, whose floor over the prompts is 29 %: version 3 read it over 40 problems ([17 %,
    44 %]: passes, the rule decided); over Kish's effective problem clusters (version 7: 31 clusters, 8.8 effective)
    its interval reaches 70 %, the task does not pass its control (undecided, version 6) and the rule is
    inconclusive."""
    from tests.unit.steps.test_control import _skewed
    eff = _effects("addition", -0.08).assign(share=lambda d: d.effect * 3, share_lo=lambda d: d.effect * 3 - 0.01,
                                             share_hi=lambda d: d.effect * 3 + 0.01)
    from tests.unit.identify.test_claims import _knockout
    held = {"family": "f", "base_accuracy": 0.5, "knockout_accuracy": 0.1, "relative_drop": -0.8, "n_heads": 1,
            "random_accuracy_mean": 0.5, "n": 100, "heads_from": "key heads"}
    folder = _write(tmp_path / "a", _skewed(), eff, {}, task="addition", knockout=_knockout(0.2, [0.9, 0.95]).assign(
        task="addition"), extra={"heldout.json": held})
    row = decide.claims(Context(folder), [rule]).iloc[0]
    assert row.holds is None and "undecided on 31 problem clusters" in row.here and "8.8 effective clusters" in row.here, row.here


def test_the_ablation_rule_reads_the_floor_as_an_interval(tmp_path):
    """Protects ablation-removes-information versions 6 to 8 (B3, its hostile reading, findings 15 and 16): the floor
    over distinct problems of the 81 sums is 17/81 = 21 %, an estimate; version 8 reads it with the majority floor's
    row (20 % of 96 prompts) as one family of 7 sampled estimates, each Wilson interval at 1 − 0.05/7, the draw
    population's count exact: [the highest lower end, the highest upper end] (version 7: each at 95 %). Every head out
    at 25 % [20 %, 30 %] lies above the floor's point (version 5: removes too little) but within its interval: it
    reaches the floor and holds. At 40 % [36 %, 44 %] it straddles the floor's upper end (41 %: the 81 sums are 45
    problem clusters, the control's version 7 trials): inconclusive (version 6, reading any overlap, held). At 47 %
    [43 %, 52 %] it lies above the interval's upper end: too little."""
    from statistics import NormalDist

    from arithmech.core.stats import wilson_interval
    from arithmech.data.floors import problem_floor
    ok = {"floors": {"addition": {}}, "failed": {}, "pooled": ["addition"]}
    verdict = lambda name, *s: decide.claims(Context(_write(tmp_path / name, SUMS, _effects("addition", -0.08), ok, "addition",
                                               _sanity("addition", *s))), ["ablation-removes-information"]).iloc[0]
    z = NormalDist().inv_cdf(1 - 0.025 / 7)
    pf = problem_floor(SUMS)
    ends = [wilson_interval(0.2 * 96, 96, z)] + [wilson_interval(a * pf["n_eff"][on], pf["n_eff"][on], z)
                                                for on in ("problems", "prompts") for a in pf["table"][on].values()]
    pop = max(pf["table"]["population"].values())
    low, hi = max([pop] + [e[0] for e in ends]), max([pop] + [e[1] for e in ends])
    assert pf["accuracy"] == 17 / 81 and 0.40 < hi < 0.42 and pf["clusters"] == 45
    at = verdict("at", 0.25, 0.20, 0.30)
    assert at.holds is True and f"vs floor 21% [{low:.0%}, {hi:.0%}]" in at.here, at.here
    straddles = verdict("straddles", 0.40, 0.36, 0.44)
    assert straddles.holds is None and "straddles the floor's upper end" in straddles.here, straddles.here
    above = verdict("above", 0.47, 0.43, 0.52)
    assert above.holds is False and "too little" in above.here


def test_key_vs_random_is_decided_against_layer_matched_heads_where_the_file_has_them(tmp_path):
    """Protects knockout-key-vs-random version 9: the top 8 at 20 % [15 %, 25 %] lie far below random
    heads from every layer (90 %, 95 %: version 8 held) but not below random heads of their own layers (10 %, 12 %),
    so the claim does not hold; against layer-matched heads at 15 % and 40 % the lowest is under 20 % but the
    interval reaches below their 5th percentile (version 11: inconclusive, was does not hold); with layer-matched
    heads at 60 % and 70 % it holds; a file
    without layer-matched rows is decided on the unmatched draws, saying 'not run'."""
    from tests.unit.identify.test_claims import _knockout
    ok = {"floors": {"addition": {}}, "failed": {}, "pooled": ["addition"]}
    def verdict(name, matched):
        ko = _knockout(0.2, [0.9, 0.95]).assign(task="addition")
        lm = pd.DataFrame([dict(task="addition", kind="head", order="layer-matched", seed=s, k=claims.K, accuracy=a, n=256,
                                positions="end", mean_source="pool", correct=round(a * 256), ci_low=a - 0.05,
                                ci_high=a + 0.05) for s, a in enumerate(matched)])
        return decide.claims(Context(_write(tmp_path / name, SUMS, _effects("addition", -0.08), ok, "addition",
                               pd.concat([ko, lm], ignore_index=True))), ["knockout-key-vs-random"]).iloc[0]
    same_layers = verdict("same", [0.1, 0.12])
    assert same_layers.holds is False and "layer-matched random heads: mean 11% (lowest 10%" in same_layers.here
    straddle = verdict("straddle", [0.15, 0.4])      # above the lowest, its lower end 15% under the 5th percentile 16%
    assert straddle.holds is None and "(lowest 15%" in straddle.here   # version 10: does not hold (a point test)
    assert verdict("far", [0.6, 0.7]).holds is True
    old = verdict("old", [])
    assert old.holds is True and old.here.endswith("layer-matched random heads: not run"), old.here


def test_the_pooled_tasks_floor_is_their_mixture():
    """Protects ablation-removes-information version 8 (hostile reading 18): task all pools a task whose floor over
    distinct problems is 40 % and one at 10 % (400 effective problems each), half of the all knockout prompts each
    (128 and 88 knockout prompts, 128 kept round-robin: 64 and 64). The pooled prompts' floor is the mixture, 25 %,
    its interval the weighted ends; version 7 read the higher task's floor, 40 %, so an every-head-out accuracy of
    40 % [36 %, 44 %] reached it there and lies above the mixture's interval here (too little)."""
    from arithmech.claims import controls

    def entry(p):
        return {"conditioned": p, "table": {on: {"op, carried": p} for on in ("population", "problems", "prompts")},
                "n_eff_by": {"population": 1000.0, "problems": 400.0, "prompts": 400.0}}

    ko = pd.concat([_sanity(t, 0.4, 0.36, 0.44).assign(n=n) for t, n in (("addition", 128), ("subtraction", 88),
                                                                         ("all", 128))], ignore_index=True)

    class Ctx:
        def control(self):
            return {"recomputed": True, "pooled": ["addition", "subtraction"],
                    "floors": {"addition": entry(0.4), "subtraction": entry(0.1)}}

        def knockout(self):
            return ko

    assert controls.shares(Ctx(), ["addition", "subtraction"]) == {"addition": 0.5, "subtraction": 0.5}
    floor, (lo, hi), which = controls._ablation_floor(Ctx(), "all", ko[ko.task == "all"].set_index("order"))
    _, (_, ahi), _ = controls._ablation_floor(Ctx(), "addition", ko[ko.task == "addition"].set_index("order"))
    assert floor == 0.25 and "mixture" in which
    assert hi < 0.36 < 0.44 < ahi                      # too little against the mixture; within the higher task's floor
