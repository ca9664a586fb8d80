"""The per-task control of identify, version 7 (arithmech.steps.control)."""
from __future__ import annotations

from statistics import NormalDist

from arithmech.data.answers import MIN_CLUSTERS
from arithmech.data.floors import not_passed, shown
from arithmech.data.pairs import Sample
from arithmech.identify.config import CONTROL_FLOOR
from arithmech.steps.control import _scaled, problems_to_decide, task_control, verdict

Z6 = NormalDist().inv_cdf(1 - 0.025 / 6)          # version 5: six sampled estimates, 95% together


def _mk(op, a, b, template="t"):
    c = {"addition": a + b, "multiplication": a * b}[op]
    return Sample("p", "q", str(c)[-1], str(c), a, b, op, template, "equation", answer_token="last-digit", carried=str(c)[:-1])


SUMS = [(a, b) for a in range(1, 10) for b in range(1, 10)]                                # 81 sums, 45 clusters
SUM_CLUSTERS = [(a, b) for a, b in SUMS if a <= b]                                          # 45 sums, one per cluster
PRODUCTS = [(a, b) for a in range(1, 10) for b in range(a, 10)]                             # 45 products, 45 clusters
# 24 problems in 24 clusters (every third sum, its reversed pairs 4+1, 7+1, 7+4 replaced by 9+1, 9+4, 5+5)
NARROW = [p for p in SUMS[::3][:24] if p not in ((4, 1), (7, 1), (7, 4))] + [(9, 1), (9, 4), (5, 5)]


def test_a_task_passes_unless_its_answers_are_guessable_over_distinct_problems():
    """Protects the control's decision on the right floor: sums copied into four templates each pass (version 1,
    leave-one-prompt-out, failed them: the copies voted), products whose tens digit and operand pin the last
    digit fail; the failed task is named with its floor and left out of the pool."""
    add = [_mk("addition", a, b, f"t{i}") for a, b in SUMS for i in range(4)]
    mul = [_mk("multiplication", a, b) for a, b in PRODUCTS]
    c = task_control({"addition": add, "multiplication": mul})
    assert CONTROL_FLOOR == 0.5 and c["version"] == 7
    assert c["pooled"] == ["addition"] and list(c["failed"]) == ["multiplication"] and c["undecided"] == {}
    assert c["status"] == {"addition": "passes", "multiplication": "fails"}
    assert c["floors"]["multiplication"]["interval"][0] >= CONTROL_FLOOR           # fails: the whole interval at or above
    assert c["floors"]["addition"]["interval"][1] < 0.5 <= c["floors"]["multiplication"]["conditioned"]
    assert c["floors"]["addition"]["problems"] == 81 and c["floors"]["addition"]["n"] == 324
    from arithmech.data.answer_tokens import conditioned_floor
    assert conditioned_floor(add)["accuracy"] < CONTROL_FLOOR
    add27 = [_mk("addition", a, b, f"t{i}") for a, b in SUMS if (a + b) % 3 == 0 for i in range(4)]
    assert conditioned_floor(add27)["accuracy"] >= CONTROL_FLOOR > task_control({"addition": add27})["floors"][
        "addition"]["conditioned"]                                      # version 1 failed 27 sums: the copies voted


def test_a_task_with_too_few_problems_is_insufficient():
    """Protects the minimum evidence (data.answers.MIN_CLUSTERS = 20, which every rule reads): 19 distinct sums, however many copies,
    are insufficient — failed with the count, left out of the pool; where every task fails, all pools them all
    and is failed itself."""
    few = [_mk("addition", a, b, f"t{i}") for a, b in SUM_CLUSTERS[:MIN_CLUSTERS - 1] for i in range(10)]
    c = task_control({"addition": few})
    assert MIN_CLUSTERS == 20 and c["insufficient"] == ["addition"]
    assert c["failed"]["addition"] == "insufficient: 190 prompts from 19 problem clusters < 20"
    both = task_control({"a1": few, "a2": few})
    assert both["pooled"] == ["a1", "a2"] and set(both["failed"]) == {"a1", "a2", "all"}


def test_identify_uses_this_control():
    """Protects one control for the run and the claims: the task_control identify() reads
    (identify/pipeline.py) is this module's."""
    from arithmech.identify import pipeline as identify_pipeline

    assert identify_pipeline.task_control is task_control


def test_a_table_says_insufficient_below_the_minimum():
    """Protects App. D's table (steps.generalize.table3's status): key heads found on 4 prompts of 4 problems
    read "insufficient", not "ok" (its status was "ok" whatever the count); 20 problems read "ok"."""
    from arithmech.steps.control import evidence_status
    four = [_mk("addition", a, 1) for a in range(1, 5)]
    assert evidence_status(four) == "insufficient: 4 X_r from 4 problems < 20"
    assert evidence_status(four[:1] * 3) == "insufficient: 3 X_r from 1 problem < 20"      # one problem: singular
    assert evidence_status([_mk("addition", a, b) for a, b in PRODUCTS[:20]]) == "ok"
    import inspect

    from arithmech.steps import generalize
    assert "evidence_status(samples)" in inspect.getsource(generalize.table3)


def test_a_floor_whose_interval_straddles_the_bound_is_undecided():
    """Protects version 6 (issue 63): a floor of 42 % over 24 problems is under the 50 % bound (version 2 passed the
    task) but its simultaneous interval, [21 %, 67 %], straddles it: the task is undecided on 24 problems (version 5
    failed it as uncertain), named with the interval and how many more problems would decide it, not failed, and
    left out of the pool like a failed one."""
    add = [_mk("addition", a, b, f"t{i}") for a, b in NARROW for i in range(4)]
    c = task_control({"addition": add})
    f = c["floors"]["addition"]
    assert f["conditioned"] < CONTROL_FLOOR <= f["interval"][1] and f["problems"] == 24
    assert c["failed"] == {} and c["status"] == {"addition": "undecided"} and c["pooled"] == ["addition"]
    why = c["undecided"]["addition"]
    assert why.startswith("undecided on 24 problem clusters: ") and "[21%, 67%]" in why and "fail" not in why
    assert f"about {problems_to_decide(f)} more problem clusters would decide it" in why
    assert "addition" in not_passed(c) and shown(c, "addition") == why
    two = task_control({"addition": add, "a2": add})
    assert two["pooled"] == ["addition", "a2"] and two["status"]["all"] == "undecided" and "all" in two["undecided"]


def _skewed():
    """40 addition problems, 4 of them guessed right from (op, carried, b) and kept 20 times each, 4 guessed wrong kept
    40 times, 32 wrong kept once: the prompts count guesses 80 of 272 = 29 % right, but from 9.2 effective problems."""
    right = [(1, 1), (1, 2), (1, 3), (2, 8)]                 # the population's guess is right on these (sum 2, 3, 4, 10)
    wrong = [(a, b) for a in range(2, 10) for b in range(1, 10) if a + b not in (2, 3, 4, 10)]
    copies = [(p, 20) for p in right] + [(p, 40) for p in wrong[:4]] + [(p, 1) for p in wrong[4:36]]
    return [_mk("addition", a, b, f"t{i}") for (a, b), c in copies for i in range(c)]


def test_a_prompt_count_dominated_by_copies_is_read_with_its_effective_problems():
    """Protects version 4 (B2): the floor counted over the prompts, 29 %, weighs 8 problems kept 20–40 times far above
    32 kept once; Kish's effective number of problems is 272² / (4·20² + 4·40² + 32) = 9.2, so its 95 % interval
    reaches 61 % and the task fails as uncertain. Version 3 read the same 29 % as 40 independent problems
    ([17 %, 44 %]) and passed it."""
    from arithmech.core.stats import wilson_interval
    kept = _skewed()
    f = task_control({"addition": kept})["floors"]["addition"]
    from collections import Counter
    per_cluster = Counter((min(s.a, s.b), max(s.a, s.b)) for s in kept)       # version 7: a cluster's prompts, one unit
    m = 272 ** 2 / sum(c * c for c in per_cluster.values())
    assert len(kept) == 272 and f["problems"] == 40 and f["clusters"] == len(per_cluster) and f["on"] == "prompts"
    assert f["conditioned"] == 80 / 272 and f["n_eff"] == m < 272 ** 2 / (4 * 400 + 4 * 1600 + 32)
    assert f["interval"][1] >= wilson_interval(80 / 272 * m, m, Z6)[1] > wilson_interval(80 / 272 * m, m)[1] > 0.6
    assert wilson_interval(80 / 272 * 40, 40)[1] < CONTROL_FLOOR                   # what version 3 decided on
    c = task_control({"addition": kept})
    assert c["version"] == 7 and c["undecided"]["addition"].startswith(f"undecided on {len(per_cluster)} problem "
                                                                         "clusters") and \
        f"{m:.1f} effective clusters" in c["undecided"]["addition"]


def test_equal_copies_keep_the_number_of_problems():
    """Protects version 4's invariant under version 5: where every problem is kept equally often, each sampled
    reading's effective number is the number of problems it counts (24)."""
    f = task_control({"addition": [_mk("addition", a, b, f"t{i}") for a, b in NARROW for i in range(4)]})["floors"]
    assert f["addition"]["readings"]["prompts"][1] == 24 and f["addition"]["readings"]["problems"][1] == 24


def test_the_floors_interval_is_simultaneous_over_its_estimates():
    """Protects version 5 (hostile reading 15, 16): the population count is exact (its interval is its point), and
    every grouping of the problems and prompts counts gets its Wilson interval at 1 − 0.05/6, so the floor's
    interval is [the highest lower end, the highest upper end] over them (version 4: each count's highest grouping at
    95 %: [24 %, 61 %] for the 24-problem case, now [21 %, 67 %])."""
    from arithmech.core.stats import wilson_interval
    from arithmech.data.floors import problem_floor
    kept = [_mk("addition", a, b, f"t{i}") for a, b in NARROW for i in range(4)]
    pf, f = problem_floor(kept), task_control({"addition": kept})["floors"]["addition"]
    pop = max(pf["table"]["population"].values())
    assert f["readings"]["population"][2:] == [pop, pop]
    ends = [wilson_interval(a * pf["n_eff"][on], pf["n_eff"][on], Z6) for on in ("problems", "prompts")
            for a in pf["table"][on].values()]
    assert len(ends) == 6
    assert f["interval"] == [max([pop] + [lo for lo, _ in ends]), max([pop] + [hi for _, hi in ends])]
    assert [round(x, 2) for x in f["interval"]] == [0.21, 0.67]


def test_the_control_is_three_valued_on_its_interval():
    """Protects version 6's decision (issue 63): passes only with the whole interval below the bound, fails only with
    the whole interval at or above it, undecided across it (the upper end at the bound itself included)."""
    assert [verdict(*e) for e in ((0.2, 0.49), (0.5, 0.7), (0.3, 0.5), (0.45, 0.55), (0.2, 0.499999))] == [
        "passes", "fails", "undecided", "undecided", "passes"]


def _reference_more(entry, limit=5000):
    """problems_to_decide by a literal loop: every k from 0 up, each sampled grouping's Wilson interval at
    1 − 0.05/6 written out with its effective clusters grown by (p + k) / p, p its problem clusters; version 7: fails
    only on the X_r readings' lower ends, the population's point in the pass bar only."""
    from arithmech.core.stats import wilson_interval
    p = entry.get("clusters", entry["problems"])
    for k in range(limit):
        lows, highs = [], []
        for on, t in entry["table"].items():
            for a in t.values():
                if on == "population":
                    highs.append(a)
                else:
                    n = entry["n_eff_by"][on] * (p + k) / p
                    lo, hi = wilson_interval(a * n, n, Z6)
                    lows.append(lo), highs.append(hi)
        if max(highs) < CONTROL_FLOOR or max(lows) >= CONTROL_FLOOR:
            return k
    return None


def test_how_many_more_problems_decide_an_undecided_task():
    """Protects the number an undecided task prints: the fewest more problems at which its interval, its readings'
    accuracies held, lies wholly on one side of the bound — the literal loop's; 0 for a decided task; none where a
    reading sits on the bound itself (its interval never leaves it)."""
    f = task_control({"addition": [_mk("addition", a, b, f"t{i}") for a, b in NARROW for i in range(4)]})["floors"][
        "addition"]
    k = problems_to_decide(f)
    assert k == _reference_more(f) and k > 0
    assert _scaled(f, k)[1] < CONTROL_FLOOR <= _scaled(f, k - 1)[1]             # 42 % < 50 %: it would pass
    skewed = task_control({"addition": _skewed()})["floors"]["addition"]
    assert problems_to_decide(skewed) == _reference_more(skewed)
    sums = task_control({"addition": [_mk("addition", a, b) for a, b in SUMS]})["floors"]["addition"]
    assert problems_to_decide(sums) == 0 == _reference_more(sums)
    at_bound = {"problems": 30, "table": {"population": {"g": 0.2}, "problems": {"g": 0.5}}, "n_eff_by": {
        "population": 81.0, "problems": 30.0}}
    assert problems_to_decide(at_bound, limit=4096) is None


def test_three_plus_five_and_five_plus_three_are_one_cluster():
    """Protects version 7 (hostile reading, finding 1): the control's trials are problem clusters (splits.cluster, the
    unordered operand pair), as for every other rule and MIN_CLUSTERS. A constructed X_r keeps 3 + 5 and 5 + 3 (and
    18 other sums, one per cluster): 21 ordered problems, 20 clusters. Literal reference: the problems reading weighs
    each cluster by its ordered problems (2 for {3, 5}, 1 for the rest), Kish (2 + 19)² / (2² + 19) = 441 / 23; the
    prompts reading by its prompts (4 per problem: 8 and 4s), (8 + 76)² / (64 + 19·16); 19 clusters, one of them kept
    both ways, are insufficient though they hold 20 ordered problems."""
    others = [p for p in SUM_CLUSTERS if p != (3, 5)][:18]
    kept = [_mk("addition", a, b, f"t{i}") for a, b in [(3, 5), (5, 3)] + others for i in range(4)]
    f = task_control({"addition": kept})["floors"]["addition"]
    assert f["problems"] == 20 and f["clusters"] == 19
    kept = [_mk("addition", a, b, f"t{i}") for a, b in [(3, 5), (5, 3)] + others + [(9, 9)] for i in range(4)]
    f = task_control({"addition": kept})["floors"]["addition"]
    assert f["problems"] == 21 and f["clusters"] == 20
    assert f["n_eff_by"]["problems"] == 441 / 23
    assert f["n_eff_by"]["prompts"] == 84 ** 2 / (64 + 19 * 16)
    short = [_mk("addition", a, b, f"t{i}") for a, b in [(3, 5), (5, 3)] + others for i in range(4)]
    c = task_control({"addition": short})
    assert c["status"] == {"addition": "insufficient"}
    assert c["failed"]["addition"] == "insufficient: 80 prompts from 19 problem clusters < 20"
    from arithmech.steps.control import evidence_status
    assert evidence_status(short) == "insufficient: 80 X_r from 19 problems < 20"


def test_the_population_point_alone_does_not_fail_a_task():
    """Protects version 7 (finding 5): all 64 ordered products of 2..9 (36 clusters): the draw population's exact
    guess is 56 %, at or above the bound, but the X_r readings' interval [35 %, 76 %] straddles it. Version 6 failed
    the task (its interval's lower end was the population's point); now it is undecided, saying that the population
    alone would guess half, and how many more clusters would decide it (its X_r readings, 56 %, would then fail it);
    the point still keeps it from passing."""
    products = [_mk("multiplication", a, b) for a in range(2, 10) for b in range(2, 10)]
    c = task_control({"multiplication": products})
    f = c["floors"]["multiplication"]
    assert f["readings"]["population"][0] >= CONTROL_FLOOR > f["xr_interval"][0]
    assert f["interval"][0] >= CONTROL_FLOOR                                   # version 6's verdict: fails
    assert c["status"] == {"multiplication": "undecided"} and c["failed"] == {}
    why = c["undecided"]["multiplication"]
    assert "the draw population alone would guess half (56%)" in why and "[35%, 76%]" in why
    k = problems_to_decide(f)
    assert k == _reference_more(f) and f"about {k} more problem clusters would decide it" in why
    fails = task_control({"multiplication": [_mk("multiplication", a, b) for a, b in PRODUCTS]})
    assert fails["status"] == {"multiplication": "fails"} and fails["floors"]["multiplication"]["xr_interval"][0] >= 0.5


def test_the_clusters_left_to_draw_are_the_ranking_sides():
    """Protects version 7 (finding 11): "the draw has N more" counts the problem clusters the ranking side of
    identify's split can still give (splits.side == "rank"), not the evaluation side's, which X_r never holds.
    Literal reference: the 45 single-digit addition clusters, those on the ranking side, less those kept."""
    from arithmech.data.splits import side
    add = [_mk("addition", a, b, f"t{i}") for a, b in NARROW for i in range(4)]
    f = task_control({"addition": add})["floors"]["addition"]
    rank = {("addition", a, b) for a in range(1, 10) for b in range(a, 10) if side(("addition", a, b)) == "rank"}
    kept = {("addition", min(a, b), max(a, b)) for a, b in NARROW}
    assert len(rank) == 30 and f["rank_clusters"] - f["clusters"] == len(rank - kept)
