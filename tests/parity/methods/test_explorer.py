"""The static explorer's batched precompute (arithmech.methods.explorer.precompute) equals the one-prompt
functions the Jupyter explorer calls (top_next, attention_strip, layer_top_numbers, mean_ablation), prompt by
prompt, on the embedded model, and its key-head steps equal identify's own key_heads rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from arithmech.data import pairs
from arithmech.data.batches import answer_ids
from arithmech.identify import pipeline
from arithmech.methods import attention as At
from arithmech.methods import effects, explorer
from arithmech.methods.ablation.intervention import Forwards
from arithmech.methods.ablation.knockout import Ablation, knockout_topk

THRESHOLDS = [-0.2, -0.05, -0.01, -0.002]


@pytest.fixture(scope="module")
def eager_embedded():
    from arithmech.core.models import load_model
    net, tok, _ = load_model("embedded", attn_implementation="eager")
    return net, tok


@pytest.fixture(scope="module")
def page(eager_embedded):
    """Effects of a small identify run, 10 prompts over every template family (several token lengths), the
    precomputed tables."""
    net, tok = eager_embedded
    res = pipeline.identify(net, tok, ["addition", "subtraction"], n_samples=24, seed=0, knockout=False, transfer=False,
                     prob=False)
    heads = explorer.head_steps(res.effects, THRESHOLDS)
    means = explorer.knockout_means(net, tok, [s for ss in res.tasks.values() for s in ss])
    samples, _ = pairs.make_pairs(tok, "all", n=10, seed=3, draw=pairs.Draw("first", 0, 1))
    return res, heads, means, samples, explorer.precompute(net, tok, samples, heads, THRESHOLDS, means, max_heads=4,
                                                    batch_size=3)


def test_key_head_steps_follow_identifys_rule(page):
    """Protects the slider: at each step the key heads are exactly identify.key_heads(threshold)'s, in its order,
    and the sets only grow from strict to loose thresholds."""
    res, heads, *_ = page
    sets = explorer.step_heads(heads, len(THRESHOLDS))
    for t, got in zip(THRESHOLDS, sets):
        want = [(h["layer"], h["head"]) for h in effects.key_heads(res.effects, "all", t)["heads"]]
        assert got == want
    assert all(set(a) <= set(b) for a, b in zip(sets, sets[1:]))
    assert len(sets[0]) < len(sets[-1])                    # the slider changes something on this run


def test_precomputed_top5_equals_top_next_intact_and_knocked_out(page, eager_embedded):
    """Protects (a): each prompt's top-5 tokens and probabilities, intact and with each step's key heads
    mean-ablated at END, equal top_next on that prompt alone (batching of equal-length prompts changes nothing)."""
    net, tok = eager_embedded
    _, heads, means, samples, d = page
    sets = explorer.step_heads(heads, len(THRESHOLDS))
    top = d["top"].set_index(["id", "step"])
    for i, s in enumerate(samples):
        for step in range(-1, len(THRESHOLDS)):
            hs = sets[step] if step >= 0 else []
            ref = explorer.top_next(net, tok, s.clean, 5, explorer.mean_ablation(net, hs, means) if hs else None)
            row = top.loc[(i, step)]
            assert list(row.tokens) == list(ref.token), (s.clean, step)
            torch.testing.assert_close(torch.tensor(row.probs), torch.tensor(ref.prob.to_list()), atol=1e-4, rtol=0)
            assert row.correct == (ref.token[0] == tok.convert_ids_to_tokens(answer_ids(tok, [s]).tolist())[0])


def test_precomputed_attention_and_mlp_equal_the_one_prompt_views(page, eager_embedded):
    """Protects (b) and (c): the stored END-row attention of each shown head equals attention_strip's scores,
    tokens and roles; each layer's stored MLP token and cosine equal layer_top_numbers' rank 1."""
    net, tok = eager_embedded
    _, heads, _, samples, d = page
    shown = list(zip(heads.layer[:4], heads["head"][:4]))
    att = d["attention"].set_index(["id", "name"])
    toks = d["tokens"]
    for i, s in enumerate(samples):
        ref = explorer.attention_strip(net, tok, s.clean, shown, s.positions)
        for name, g in ref.groupby("head", sort=False):                         # head: "layer.head"
            torch.testing.assert_close(torch.tensor(att.loc[(i, name)].scores), torch.tensor(g.score.to_list()),
                                       atol=6e-4, rtol=0)            # stored with 3 decimals
        mine = toks[toks.id == i].sort_values("pos")
        assert list(mine.token) == list(ref.token[:len(mine)]) and list(mine.role) == list(ref.role[:len(mine)])
        lt = explorer.layer_top_numbers(net, tok, s.clean, k=1)
        row = d["mlp"].set_index("id").loc[i]
        assert list(row.tokens) == list(lt.token)
        torch.testing.assert_close(torch.tensor(row.cosines), torch.tensor(lt.cosine.to_list()), atol=6e-4, rtol=0)


def test_step_counts_are_the_top_rows(page):
    """Protects the header's numbers: each step's count of prompts whose top-1 is the answer is the sum of the
    stored per-prompt flags, with n = the number of prompts and the rate's Wilson interval over the distinct problems
    (a problem's copies across templates are not independent trials)."""
    from arithmech.core.stats import wilson_interval
    *_, samples, d = page
    problems = len({(s.op, s.a, s.b) for s in samples})
    for r in d["steps"].itertuples():
        flags = d["top"][d["top"].step == r.step].correct
        assert r.correct == int(flags.sum()) and r.n == len(samples) == len(flags) and r.problems == problems
        assert (r.ci_low, r.ci_high) == pytest.approx(wilson_interval(r.correct / r.n * problems, problems))
        assert r.ci_low <= r.correct / r.n <= r.ci_high
    assert pd.api.types.is_integer_dtype(d["top"].answer_rank)


def test_explorer_callbacks_and_knockout(word_llama_fig8):
    """Protects the explorer's logic without a browser: tables for prompt and counterfactual, intact and
    knocked out; a layer-0 knockout changes the output, writes exactly the heads' pooled X_c means into their
    slices of the o_proj input (other heads untouched) and gives the same top-5 as identify's knockout_topk;
    attention rows sum to 1."""
    model, tok, samples = word_llama_fig8
    means = explorer.knockout_means(model, tok, samples)
    ko = explorer.mean_ablation(model, [(0, 0), (0, 3)], means)
    r = explorer.explore(model, tok, "4 + 3 =", "4 @ 3 =", head=(2, 1), knockout=ko)
    top = r["top"]
    assert len(top) == 4 * 5 and set(top.input) == {"prompt", "counterfactual"}
    assert set(top.condition) == {"intact", "knockout"}
    p = top[(top.input == "prompt")]
    assert not np.allclose(p[p.condition == "intact"].prob, p[p.condition == "knockout"].prob)
    att = r["attention"]
    np.testing.assert_allclose(att.groupby(["input", "condition"]).score.sum(), 1.0, atol=1e-5)
    assert att[att.input == "prompt"].token.tolist()[:5] == ["<s>", "4", "+", "3", "="]
    assert set(r["numbers"].layer) == set(range(5))
    ids = torch.tensor([tok("4 + 3 =")["input_ids"]])
    name = "model.layers.0.self_attn.o_proj"
    with torch.no_grad(), At.TraceDict(model, [name], retain_input=True) as clean:
        model(ids)
    z0 = clean[name].input.unflatten(-1, (4, -1))
    mu = means.z["*"][0].unflatten(-1, (4, -1))                              # (2 positions: BOS, rest; H, dh)
    seq = ids.shape[1]
    for positions in ("end", "all"):
        ko = explorer.mean_ablation(model, [(0, 0), (0, 3)], means, positions=positions)
        with torch.no_grad(), ko(), At.TraceDict(model, [name], retain_input=True) as t:  # edit runs first
            model(ids)
        z = t[name].input.unflatten(-1, (4, -1))
        for h in range(4):
            want = z0[0, :, h].clone()
            if h in (0, 3):
                want[-1] = mu[1, h]
                if positions == "all":
                    want = torch.cat([mu[:1, h], mu[1:, h].expand(seq - 1, -1)])
            torch.testing.assert_close(z[0, :, h], want)
        # the same knockout through the identify step's code gives the same top-5
        kt = explorer.top_next(model, tok, "4 + 3 =", 5, ko)
        ids_ko, p_ko = knockout_topk(model, tok, ["4 + 3 ="], None, means, [Ablation.of([(0, 0), (0, 3)])], k=5,
                                     forwards=Forwards(positions=positions))
        assert kt.token.tolist() == tok.convert_ids_to_tokens(ids_ko[0, 0].tolist())
        np.testing.assert_allclose(kt.prob, p_ko[0, 0].numpy(), rtol=1e-5)
