"""Parity tests of ``arithmech/methods/ablation/run.py``."""
from __future__ import annotations

import dataclasses
from collections import Counter

import pandas as pd
import pytest
import torch

from arithmech.core.trace import TraceDict
from arithmech.data import pairs, templates
from arithmech.data.batches import answer_ids
from arithmech.data.floors import problem_floor
from arithmech.evals.scoring import predict
from arithmech.methods.ablation.intervention import Forwards
from arithmech.methods.ablation.knockout import Ablation
from arithmech.methods.ablation.pool import build_pool, pool_key, pool_prompts
from arithmech.methods.ablation.run import Studied, sanity_rows, task_knockout
from arithmech.methods.ablation.settings import Curve, KnockoutSettings


def test_sanity_rows_equal_literal_forwards(embedded_model):
    """Protects the sanity rows: nothing out = the model's own top-1 accuracy; all heads out (END and
    every position) = a plain forward whose every head's o_proj-input slice is overwritten with the pool
    mean; X_c = its prompt scored against the X_r answer; the floor = the most frequent answer's share; the
    conditioned floor = data.floors.problem_floor's count over the prompts."""
    model, tok, _ = embedded_model
    L = model.config.num_hidden_layers
    samples, _ = pairs.make_pairs(tok, "addition", n=16, seed=5, draw=pairs.Draw("first", 0, 1))
    pool = build_pool(model, tok, pool_prompts(tok, pairs.select_templates("addition"), 24, 0, draw=pairs.Draw("first", 0, 1)),
                      min_group=4)
    gold = answer_ids(tok, samples)
    for positions in ("end", "all"):
        rows = {r["order"]: r for r in sanity_rows(model, tok, samples, pool, Forwards(positions=positions))}
        clean = int((predict(model, tok, [s.clean for s in samples])[:, 0] == gold).sum())
        assert rows["nothing-out"]["correct"] == clean
        ok = 0
        for s, y in zip(samples, gold.tolist()):
            ids = torch.tensor([tok(s.clean)["input_ids"]])
            z, _ = pool.lookup(pool_key(s), ids.shape[1])

            def edit(x, name):
                l = int(name.split(".")[2])
                x = x.clone()
                if positions == "end":  # noqa: B023 (used at once)
                    x[:, -1] = z[l, -1]  # noqa: B023 (used at once)
                else:
                    x[:, :] = z[l]  # noqa: B023 (used at once)
                return x
            with torch.no_grad(), TraceDict(model, [f"model.layers.{l}.self_attn.o_proj" for l in range(L)],
                                            edit_input=edit):
                ok += int(model(ids).logits[0, -1].argmax()) == y
        assert rows["all-heads-out"]["correct"] == ok
        xc = int((predict(model, tok, [s.corrupt for s in samples])[:, 0] == gold).sum())
        assert rows["x_c"]["correct"] == xc
        assert rows["majority-floor"]["correct"] == max(Counter(gold.tolist()).values())
        assert rows["conditioned-floor"]["correct"] == round(max(problem_floor(samples)["table"]["prompts"].values()) * len(samples))
        assert all(r["n"] == 16 for r in rows.values())


def test_same_seed_same_knockout_rows(embedded_model):
    """Protects determinism: the same seed gives identical knockout rows (pool, prompts, random orders),
    and another seed gives other random orders."""
    model, tok, _ = embedded_model
    samples, _ = pairs.make_pairs(tok, "addition", n=8, seed=2, draw=pairs.Draw("first", 0, 1))
    heads = [(l, h) for l in range(6) for h in range(8)]
    key = {"heads": [{"layer": 0, "head": 1}], "mlps": [{"layer": 0}]}

    def run(seed):
        pool = build_pool(model, tok, pool_prompts(tok, pairs.select_templates("addition")[:3], 12, seed,
                                                   draw=pairs.Draw("first", 0, 1)), min_group=2)
        settings = KnockoutSettings(samples=8, n_random=3, seed=seed, ks=(0, 1, 2), curves_for="primary",
                                    positions="end", split="in-sample", pool_size=12, batch_size=64)
        return task_knockout(model, tok, samples, pool, "addition", Studied(heads, list(range(6)), key), True,
                             settings)
    a, b = run(0), run(0)
    pd.testing.assert_frame_equal(a, b)
    assert a.to_csv(index=False) == b.to_csv(index=False)
    assert set(a.kind) == {"head", "mlp", "sanity"} and set(a.positions) == {"end"}
    assert Ablation() == Ablation.of()
    lm = a[a.order == "layer-matched"]                  # one key head in layer 0: 3 draws of one other layer-0 head
    assert len(lm) == 3 and set(lm.k) == {1} and lm.n.eq(8).all() and lm.accuracy.between(0, 1).all()
    from arithmech.methods.ablation.tables import key_vs_random
    point = key_vs_random(a[(a.kind == "head") & (a.k == 1)])
    assert point["layer_matched_orders"] == 3 and point["accuracy_layer_matched_mean"] == lm.accuracy.mean()


def test_task_knockout_random_draws_avoid_the_treated_heads(monkeypatch):
    """Protects the random baseline's definition: in the full curve, random orders run at every k > 0 of the
    effect-rank curve (Fig. 3's band along the whole curve), drawn outside the key heads and, at each
    k, outside the top k by effect rank (``exclude_top``: the heads the effect-rank point knocks out); at other
    positions the studied heads (key heads, else the top 8) are compared with as many random heads outside
    them; the other tasks compare only their key heads."""
    import arithmech.methods.ablation.run as ablation_run
    seen = []

    def fake_curve(model, tok, samples, means, c, **kw):
        seen.append((kw["forwards"].positions, c.kind, list(c.ranking), list(c.exclude), list(c.ks), list(c.random_ks),
                     c.exclude_top))
        return pd.DataFrame({c: [] for c in ["kind", "order", "seed", "k", "accuracy", "correct", "n", "ci_low", "ld", "ld_lo", "ld_hi",
                                             "ci_high"]})
    monkeypatch.setattr(ablation_run, "knockout_curve", fake_curve)
    monkeypatch.setattr(ablation_run, "sanity_rows", lambda *a, **k: [])
    monkeypatch.setattr(ablation_run, "mean_sources", lambda *a, **k: "")
    monkeypatch.setattr(ablation_run, "counter_answers", lambda *a, **k: None)
    matched = []
    empty = pd.DataFrame({c: [] for c in ["kind", "order", "seed", "k", "accuracy", "correct", "n", "ci_low", "ci_high",
                                         "ld", "ld_lo", "ld_hi"]})
    monkeypatch.setattr(ablation_run, "layer_matched_rows", lambda model, tok, samples, means, c, **kw:
                        (matched.append((list(c.ranking), list(c.ks), list(c.exclude))), empty)[1])
    cfg = type("C", (), {"num_hidden_layers": 3, "num_attention_heads": 4, "hidden_size": 8, "vocab_size": 16})
    model = type("M", (), {"config": cfg})()
    heads = [(2, 1), (0, 3), (1, 1), (2, 2), (0, 0), (1, 3), (2, 0), (1, 2), (0, 1), (2, 3), (0, 2), (1, 0)]
    key = {"heads": [{"layer": 0, "head": 3}], "mlps": []}
    both = KnockoutSettings(samples=4, n_random=20, seed=0, ks=None, curves_for="primary", positions="both",
                               split="in-sample", pool_size=8, batch_size=64)
    end = dataclasses.replace(both, positions="end")
    ablation_run.task_knockout(model, None, [], None, "all", ablation_run.Studied(heads, [2, 0, 1], key), True, both)
    (_, _, _, ex_h, hk, rk_h, top_h), (_, _, _, ex_m, mk, rk_m, top_m), at_all = seen[:3]
    assert rk_h == [k for k in hk if k] and hk[-1] == 12 and top_h and ex_h == [(0, 3)]
    assert rk_m == [1, 2, 3] == mk[1:] and top_m and ex_m == []          # no key MLP: outside the top k only
    assert at_all[0] == "all" and at_all[2] == at_all[3] == [(0, 3)] and at_all[4] == at_all[5] == [1]
    assert not at_all[6]                                        # the key heads vs random heads outside them only
    assert matched == [(heads, [1, 8], [(0, 3)])]               # layer-matched: once, at the key heads' k and k = 8
    seen.clear()
    ablation_run.task_knockout(model, None, [], None, "addition", ablation_run.Studied(heads, [2, 0, 1], {"heads": [], "mlps": []}), False,
                     end)
    assert seen[0][2] == [] and seen[0][5] == []                # no key head: nothing to compare
    seen.clear()
    ablation_run.task_knockout(model, None, [], None, "all", ablation_run.Studied(heads, [2, 0, 1], {"heads": [], "mlps": []}), True, both)
    assert seen[2][2] == seen[2][3] == heads[:8]                # no key head: the top 8 vs 8 outside them


def test_random_draw_at_k_leaves_out_the_top_k_and_the_key_heads(monkeypatch):
    """Protects Fig. 3's random band at every k: with ``exclude_top`` the draw at k holds k heads none of which
    is a key head (``exclude``) or among the top k by effect rank; a k with fewer than k such heads gets no random
    row (the chart says so) instead of a smaller draw; a draw is uniform over what remains (filtered order)."""

    from arithmech.methods.ablation import curves
    universe = [(l, h) for l in range(2) for h in range(4)]                   # 8 heads
    ranking = [(1, 2), (0, 0), (1, 1), (0, 3), (0, 1), (1, 0), (0, 2), (1, 3)]
    key = [(0, 0)]
    seen = []
    monkeypatch.setattr(curves, "scored_rows", lambda model, tok, samples, means, abls, rows, forwards=None, other=None:
                        (seen.extend(abls), pd.DataFrame([curves.with_interval(r, 0, 2) for r in rows]))[1])
    curve = Curve("head", ranking, universe, key, [0, 1, 2, 3, 4, 5, 8], [1, 2, 3, 4, 5, 8], True)
    d = curves.knockout_curve(None, None, [1, 2], None, curve, n_random=5, seed=0)
    rnd = [(r.k, a) for r, a in zip(d.itertuples(), seen) if r.order == "random-rank"]
    assert sorted({k for k, _ in rnd}) == [1, 2, 3, 4]          # k = 5 needs 5 heads outside the top 5: 8 − 5 < 5
    assert len(rnd) == 4 * 5                                    # every order at every drawable k
    for k, a in rnd:
        assert len(a.heads) == k and not a.heads & ({*ranking[:k]} | set(key)), (k, a.heads)
    assert curves.random_draw([3, 1, 2], 2) == [3, 1] and curves.random_draw([3, 1, 2], 2, avoid=[3]) == [1, 2]
    assert curves.random_draw([3, 1, 2], 3, avoid=[3]) == []


def test_knockout_prompts_are_distinct(embedded_model):
    """Protects the knockout's n: the prompts eval_samples returns are all different (a base with repeats and
    draws from one small template give no prompt twice), each answered right by the model."""
    from arithmech.methods.ablation.run import eval_samples
    from arithmech.methods.ablation.settings import Prompts
    model, tok, _ = embedded_model
    tpl = [templates.TEMPLATES[t.id] for t in templates.FIG8 if t.op == "addition"][:1]
    base, _ = pairs.make_pairs(tok, tpl, n=20, seed=1, draw=pairs.Draw("last-digit", 0, 1))
    got = eval_samples(model, tok, tpl, base + base, Prompts(n=120, seed=0, draw=pairs.Draw("last-digit", 0, 1), heldout=False,
                                                          batch_size=64))
    assert len({s.clean for s in got}) == len(got) > 20
    assert bool((predict(model, tok, [s.clean for s in got])[:, 0] == answer_ids(tok, got)).all())


def test_a_task_with_no_knockout_prompt_has_no_rows_and_the_run_goes_on(monkeypatch, capsys):
    """Protects a held-out knockout on a weak model (zero-shot SmolLM2's subtraction: no fresh X_r of a
    never-ranked problem passes the X_r rules): the task gets no rows and one line on stderr, the other tasks
    and the pooled task keep theirs, and with no prompt anywhere the frame is empty (no Wilson interval of n = 0)."""
    import arithmech.methods.ablation.run as ablation_run
    got = {"addition": [pairs.Sample("1 + 2 = ", "1 @ 2 = ", "3", "3", 1, 2, "+", "add-1", "equation", answer_token="first")], "subtraction": []}
    monkeypatch.setattr(ablation_run, "eval_samples", lambda model, tok, tpls, ss, *a, **kw: list(ss))   # in-sample: the X_r
    ran = []
    monkeypatch.setattr(ablation_run, "task_knockout", lambda model, tok, samples, means, task, *a: (ran.append((task, len(samples))),
                        pd.DataFrame({c: [1] for c in ablation_run.COLUMNS[:-2]}).assign(task=task))[1])
    settings = KnockoutSettings(samples=4, n_random=20, seed=0, ks=None, curves_for="primary", positions="end",
                                   split="in-sample", pool_size=8, batch_size=64)
    NO_EFFECTS = pd.DataFrame(columns=["task", "layer", "head", "effect", "effect_lo", "effect_hi", "logit_diff"])
    ranked = ablation_run.Ranked(got, {"addition": ["t"], "subtraction": ["t"]}, NO_EFFECTS, -0.05, "all")
    ko, evals = ablation_run.knockout_tasks(None, None, ranked, None, settings, pairs.Draw("first", 0, 1))
    assert ran == [("addition", 1), ("all", 1)] and evals["subtraction"] == []
    assert set(ko.task) == {"addition", "all"} and "subtraction: no knockout prompt" in capsys.readouterr().err
    ranked = ablation_run.Ranked({"subtraction": []}, {"subtraction": ["t"]}, NO_EFFECTS, -0.05, "subtraction")
    ko, _ = ablation_run.knockout_tasks(None, None, ranked, None, settings, pairs.Draw("first", 0, 1))
    assert ko.empty and list(ko.columns) == ablation_run.COLUMNS


@pytest.mark.parametrize("change,match", [
    (dict(curves_for="all"), "curves_for 'all': use 'primary' or 'each'"),
    (dict(positions="start"), "knockout_positions 'start': use one of"),
    (dict(split="random"), "knockout split 'random': use one of"),
    (dict(samples=0), "knockout samples=0: at least 1"),
    (dict(n_random=0), "knockout n_random=0: at least 1"),
])
def test_knockout_settings_refuse_a_wrong_value_when_made(change, match):
    """Protects the one place the knockout's settings are checked: a wrong choice or count is one ValueError when
    KnockoutSettings is made (before any prompt is drawn), naming the setting and what to use."""
    good = dict(samples=4, n_random=2, seed=0, ks=None, curves_for="primary", positions="both", split="held-out",
                pool_size=8, batch_size=4)
    assert KnockoutSettings(**good).position_settings == ["end", "all"]
    with pytest.raises(ValueError, match=match):
        KnockoutSettings(**{**good, **change})


def test_layer_matched_draws_keep_each_layers_count_outside_the_compared_heads():
    """Protects the layer-matched random control: every draw holds as many heads of each layer as the
    heads it is compared with (two in layer 2, one in layer 0 here), none of them nor of the key heads, the same
    draws for the same seed and others for another; a layer without enough heads left gives no draw."""
    from arithmech.methods.ablation.run import layer_matched_draws
    universe = [(l, h) for l in range(3) for h in range(6)]
    chosen, key = [(2, 1), (0, 3), (2, 2)], [(2, 0)]
    draws = layer_matched_draws(chosen, universe, key, 20, 0)
    assert len(draws) == 20 and all(Counter(l for l, _ in d) == Counter({2: 2, 0: 1}) for d in draws)
    assert all(len(set(d)) == 3 and not set(d) & {(2, 1), (0, 3), (2, 2), (2, 0)} and sorted(d) == d for d in draws)
    assert {h for d in draws for h in d} == {(0, 0), (0, 1), (0, 2), (0, 4), (0, 5), (2, 3), (2, 4), (2, 5)}
    assert layer_matched_draws(chosen, universe, key, 20, 0) == draws != layer_matched_draws(chosen, universe, key, 20, 1)
    assert layer_matched_draws(chosen, universe, [(2, 0), (2, 3), (2, 4)], 20, 0) == []     # one head left in layer 2
