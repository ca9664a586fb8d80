"""The claims table: versioned rules, decided from the files of a results folder.

Each test writes a small synthetic results folder through the results contract with numbers chosen so
that a rule must flip, and checks the verdict the table computes — so a decider that ignores its input,
or reads the wrong column, fails here.
"""
from __future__ import annotations

import pandas as pd
import pytest

from arithmech.claims import decide
from arithmech.claims.decide import BY_ID
from arithmech.claims.evidence import Context
from arithmech.core import results
from arithmech.identify.claims import K
from arithmech.report.views.findings import claims_table
from arithmech.report.views.pages import claim_lines
from arithmech.report.views.table_display import claim_verdict


def _effects(head_effects: dict, mlp_effects: list, hi: dict | None = None) -> pd.DataFrame:
    rows = []
    L = len(mlp_effects)
    for l in range(L):
        for h in range(2):
            e = head_effects.get((l, h), 0.0)
            r = {"task": "all", "layer": l, "head": str(h), "effect": e, "logit_diff": 10 * e, "n": 100,
                 "effect_lo": e - 0.01, "effect_hi": (hi or {}).get((l, h), e + 0.01)}
            rows.append(r)
        m = mlp_effects[l]
        r = {"task": "all", "layer": l, "head": "mlp", "effect": m, "logit_diff": 10 * m, "n": 100,
             "effect_lo": m - 0.01, "effect_hi": m + 0.01}
        rows.append(r)
    return pd.DataFrame(rows)


def _knockout(key_acc: float, random_accs: list[float], k: int = K, ci_high: float | None = None) -> pd.DataFrame:
    rows = [dict(task="all", kind="head", order="effect-rank", seed=-1, k=0, accuracy=1.0, n=256),
            dict(task="all", kind="head", order="effect-rank", seed=-1, k=k, accuracy=key_acc, n=256)]
    rows += [dict(task="all", kind="head", order="random-rank", seed=s, k=k, accuracy=a, n=256)
             for s, a in enumerate(random_accs)]
    df = pd.DataFrame(rows).assign(positions="end", mean_source="pool")
    df["correct"] = (df.accuracy * df.n).round().astype(int)
    df["ci_low"] = (df.accuracy - 0.05).clip(lower=0)
    df["ci_high"] = [1.0, ci_high if ci_high is not None else key_acc + 0.05] + [a + 0.05 for a in random_accs]
    return df


def _write(folder, effects: pd.DataFrame, knockout: pd.DataFrame | None = None, control: dict | None = None,
           extra: dict | None = None):
    files = {"prompts.jsonl": [{"clean": "1 + 2 =", "corrupt": "1 @ 2 =", "answer": "3", "template": "t"}],
             "effects.csv": effects, "key_heads.json": {"task": "all", "heads": [], **({"control": control} if control else {})}}
    if knockout is not None:
        files["knockout.csv"] = knockout
    results.write_step(folder, "identify", files | (extra or {}), {"parameters": {}})
    return folder


def _holds(folder, cid):
    return decide.claims(Context(folder), [cid]).set_index("id").loc[cid, "holds"]


def test_key_heads_need_their_interval_below_the_threshold(tmp_path):
    """Protects: a head is "key" only if its bootstrap interval lies below −5%: the same mean
    with a wide interval is not key, with a tight one it is."""
    eff = {(1, 0): -0.08}
    assert _holds(_write(tmp_path / "a", _effects(eff, [0.0, 0.0, 0.0])), "key-heads-exist") is True
    wide = _write(tmp_path / "b", _effects(eff, [0.0, 0.0, 0.0], hi={(1, 0): -0.02}))
    assert _holds(wide, "key-heads-exist") is False
    tight = _write(tmp_path / "c", _effects(eff, [0.0, 0.0, 0.0], hi={(1, 0): -0.06}))
    assert _holds(tight, "key-heads-exist") is True


def test_key_heads_by_share_read_the_share_interval_and_are_inconclusive_without_it(tmp_path):
    """Protects the calibrated key-head claim: it reads effects.csv's share columns, not the paper's effect
    (a head whose share interval lies below −5% makes it hold whatever the effect; one whose interval reaches
    above does not), and results without share columns (made before the measure) leave it inconclusive
    while the paper's rule is still decided."""
    eff = _effects({(1, 0): -0.01}, [0.0, 0.0, 0.0])
    share = lambda hi: eff.assign(share=-0.02, share_lo=-0.03, share_hi=[hi if (l, h) == (1, "0") else -0.01
                                                                          for l, h in zip(eff.layer, eff["head"])])
    yes = _write(tmp_path / "a", share(-0.06))
    assert _holds(yes, "key-heads-exist-share") is True and _holds(yes, "key-heads-exist") is False
    assert "1 of 6 heads" in decide.claims(Context(yes), ["key-heads-exist-share"]).here.iloc[0]
    assert _holds(_write(tmp_path / "b", share(-0.04)), "key-heads-exist-share") is False
    old = decide.claims(Context(_write(tmp_path / "c", eff)), ["key-heads-exist-share", "key-heads-exist"]).set_index("id")
    assert pd.isna(old.loc["key-heads-exist-share", "holds"]) and old.loc["key-heads-exist", "holds"] is False
    assert old.loc["key-heads-exist-share", "here"].startswith("not measured: effects.csv has no share")
    assert BY_ID["key-heads-exist-share"].paper == "not measured in the paper (the LD ratio, beside the paper's measure)"


def test_few_heads_is_scaled_to_the_model_and_needs_both_measures(tmp_path):
    """Protects few-heads version 4: on 400 heads the paper's 5% is 20 heads. Twenty heads at −0.2
    among 380 at −0.01 hold 4/7.8 = 51% of the summed negative change (holds), although the top 10 hold only
    26% (version 3: does not hold). With an LD ratio that spreads the same heads evenly the two measures
    disagree: inconclusive."""
    L = 200
    eff = {(l, 0): -0.2 for l in range(20)} | {(l, h): -0.01 for l in range(L) for h in range(2) if not (h == 0 and l < 20)}
    e = _effects(eff, [0.0] * L)
    row = decide.claims(Context(_write(tmp_path / "a", e)), ["few-heads"]).iloc[0]
    assert row.holds is True and row.here.startswith("the top 20 of 400 heads (5%) hold 51%")
    even = e.assign(share=-0.01, share_lo=-0.02, share_hi=0.0)
    assert _holds(_write(tmp_path / "b", even), "few-heads") is None


def test_middle_layers_and_few_heads_follow_the_numbers(tmp_path):
    """Protects: the depth and concentration rules read the ranking, not a fixed answer."""
    L = 9
    mid = {(4, 0): -0.2, (4, 1): -0.2}
    early = {(0, 0): -0.2, (0, 1): -0.2}
    m = _write(tmp_path / "m", _effects(mid, [0.0] * L))
    e = _write(tmp_path / "e", _effects(early, [0.0] * L))
    assert _holds(m, "few-heads") is True
    # the top 10 also hold the zero-effect heads (ties broken by layer): the median is set by them
    assert decide.claims(Context(m), ["middle-layers"]).here.iloc[0].startswith("median depth of the top 10")
    spread = {(l, h): -0.03 for l in range(30) for h in range(2)}           # 60 equal heads: top 10 hold 1/6
    assert _holds(_write(tmp_path / "s", _effects(spread, [0.0] * 30)), "few-heads") is False
    assert _holds(e, "middle-layers") is None          # no per-cluster effects: no interval, inconclusive
    early30 = _top10(tmp_path, "e30", [0, 0, 1, 1, 2, 2, 3, 3, 4, 4])     # layers 0–4 of 30: wholly below 1/3
    assert _holds(early30, "middle-layers") is False


def _top10(tmp_path, name: str, layers: list[int], m: int = 25, spread: dict | None = None):
    """A 30-layer folder whose top 10 heads (2 per layer) sit at ``layers``, every other head at zero effect, with
    ``effects_clusters.csv`` over ``m`` problem clusters of 4 prompts: each head's per-cluster effect is its mean
    (``spread``: {(layer, head): per-cluster effects} instead, whose mean is then effects.csv's)."""
    heads, seen = {}, {}
    for l in layers:
        heads[(l, seen.get(l, 0))] = -0.2
        seen[l] = seen.get(l, 0) + 1
    per = {(l, h): [heads.get((l, h), 0.0)] * m for l in range(30) for h in range(2)} | (spread or {})
    heads |= {k: sum(v) / m for k, v in (spread or {}).items()}
    clusters = pd.DataFrame({"task": "all", "cluster": [f"addition:1:{c}" for c in range(m)], "n": 4}
                            | {f"{l}.{h}": per[(l, h)] for l in range(30) for h in range(2)})
    return _write(tmp_path / name, _effects(heads, [0.0] * 30), extra={"effects_clusters.csv": clusters})


def test_middle_layers_reads_the_median_depths_cluster_interval_against_the_middle_third(tmp_path):
    """Protects middle-layers version 12: depth layer/(L−1), the median of the top 10 with a 95% bootstrap interval
    over problem clusters, every head re-ranked per resample. Where every cluster ranks alike the interval is the
    point (inside [1/3, 2/3]: holds; wholly above: does not hold); SmolLM2's knife edge, 20/29 = 0.690 with one
    more head at layer 12 close behind in some clusters, straddles 2/3: inconclusive; too few clusters or no
    per-cluster file: inconclusive."""
    from arithmech.identify.claims import in_middle
    assert in_middle(0.4, 0.6) is True and in_middle(0.7, 0.9) is False and in_middle(0.1, 0.3) is False
    assert in_middle(1 / 3, 2 / 3) is True and in_middle(0.3, 0.5) is None
    inside = decide.claims(Context(_top10(tmp_path, "in", [12, 12, 13, 13, 14, 14, 15, 15, 16, 16])), ["middle-layers"]).iloc[0]
    assert inside.holds is True and inside.here.startswith("median depth of the top 10, layer/(L−1) with L = 30: 0.483")
    assert "95% bootstrap over 25 problem clusters, re-ranked each time: [0.483, 0.483]" in inside.here
    late = decide.claims(Context(_top10(tmp_path, "late", [24, 24, 25, 25, 26, 26, 27, 27, 28, 28])), ["middle-layers"]).iloc[0]
    assert late.holds is False and "[0.897, 0.897]" in late.here
    edge_layers = [14, 18, 19, 19, 20, 20, 21, 21, 23, 29]
    rival = {(10, 0): [-0.6] * 6 + [0.0] * 19, (11, 0): [-0.6] * 6 + [0.0] * 19}   # mean −0.144: 11th and 12th
    edge = decide.claims(Context(_top10(tmp_path, "edge", edge_layers, spread=rival)), ["middle-layers"]).iloc[0]
    assert edge.holds is None and ": 0.690 (layers 14, 18, 19, 19, 20, 20, 21, 21, 23, 29)" in edge.here, edge.here
    lo, hi = (float(x) for x in edge.here.split("re-ranked each time: [")[1].split("]")[0].split(", "))
    # a resample drawing over a third of its prompts from the rivals' 6 clusters (P ≈ 0.1) ranks both above the
    # −0.2 heads and drops layers 23 and 29: layers 10, 11, 14, 18, 19, 19, 20, ... — median 19/29
    assert lo < 2 / 3 < hi and (lo, hi) == (round(19 / 29, 3), round(20 / 29, 3))
    few = decide.claims(Context(_top10(tmp_path, "few", [12, 12, 13, 13, 14, 14, 15, 15, 16, 16], m=19)), ["middle-layers"]).iloc[0]
    assert few.holds is None and "fewer than 20 problem clusters (19)" in few.here
    bare = decide.claims(Context(_write(tmp_path / "bare", _effects({(13, 0): -0.2}, [0.0] * 30))), ["middle-layers"]).iloc[0]
    assert bare.holds is None and "keeps no per-cluster effects" in bare.here


def test_knockout_rule_is_inconclusive_when_the_interval_overlaps_the_band(tmp_path):
    """Protects: key-k vs random-k holds only when the key accuracy's Wilson interval clears the random
    band's 5th percentile; below the lowest draw but overlapping → inconclusive; above → does not hold."""
    eff = _effects({(1, 0): -0.2}, [0.0, 0.0, 0.0])
    clear = _write(tmp_path / "a", eff, _knockout(0.2, [0.9] * 20, ci_high=0.3))
    assert _holds(clear, "knockout-key-vs-random") is True
    close = _write(tmp_path / "b", eff, _knockout(0.8, [0.85] * 20, ci_high=0.9))
    assert pd.isna(_holds(close, "knockout-key-vs-random"))
    worse = _write(tmp_path / "c", eff, _knockout(0.95, [0.9] * 20, ci_high=0.99))
    assert _holds(worse, "knockout-key-vs-random") is False
    assert _holds(clear, "knockout-random-flat") is False          # random mean 90% vs intact 100%


def test_knockout_rule_does_not_reject_on_a_point_above_the_lowest_draw(tmp_path):
    """Protects knockout-key-vs-random version 11 (hostile reading 19): "does not hold" needs the top 8's
    interval to lie within or above the random band, not its point above the lowest draw. At 80 % [75 %, 85 %]
    against 19 draws at 90 % and one at 78 %, the point is above the lowest draw (version 10: does not hold) but
    the interval reaches below the draws' 5th percentile (89 %): inconclusive. At 95 % [90 %, 99 %] against draws
    at 90 %, the lower end sits at the 5th percentile: does not hold."""
    eff = _effects({(1, 0): -0.2}, [0.0, 0.0, 0.0])
    near = decide.claims(Context(_write(tmp_path / "a", eff, _knockout(0.8, [0.78] + [0.9] * 19))), ["knockout-key-vs-random"]).iloc[0]
    assert pd.isna(near.holds) and "lower bound 75%" in near.here and "5th percentile 89%" in near.here, near.here
    inside = _write(tmp_path / "b", eff, _knockout(0.95, [0.9] * 20, ci_high=0.99))
    assert _holds(inside, "knockout-key-vs-random") is False


def test_knockout_rule_reads_the_primary_task_only(tmp_path):
    """Protects the knockout verdicts from another task's rows: a per-task key-vs-random comparison that happens to
    knock out k heads too (an operation with k key heads), written before the pooled task's curve, is not the
    curve of ``all``: the verdict and its numbers are the pooled task's."""
    eff = _effects({(1, 0): -0.2}, [0.0, 0.0, 0.0])
    other = _knockout(0.95, [0.9] * 20, ci_high=0.99).assign(task="addition")
    both = pd.concat([other, _knockout(0.2, [0.9] * 20, ci_high=0.3)], ignore_index=True)
    row = decide.claims(Context(_write(tmp_path / "a", eff, both)), ["knockout-key-vs-random"]).iloc[0]
    assert row.holds is True and "100% → 20%" in row.here


def test_ablation_rule_uses_the_higher_floor_and_the_control(tmp_path):
    """Protects "the ablation removes the information": every head out (interval from 0.45) is compared with
    the higher of the majority floor (0.3: above it, does not hold) and the conditioned floor (0.5: reaches
    it, holds); a task that fails its control is inconclusive, with the reason in "here"."""
    eff = _effects({(1, 0): -0.2}, [0.0, 0.0, 0.0])
    def ko(cond):
        rows = {"nothing-out": 1.0, "all-heads-out": 0.5, "all-mlps-out": 0.2, "x_c": 0.1, "majority-floor": 0.3}
        if cond is not None:
            rows["conditioned-floor"] = cond
        d = pd.DataFrame([dict(task="all", kind="sanity", order=o, seed=-1, k=0, accuracy=a, n=256) for o, a in rows.items()])
        d = d.assign(positions="end", mean_source="pool", correct=(d.accuracy * 256).round().astype(int))
        return d.assign(ci_low=d.accuracy - 0.05, ci_high=d.accuracy + 0.05)
    assert _holds(_write(tmp_path / "a", eff, ko(None)), "ablation-removes-information") is False
    assert _holds(_write(tmp_path / "b", eff, ko(0.1)), "ablation-removes-information") is False
    assert _holds(_write(tmp_path / "c", eff, ko(0.5)), "ablation-removes-information") is True
    failed = _write(tmp_path / "d", eff, ko(0.5), {"failed": {"all": "every task fails its control"}})
    row = decide.claims(Context(failed), ["ablation-removes-information"]).iloc[0]
    assert row.holds is None and "fails its control" in row.here and "higher of" in BY_ID[row.id].rule


def test_missing_files_make_a_claim_inconclusive_and_say_which(tmp_path):
    """Protects: a rule whose results are absent is inconclusive (never silently true or false)."""
    folder = _write(tmp_path / "a", _effects({(1, 0): -0.2}, [0.0, 0.0]))
    c = decide.claims(Context(folder)).set_index("id")
    for cid in ("knockout-key-vs-random", "transfer", "attention-roles", "precise-matches-full"):
        assert pd.isna(c.loc[cid, "holds"]), cid
        assert c.loc[cid, "here"].startswith("not measured"), cid


def test_text_lines_and_table_agree(tmp_path):
    """Protects: the sentences a chapter shows carry the table's verdict for the same claim id, and the
    intro's markdown table shows every rule with its verdict, so text and table agree."""
    folder = _write(tmp_path / "a", _effects({(1, 0): -0.2}, [0.0, 0.0, 0.0]), _knockout(0.2, [0.9] * 20))
    c = decide.claims(Context(folder))
    lines = claim_lines(c, list(c.id))
    for line, (_, row) in zip(lines, c.iterrows()):
        assert line.startswith(f"{row.claim}: **{claim_verdict(row.holds, row.here)}**")
    md = claims_table(c)
    for _, row in c.iterrows():
        assert f"| {row.rule.replace('|', chr(92) + '|')} (v" in md
    with pytest.raises(KeyError):
        claim_lines(c, ["no-such-claim"])


def test_unknown_claim_id_is_a_clear_error():
    """Protects: asking for a claim that does not exist names the known ones."""
    with pytest.raises(ValueError, match="known: key-heads-exist"):
        decide.select(["nope"])


def test_identify_claims_are_inconclusive_when_the_primary_task_fails_its_control(tmp_path):
    """Protects the per-task control: where the task the key heads come from fails its control
    (its answer is guessable from what the prompt carries), every identify claim is inconclusive with the
    reason, although its numbers alone would decide it; a failed task that is not the primary one changes
    nothing."""
    eff = _effects({(1, 0): -0.08}, [0.0, 0.0, 0.0])
    ids = ["key-heads-exist", "few-heads", "middle-layers", "knockout-key-vs-random"]
    ok = _write(tmp_path / "a", eff, _knockout(0.2, [0.9, 0.95]), {"failed": {"division": "floor 60%"}})
    assert _holds(ok, "key-heads-exist") is True and _holds(ok, "knockout-key-vs-random") is True
    bad = _write(tmp_path / "b", eff, _knockout(0.2, [0.9, 0.95]), {"failed": {"all": "every task fails"}})
    rows = decide.claims(Context(bad), ids)
    assert rows.holds.isna().all() and rows.here.str.contains("fails its control").all()


def test_logit_diff_ranking_can_fail(tmp_path):
    """Protects the rewritten ranking rule (version 1, Spearman between the relative change and the logit
    difference, held by construction): with the paper's two measures in perfect agreement it still does not
    hold when the calibrated share ranks other heads first; it holds when the share agrees; in between it is
    inconclusive; without share columns it is not decided."""
    heads = {(l, h): -0.01 * (1 + l + 10 * h) for l in range(10) for h in range(2)}   # 20 heads, ranked
    eff = _effects(heads, [0.0] * 10)                                                  # logit_diff = 10 × effect
    is_head = eff["head"] != "mlp"

    def with_share(n_swapped):
        # the share ranks the paper's top heads last, except the first 10 - n_swapped of them
        order = eff[is_head].sort_values("effect").index
        share = pd.Series(0.0, index=eff.index)
        share[order] = [-(i + 1) / 100 for i in range(len(order))][::-1]
        top, rest = list(order[:10]), list(order[10:])
        for a, b in zip(top[10 - n_swapped:], rest[:n_swapped]):                      # swap a into the bottom
            share[a], share[b] = share[b], share[a]
        return eff.assign(share=share, share_lo=share - 0.001, share_hi=share + 0.001)

    assert _holds(_write(tmp_path / "a", with_share(0)), "logit-diff-ranking") is True
    assert _holds(_write(tmp_path / "b", with_share(6)), "logit-diff-ranking") is False
    assert pd.isna(_holds(_write(tmp_path / "c", with_share(3)), "logit-diff-ranking"))
    row = decide.claims(Context(_write(tmp_path / "d", eff)), ["logit-diff-ranking"]).iloc[0]
    assert row.holds is None and row.here.startswith("not measured: effects.csv has no share")
    assert eff[is_head].effect.rank().corr(eff[is_head].logit_diff.rank()) == pytest.approx(1.0)   # v1 would hold


def test_the_depth_bootstrap_matches_a_literal_loop():
    """Protects methods.effects.top_depths and cluster_effects against the plain computation: per resample, each
    head's mean over the prompts of the clusters drawn, the heads sorted by it (ties: layer, head), the median layer
    of the first 10 over L − 1; and the per-cluster table averages each cluster's own prompts."""
    import statistics

    import torch

    from arithmech.core.stats import bootstrap_counts
    from arithmech.methods.effects import cluster_effects, top_depths
    g = torch.Generator().manual_seed(3)
    m, L, H = 7, 6, 3
    means, n = torch.randn(m, L * H, generator=g, dtype=torch.float64), torch.tensor([1, 2, 3, 1, 4, 2, 5])
    layers = [l for l in range(L) for _ in range(H)]
    counts = bootstrap_counts(m, 50, seed=1)
    got = top_depths(means, n, layers, L, counts, 10)
    for b in range(50):
        w = [float(counts[b, c]) * int(n[c]) for c in range(m)]
        mean = [sum(w[c] * float(means[c, j]) for c in range(m)) / sum(w) for j in range(L * H)]
        order = sorted(range(L * H), key=lambda j: (mean[j], layers[j], j))[:10]
        assert abs(float(got[b]) - statistics.median(layers[j] / (L - 1) for j in order)) < 1e-12

    class P:                                   # a Patched whose relative change is given: 5 prompts, 2 layers, 1 head
        def relative_change(self, warn=True):
            return torch.tensor([[[1.0, 9], [2, 9]], [[3, 9], [4, 9]], [[5, 9], [6, 9]], [[7, 9], [8, 9]],
                                 [[9, 9], [10, 9]]])
    t = cluster_effects(P(), "addition", [("addition", 1, 2), ("addition", 1, 3), ("addition", 1, 2),
                                          ("addition", 1, 3), ("addition", 2, 2)])
    assert t.cluster.tolist() == ["addition:1:2", "addition:1:3", "addition:2:2"] and t.n.tolist() == [2, 2, 1]
    assert t["0.0"].tolist() == [3.0, 5.0, 9.0] and t["1.0"].tolist() == [4.0, 6.0, 10.0] and "0.1" not in t
