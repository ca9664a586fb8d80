"""Faithfulness (arithmech.methods.faithfulness) on the embedded model: the endpoints are exact, a resample from
the prompt itself is no ablation, and one noising and one denoising circuit equal a literal hooked forward."""

from __future__ import annotations

import pytest
import torch

from arithmech.core.trace import TraceDict
from arithmech.data import pairs
from arithmech.data.batches import answer_ids
from arithmech.methods import faithfulness, faithfulness_lds, faithfulness_settings
from arithmech.methods.ablation.knockout import Ablation
from arithmech.methods.ablation.pool import build_pool, fold, pool_prompts
from arithmech.methods.prepare import task_templates


@pytest.fixture(scope="module")
def setup(embedded_model):
    model, tok, _ = embedded_model
    tpls = task_templates("addition")[1]
    samples = pairs.make_pairs(tok, tpls, n=6, seed=11, draw=pairs.Draw("last-digit", 0, 1))[0]
    pool = pool_prompts(tok, tpls, 32, 0, draw=pairs.Draw("last-digit", 0, 1))
    means = build_pool(model, tok, pool)
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    universe = [(l, h) for l in range(L) for h in list(range(H)) + ["mlp"]]
    clean, corrupt = [s.clean for s in samples], [s.corrupt for s in samples]
    ans_r = answer_ids(tok, samples)
    z_r, m_r, logit_r = faithfulness_lds.end_values(model, tok, clean)
    ans_c = faithfulness_lds.end_values(model, tok, corrupt)[2].argmax(-1)
    at = torch.arange(len(samples))
    ld_r = logit_r[at, ans_r].double() - logit_r[at, ans_c].double()
    return dict(model=model, tok=tok, samples=samples, means=means, pool=pool, universe=universe, clean=clean,
                corrupt=corrupt, ans_r=ans_r, ans_c=ans_c, z_r=z_r, m_r=m_r, ld_r=ld_r)


def _settings(n_boot=50):
    """The settings the rows below are written with (seed 0, held-out)."""
    return faithfulness_settings.FaithfulnessSettings(n_max=20, n_random=20, seed=0, n_boot=n_boot, bootstrap="cluster", split="held-out",
                                  batch_size=64, converse_random=False)


def _rows(method, ablation, plan, num, den):
    """:func:`faithfulness.circuit_rows` of task ``"t"`` at END, each prompt its own unit, 6 problems."""
    return faithfulness.circuit_rows(faithfulness_settings.Rows("t", method, ablation, "end", faithfulness.BASELINE[method]), plan, num, den, _settings(),
                          faithfulness.Units(None, None, 6))


def _lds(s, prompts, source, keys, ablations):
    return faithfulness_lds.lds(s["model"], s["tok"], prompts, keys, source, ablations, (s["ans_r"], s["ans_c"]))


def test_noising_endpoints_are_exact(setup):
    """Protects the share's two ends: keeping every component is the X_r run itself (share exactly 1, not
    1 ± rounding) and keeping none is the all-ablated run (share exactly 0)."""
    s = setup
    every = faithfulness.ablation_of(s["universe"])
    keys = [s["means"].key(x) for x in s["samples"]]
    keep_all, keep_none = faithfulness.ablation_of([]), faithfulness.ablation_of(s["universe"])   # ablate nothing / everything outside ∅
    ld = _lds(s, s["clean"], s["means"], keys, [Ablation(), every, keep_all, keep_none])
    plan = [("top", -1, len(s["universe"]), tuple(s["universe"])), ("top", -1, 0, ())]
    rows = _rows("noising", "mean", plan, (ld[2:] - ld[1]).T, ld[0] - ld[1])
    assert rows[0]["share"] == 1.0 and rows[1]["share"] == 0.0
    assert rows[0]["recovery"] == 1.0 and rows[1]["recovery"] == 0.0        # the bounded measure too
    assert rows[0]["recovery_lo"] == rows[0]["recovery_hi"] == 1.0 and rows[1]["recovery_hi"] == 0.0
    assert not torch.equal(ld[0], ld[1])            # the ablation does something (else 0/0 would pass nothing)


def test_resample_from_itself_is_no_ablation(setup):
    """Protects resample ablation's plumbing: every component replaced by its own END value on the same prompt
    changes no bit of the logit difference (a wrong row, prompt or position would)."""
    s = setup
    own = faithfulness_lds.PerPrompt(s["z_r"], s["m_r"])
    idx = list(range(len(s["clean"])))
    ablated = _lds(s, s["clean"], own, idx, [faithfulness.ablation_of(s["universe"])])
    clean = _lds(s, s["clean"], own, idx, [Ablation()])
    assert torch.equal(ablated, clean)
    shifted = faithfulness_lds.PerPrompt(s["z_r"].roll(1, 0), s["m_r"].roll(1, 0))     # another prompt's values: must differ
    assert not torch.equal(_lds(s, s["clean"], shifted, idx, [faithfulness.ablation_of(s["universe"])]), clean)


def test_denoising_every_component_gives_x_r(setup):
    """Protects denoising's direction: X_c with every head and MLP patched from X_r at END is X_r at END (the
    END token is the same), so its LD is LD(X_r) up to float rounding."""
    s = setup
    ld = _lds(s, s["corrupt"], faithfulness_lds.PerPrompt(s["z_r"], s["m_r"]), list(range(len(s["corrupt"]))),
              [faithfulness.ablation_of(s["universe"]), Ablation()])
    assert torch.allclose(ld[0], s["ld_r"], atol=1e-4)
    plan = [("top", -1, 2, ((0, 0), (1, 1))), ("top", -1, 0, ())]
    rows = _rows("denoising", "x_r", plan, torch.stack([ld[0] - ld[1], ld[1] - ld[1]], 1), ld[0] - ld[1])
    assert rows[0]["recovery"] == 1.0 and rows[1]["recovery"] == 0.0        # full / empty, denoising
    assert not torch.allclose(ld[1], s["ld_r"], atol=1e-2)       # X_c itself is far from it


def _literal(model, tok, prompt, circuit, value_z, value_m):
    """One full forward of ``prompt`` with the END values of ``circuit``'s components overwritten by
    ``value_z (L, H*dh)`` / ``value_m (L, d)``: head slices of the o_proj input, MLP outputs. ``(V,)`` logits."""
    H = model.config.num_attention_heads

    def edit_z(x, name):
        l = int(name.split(".")[2])
        x = x.clone()
        dh = x.shape[-1] // H
        for (ll, h) in circuit:
            if ll == l and h != "mlp":
                x[:, -1, h * dh:(h + 1) * dh] = value_z[l, h * dh:(h + 1) * dh]
        return x

    def edit_m(y, name):
        l = int(name.split(".")[2])
        if (l, "mlp") in circuit:
            y = y.clone()
            y[:, -1] = value_m[l]
        return y

    L = model.config.num_hidden_layers
    with TraceDict(model, [f"model.layers.{l}.self_attn.o_proj" for l in range(L)], edit_input=edit_z), \
            TraceDict(model, [f"model.layers.{l}.mlp" for l in range(L)], edit_output=edit_m):
        ids = torch.tensor([tok(prompt)["input_ids"]])
        return model(ids).logits[0, -1].double()


def test_one_circuit_equals_literal_hooks(setup):
    """Protects the batched END replay against a literal implementation: keep a mixed circuit (heads and MLPs)
    and mean-ablate the rest at END, or patch it from X_r into X_c, by hand with one full forward per prompt."""
    s = setup
    model, tok = s["model"], s["tok"]
    circuit = [(0, "mlp"), (0, 0), (2, 3), (3, "mlp"), (4, 1)]
    rest = [c for c in s["universe"] if c not in circuit]
    keys = [s["means"].key(x) for x in s["samples"]]
    got = _lds(s, s["clean"], s["means"], keys, [faithfulness.ablation_of(rest)])[0]
    den = _lds(s, s["corrupt"], faithfulness_lds.PerPrompt(s["z_r"], s["m_r"]), list(range(6)), [faithfulness.ablation_of(circuit)])[0]
    for i, x in enumerate(s["samples"]):
        seq = len(tok(x.clean)["input_ids"])
        z, m = s["means"].lookup(keys[i], seq)
        lg = _literal(model, tok, x.clean, rest, z[:, -1], m[:, -1])
        assert abs(float(lg[s["ans_r"][i]] - lg[s["ans_c"][i]]) - float(got[i])) < 1e-4
        lg = _literal(model, tok, x.corrupt, circuit, s["z_r"][i], s["m_r"][i])
        assert abs(float(lg[s["ans_r"][i]] - lg[s["ans_c"][i]]) - float(den[i])) < 1e-4


def test_resample_sources_match_template_length_and_leave_the_fold_out(setup):
    """Protects the resample draw: the source X_c has the prompt's template and token length and an operand pair
    of another fold (as the mean leaves the prompt's own fold out), and the draw is seeded."""
    s = setup
    tok = s["tok"]
    src, tiers = faithfulness_lds.resample_sources(tok, s["samples"], s["pool"], seed=0)
    by_prompt = {p.corrupt: p for ps in s["pool"].values() for p in ps}
    for x, p in zip(s["samples"], src):
        q = by_prompt[p]
        if tiers["template"] == len(src):
            assert q.template == x.template
        assert len(tok(p)["input_ids"]) == len(tok(x.clean)["input_ids"])
        assert fold(q.a, q.b, 4) != fold(x.a, x.b, 4)
    assert faithfulness_lds.resample_sources(tok, s["samples"], s["pool"], seed=0)[0] == src


def test_a_prompt_no_pool_prompt_matches_in_length_has_no_source(setup):
    """Protects the resample draw's edge (SmolLM2 addition alone: an 81-token prompt, no pool X_c of 81 tokens):
    such a prompt gets ``None`` and tier ``none`` (faithfulness leaves it out and counts it) instead of stopping the
    run; the other prompts keep the sources they had."""
    import dataclasses
    s = setup
    tok = s["tok"]
    odd = dataclasses.replace(s["samples"][0], clean=s["samples"][0].clean + " 1 2 3 4 5 6 7 8 9 1 2 3 4 5 6 7 8 9")
    src, tiers = faithfulness_lds.resample_sources(tok, [odd] + list(s["samples"]), s["pool"], seed=0)
    assert src[0] is None and tiers["none"] == 1
    alone, _ = faithfulness_lds.resample_sources(tok, s["samples"], s["pool"], seed=0)
    assert all(x is not None for x in alone) and len(src) == len(alone) + 1
    class _Settings:                      # what sourced reads of FaithfulnessSettings
        seed, batch_size = 0, 64
    kept, left = faithfulness_lds.sourced(tok, [odd] + list(s["samples"]), s["pool"], object(), _Settings())  # type: ignore[arg-type]
    assert left == 1 and kept == list(s["samples"])   # the step hands these to the END and cross-position curves


def test_random_circuits_lie_outside_the_top_n():
    """Protects the baseline: a random circuit of n never holds one of the top n, has n components, may hold a
    component ranked just below n (the band can include strong components: it is not heads-only by
    construction), is seeded, and a top N too large to draw from is refused."""
    uni = [(l, h) for l in range(3) for h in range(4)]
    plan = faithfulness.circuits(uni, uni, 4, 20, seed=1)
    assert [p[2] for p in plan if p[0] == "top"] == [1, 2, 3, 4]
    rnd = [p for p in plan if p[0] == "random"]
    assert len(rnd) == 80 and all(len(c) == n and not set(c) & set(uni[:n]) for _, _, n, c in rnd)
    assert any(uni[1] in c for _, _, n, c in rnd if n == 1)
    assert faithfulness.circuits(uni, uni, 4, 20, seed=1) == plan and faithfulness.circuits(uni, uni, 4, 20, seed=2) != plan
    with pytest.raises(ValueError, match="n_max"):
        faithfulness.circuits(uni, uni, 7, 20, seed=1)


def test_recovery_equals_a_literal_per_prompt_loop(setup):
    """Protects the bounded measure against a literal implementation: per prompt, one hooked forward each for X_r,
    all ablated and the circuit kept, (circuit − all) / (X_r − all) clipped to [0, 1] where X_r − all > 0, then a
    plain Python mean; it must equal the ``recovery`` of the row the module writes, and lie in [0, 1]; unclipped,
    the ``recovery_raw``, and the share above 1, ``over_one``."""
    s = setup
    model, tok = s["model"], s["tok"]
    circuit = [(0, "mlp"), (1, 0), (2, 3)]
    rest = [c for c in s["universe"] if c not in circuit]
    keys = [s["means"].key(x) for x in s["samples"]]
    ld = _lds(s, s["clean"], s["means"], keys, [Ablation(), faithfulness.ablation_of(s["universe"]), faithfulness.ablation_of(rest)])
    plan = [("top", -1, 3, tuple(circuit))]
    row = _rows("noising", "mean", plan, (ld[2:] - ld[1]).T, ld[0] - ld[1])[0]
    vals, raw = [], []
    for i, x in enumerate(s["samples"]):
        seq = len(tok(x.clean)["input_ids"])
        z, m = s["means"].lookup(keys[i], seq)
        ld_of = lambda comps: (lambda lg: float(lg[s["ans_r"][i]] - lg[s["ans_c"][i]]))(  # noqa: B023 (used at once)
            _literal(model, tok, x.clean, comps, z[:, -1], m[:, -1]))  # noqa: B023 (used at once)
        full, none, kept = ld_of([]), ld_of(s["universe"]), ld_of(rest)
        if full - none > 0:
            raw.append((kept - none) / (full - none))
            vals.append(min(1.0, max(0.0, raw[-1])))
    assert row["n_used"] == len(vals) > 0
    assert abs(row["recovery"] - sum(vals) / len(vals)) < 1e-4
    assert abs(row["recovery_raw"] - sum(raw) / len(raw)) < 1e-4          # the unclipped mean beside it (v7)
    assert row["over_one"] == sum(r > 1 for r in raw) / len(raw)
    assert row["recovery_raw_lo"] <= row["recovery_raw"] <= row["recovery_raw_hi"]
    assert 0.0 <= row["recovery_lo"] <= row["recovery"] <= row["recovery_hi"] <= 1.0
