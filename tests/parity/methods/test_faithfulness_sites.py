"""Faithfulness across positions (arithmech.methods.faithfulness_sites) on the embedded model: a head patched at
one position leaves every earlier position as it was and equals a literal hooked forward; the sanity circuits give
exactly 1 and 0 in both directions; the random circuits are layer- and position-matched."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from arithmech.core import prefix
from arithmech.core.trace import Trace, TraceDict
from arithmech.data import pairs
from arithmech.data.batches import answer_ids
from arithmech.data.draw import Draw
from arithmech.methods import faithfulness, faithfulness_sites
from arithmech.methods.ablation.pool import build_pool, pool_prompts
from arithmech.methods.faithfulness_settings import FaithfulnessSettings
from arithmech.methods.prepare import task_templates


@pytest.fixture(scope="module")
def setup(embedded_model):
    model, tok, _ = embedded_model
    tpls = task_templates("addition")[1]
    samples = pairs.make_pairs(tok, tpls, n=4, seed=5, draw=Draw("last-digit", 0, 1))[0]
    means = build_pool(model, tok, pool_prompts(tok, tpls, 32, 0, draw=Draw("last-digit", 0, 1)))
    return dict(model=model, tok=tok, samples=samples, means=means, L=model.config.num_hidden_layers,
                H=model.config.num_attention_heads)


def test_a_patch_at_one_position_changes_no_earlier_position_and_equals_literal_hooks(setup):
    """Protects the per-row, per-position edit: head (l, h) replaced at the first ``{B}`` token only, by X_r's value
    into X_c. Every position before it keeps X_c's final hidden state bit for bit (causal attention), the END
    hidden state moves, and the END LD — rows run whole or on a KV cache of the positions before the site — equals
    one full forward with a literal hook writing that one slice."""
    s = setup
    model, tok, x = s["model"], s["tok"], s["samples"][0]
    L, H = s["L"], s["H"]
    (z_r,), _ = faithfulness_sites.head_values(model, tok, [x.clean])
    seq, p, l, h = z_r.shape[1], x.positions["B"][0], 1, 2
    mask = torch.zeros(L, seq, H, dtype=torch.bool)
    mask[l, p, h] = True
    ans_r, ans_c = torch.tensor([answer_ids(tok, [x])[0]]), torch.tensor([0])
    norm = "model.norm"
    with prefix.enabled(False):                                  # every row whole: the norm sees every position
        with Trace(model, norm) as t:
            whole = faithfulness_sites.site_lds(model, tok, [x.corrupt], [z_r], [[mask]], ans_r, ans_c)[0, 0]
            patched = t.output[0].clone()
        with Trace(model, norm) as t:
            faithfulness_sites.site_lds(model, tok, [x.corrupt], [z_r], [[torch.zeros_like(mask)]], ans_r, ans_c)
            plain = t.output[0].clone()
    assert torch.equal(patched[:p], plain[:p])
    assert not torch.equal(patched[-1], plain[-1])
    got = faithfulness_sites.site_lds(model, tok, [x.corrupt], [z_r], [[mask]], ans_r, ans_c)[0, 0]    # positions < p as a KV cache
    assert abs(float(got) - float(whole)) < 1e-4
    dh = z_r.shape[-1] // H

    def edit(v, name):
        v = v.clone()
        v[:, p, h * dh:(h + 1) * dh] = z_r[l, p, h * dh:(h + 1) * dh]
        return v

    with TraceDict(model, [f"model.layers.{l}.self_attn.o_proj"], edit_input=edit), torch.no_grad():
        lg = model(torch.tensor([tok(x.corrupt)["input_ids"]])).logits[0, -1].double()
    assert abs(float(lg[ans_r[0]] - lg[ans_c[0]]) - float(got)) < 1e-4


def _settings(n_random, n_boot):
    """Cross-position settings: ``n_random`` layer-matched draws, ``n_boot`` resamples, seed 0, held-out."""
    return FaithfulnessSettings(n_max=20, n_random=n_random, seed=0, n_boot=n_boot, bootstrap="cluster",
                                  split="held-out", batch_size=64, converse_random=False)


def test_sanity_circuits_are_one_and_zero_in_both_directions(setup):
    """Protects the cross-position endpoints: every head at the operand positions and END kept (noising) or
    patched (denoising) recovers exactly 1, none exactly 0; the all-patched X_c equals X_r at END; the rows are
    bounded and the reading circuit's random draws are layer-matched."""
    s = setup
    rows, info = faithfulness_sites.cross_position(s["model"], s["tok"], s["samples"], s["means"], reading=[(1, 0)], key=[(3, 1)],
                                  task="all", settings=_settings(n_random=20, n_boot=50))
    f = pd.DataFrame(rows)
    for m in ("noising", "denoising"):
        g = f[f.method == m].set_index("order")
        assert g.loc["all", "recovery"] == pytest.approx(1.0, abs=1e-6)
        assert g.loc["none", "recovery"] == pytest.approx(0.0, abs=1e-6)
        assert ((g.recovery >= 0) & (g.recovery <= 1)).all()
        assert g.loc["operands", "components"] == "1.0@operands 3.1@end"
    assert info["denoising_all_patched_minus_x_r"] < 1e-4 and info["noising_nothing_ablated_minus_x_r"] < 1e-4
    rnd = f[(f.order == "random-layer") & (f.method == "noising")]
    assert len(rnd) == 20 and all(c.split()[0].startswith("1.") and c.split()[1].startswith("3.") for c in rnd.components)


def test_the_noising_denominator_is_the_effect_through_ends_heads(setup):
    """Protects what the cross-position denominator is: every head at A, B, operator and END at its
    mean gives END exactly the LD of END's heads alone at their means (every path from an earlier token into END
    runs through END's heads), so the denominator is the effect of the tokens before END, as at END; and the rows
    say which baseline (MLPs recomputed) beside END's (heads and MLPs at their means)."""
    s = setup
    model, tok, L, H = s["model"], s["tok"], s["L"], s["H"]
    samples = s["samples"]
    universe = tuple((l, h, "operands") for l in range(L) for h in range(H))
    at_end = tuple((l, h, "end") for l in range(L) for h in range(H))
    z = [faithfulness_sites.head_values(model, tok, [x.clean])[0][0] for x in samples]
    masks = [[faithfulness_sites.site_mask(c, x.positions, zz.shape[1], L, H) for x, zz in zip(samples, z)] for c in (universe, at_end)]
    mean_z = [s["means"].lookup(s["means"].key(x), zz.shape[1])[0] for x, zz in zip(samples, z)]
    ans_r = answer_ids(tok, samples)
    ans_c = (ans_r + 1) % model.config.vocab_size
    ld = faithfulness_sites.site_lds(model, tok, [x.clean for x in samples], mean_z, masks + [[torch.zeros_like(m) for m in masks[0]]],
                    ans_r, ans_c)
    assert torch.allclose(ld[0], ld[1], atol=1e-4) and not torch.allclose(ld[0], ld[2], atol=1e-2)
    rows, _ = faithfulness_sites.cross_position(model, tok, samples, s["means"], reading=[(1, 0)], key=[(3, 1)], task="all",
                               settings=_settings(n_random=2, n_boot=20))
    f = pd.DataFrame(rows)
    assert set(f[f.method == "noising"].baseline) == {faithfulness_sites.BASELINE} and set(f[f.method == "denoising"].baseline) == {"X_c"}
    assert "MLPs recomputed" in faithfulness_sites.BASELINE and faithfulness.BASELINE["noising"] == "every head and MLP at END ablated"


def test_random_layer_circuits_match_layers_and_positions():
    """Protects the layer-matched control: each draw keeps every site's layer and position set, never uses a
    circuit head or the same head twice, is seeded, and a layer with no free head is refused."""
    sites = faithfulness_sites.circuit([(2, 0), (2, 1)], [(4, 3), (2, 0)])
    assert sites == ((2, 0, "operands"), (2, 1, "operands"), (4, 3, "end"))
    draws = faithfulness_sites.random_layer_circuits(sites, 4, 30, seed=3)
    for d in draws:
        assert [(l, w) for l, _, w in d] == [(l, w) for l, _, w in sites]
        assert not {(l, h) for l, h, _ in d} & {(l, h) for l, h, _ in sites}
        assert len({(l, h) for l, h, _ in d}) == len(d)
    assert draws == faithfulness_sites.random_layer_circuits(sites, 4, 30, seed=3) != faithfulness_sites.random_layer_circuits(sites, 4, 30, seed=4)
    with pytest.raises(ValueError, match="layer 2"):
        faithfulness_sites.random_layer_circuits(((2, 0, "end"), (2, 1, "end"), (2, 2, "end")), 4, 1, seed=0)


def test_reading_heads_are_above_every_heads_95th_percentile():
    """Protects the choice of the reading heads: only heads whose operand mass exceeds the 95th percentile over
    every head, largest first, at most k."""
    rows = [{"layer": l, "head": h, "role": "operand", "task": "all", "mass_nofirst": 0.01 * (8 * l + h)}
            for l in range(5) for h in range(8)]
    roles = pd.DataFrame(rows)
    assert faithfulness_sites.reading_heads(roles, k=5) == [(4, 7), (4, 6)]       # 40 heads: the top 2 lie above the 95th percentile
    assert faithfulness_sites.reading_heads(roles, k=1) == [(4, 7)]
