"""The attention control and views (arithmech.methods.attention): masses with and without the first position,
per-token densities and the non-key baseline against literal loops over the attention weights, and the END
rows and roles against a hand-written forward (``factories.manual_forward``).

The reference weights come from the model's own ``output_attentions`` (eager); every mass, count and
percentile is recomputed here position by position, with no code shared with the package."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from factories import fake_roles, manual_forward

from arithmech.methods import attention as At


class NoBos:
    """The same tokenizer, but claiming to have no BOS id: position 0 is then just the prompt's first
    token, as with SmolLM2 (the role of position 0 is read from the ids, never from a model's name)."""
    bos_token_id = None

    def __init__(self, tok):
        self.tok = tok

    def __call__(self, *a, **k):
        return self.tok(*a, **k)

    def __getattr__(self, name):
        return getattr(self.tok, name)


def literal_masses(model, tok, samples, layer: int, head: int, bos: bool) -> dict[str, dict[str, float]]:
    """Per role: mean mass with / without position 0 (renormalised) and pooled token counts, by loops."""
    out = {k: {r: 0.0 for r in At.ALL_ROLES} for k in ("mass", "nofirst", "tokens", "tokens_nofirst")}
    for s in samples:
        ids = tok(s.clean)["input_ids"]
        with torch.no_grad():
            row = model(torch.tensor([ids]), output_attentions=True).attentions[layer][0, head, -1].tolist()
        pos = s.positions
        role_of = []
        for p in range(len(ids)):
            r = "A" if p in pos["A"] else "B" if p in pos["B"] else "operator" if p in pos["operator"] else \
                "bos" if (p == 0 and bos) else "other"
            role_of.append(r)
        rest = sum(row[1:])
        for p, r in enumerate(role_of):
            names = [r] + (["operand"] if r in ("A", "B") else []) + (["first"] if p == 0 else [])
            for name in names:
                out["mass"][name] += row[p] / len(samples)
                out["tokens"][name] += 1 / len(samples)
                if p > 0:
                    out["nofirst"][name] += row[p] / rest / len(samples)
                    out["tokens_nofirst"][name] += 1 / len(samples)
    return out


@pytest.mark.parametrize("bos", [True, False])
def test_masses_with_and_without_first_position_match_a_literal_loop(word_llama_fig8, bos):
    """Protects the control's numbers: for a head of a tiny Llama, every role's mean mass with the first
    position, without it (renormalised over positions 1..), the token counts and the densities equal a
    position-by-position loop over the model's own attention weights — with a BOS token at position 0
    and with position 0 read as the prompt's first token (no BOS, the SmolLM2 case)."""
    model, tok, samples = word_llama_fig8
    tk = tok if bos else NoBos(tok)
    roles = At.attention_by_role(model, tk, samples, layers=[1, 3], batch_size=3)
    got = roles[(roles.task == "all") & (roles.layer == 3) & (roles["head"] == 1)].set_index("role")
    want = literal_masses(model, tok, samples, 3, 1, bos)
    for r in At.ALL_ROLES:
        assert got.loc[r, "mean_score"] == pytest.approx(want["mass"][r], abs=1e-6)
        assert got.loc[r, "tokens"] == pytest.approx(want["tokens"][r], abs=1e-9)
        assert got.loc[r, "tokens_nofirst"] == pytest.approx(want["tokens_nofirst"][r], abs=1e-9)
        if r == "first":
            assert math.isnan(got.loc[r, "mass_nofirst"]) and math.isnan(got.loc[r, "density_nofirst"])
            continue
        assert got.loc[r, "mass_nofirst"] == pytest.approx(want["nofirst"][r], abs=1e-6)
        for col, mass, toks in (("density", "mass", "tokens"), ("density_nofirst", "nofirst", "tokens_nofirst")):
            if want[toks][r] == 0:
                assert math.isnan(got.loc[r, col])
            else:
                assert got.loc[r, col] == pytest.approx(want[mass][r] / want[toks][r], abs=1e-6)
    assert got.loc["bos", "mean_score"] == (pytest.approx(got.loc["first", "mean_score"]) if bos else 0.0)


def test_densities_sum_to_one_over_the_partition(word_llama_fig8):
    """Protects the density bookkeeping: in both views and for every head and task, density × tokens
    summed over the five roles is 1 (the row's mass), the token counts sum to the prompt length (with
    the first position) or one less (without), and operand = A + B."""
    model, tok, samples = word_llama_fig8
    roles = At.attention_by_role(model, tok, samples, layers=[0, 4], batch_size=4)
    part = roles[roles.role.isin(At.ROLES)]
    for dens, toks in (("density", "tokens"), ("density_nofirst", "tokens_nofirst")):
        s = (part[dens].fillna(0) * part[toks]).groupby([part.task, part.layer, part["head"]]).sum()
        np.testing.assert_allclose(s, 1.0, atol=1e-5)
    lengths = np.mean([len(tok(s.clean)["input_ids"]) for s in samples])
    t = part[(part.task == "all") & (part.layer == 0) & (part["head"] == 0)]
    assert t.tokens.sum() == pytest.approx(lengths) and t.tokens_nofirst.sum() == pytest.approx(lengths - 1)
    w = roles[roles.task == "all"].pivot_table(index=["layer", "head"], columns="role", values="mass_nofirst")
    np.testing.assert_allclose(w.operand, w.A + w.B, atol=1e-6)


def test_nonkey_baseline_excludes_key_heads_and_ranks_them():
    """Protects the control's baseline: the median and 5–95 % range are those of the non-key heads
    only (key heads, here extreme, never enter it), the percentile counts non-key heads below the key
    head (ties half), and the verdict follows the stated rule (above the 95th percentile by 2 se)."""
    rng = np.random.default_rng(0)
    values = {(l, h): float(v) for (l, h), v in zip([(l, h) for l in range(5) for h in range(6)], rng.uniform(0, 0.5, 30))}
    keys = [(2, 3), (4, 0), (0, 1)]
    values[(2, 3)], values[(4, 0)] = 0.99, 0.0                  # far above and below every other head
    values[(0, 1)] = sorted(v for k, v in values.items() if k not in keys)[13]   # the 14th of 27 non-key
    b = At.nonkey_baseline(fake_roles(values), keys)
    nonkey = np.array([v for k, v in values.items() if k not in keys])
    m = b[(b.measure == "mass") & (b.view == "without first")].set_index("name")
    assert m.n_nonkey.unique().tolist() == [27] and m.index.tolist() == ["2.3", "4.0", "0.1"]
    np.testing.assert_allclose(m.nonkey_median, np.median(nonkey))
    np.testing.assert_allclose(m.nonkey_p05, np.quantile(nonkey, 0.05))
    np.testing.assert_allclose(m.nonkey_p95, np.quantile(nonkey, 0.95))
    assert m.loc["2.3", "percentile"] == 100 and m.loc["4.0", "percentile"] == 0
    assert m.loc["0.1", "percentile"] == pytest.approx(100 * 13.5 / 27)
    assert m.verdict.tolist() == ["holds", "does not hold", "does not hold"]
    d = b[(b.measure == "density") & (b.view == "with first")].set_index("name")
    np.testing.assert_allclose(d.nonkey_median, np.median(nonkey / 2))
    np.testing.assert_allclose(d.se, 0.005)                                       # se / mean tokens
    lines = At.verdict_lines(b, heads_from="key heads")
    assert "27 non-key heads" in lines[0] and lines[-1].startswith("1 of 3 key heads hold, 2 do not")
    one = b.copy()
    one.loc[(one.view == "without first") & (one.name == "4.0"), "verdict"] = "holds"
    assert At.verdict_lines(one, heads_from="key heads")[-1].startswith("2 of 3 key heads hold, 1 does not,")
    # heads that did not pass the key-head rule are never called key heads (not "3 of 10 key heads")
    top = At.verdict_lines(b, heads_from="top 10 by effect rank (no key head)")
    assert not any("key head" in x.replace("(no key head)", "") for x in top), top
    assert top[-1].startswith("1 of 3 analysed heads (top 10 by effect rank (no key head)) hold")
    assert not any("key head" in x for x in At.verdict_lines(b))          # unknown source: not key heads either


def test_rule_verdict_is_inconclusive_within_two_se_or_with_few_heads():
    """Protects the rule's edges: within two standard errors of the 95th percentile, with fewer than
    20 non-key heads or with no value, the verdict is inconclusive, never holds / does not hold."""
    assert At.rule_verdict(0.50, 0.01, 0.47, 100) == "holds"
    assert At.rule_verdict(0.48, 0.01, 0.47, 100) == "inconclusive"
    assert At.rule_verdict(0.44, 0.01, 0.47, 100) == "does not hold"
    assert At.rule_verdict(0.90, 0.01, 0.47, 19) == "inconclusive"
    assert At.rule_verdict(float("nan"), 0.01, 0.47, 100) == "inconclusive"


def test_manual_forward_matches_model(word_llama_fig8):
    """Protects the reference itself: the hand-written forward reproduces the model's logits."""
    model, tok, samples = word_llama_fig8
    ids = tok(samples[0].clean)["input_ids"]
    torch.testing.assert_close(manual_forward(model, ids)[3], model(torch.tensor([ids])).logits[0],
                               rtol=1e-4, atol=1e-5)


def test_end_rows_sum_to_one_and_match_manual(word_llama_fig8):
    """Protects: END rows come from the right module and head order (GQA) and are softmax rows."""
    model, tok, samples = word_llama_fig8
    ids = tok(samples[1].clean)["input_ids"]
    rows = At.end_rows(model, torch.tensor([ids]), range(5))
    probs = manual_forward(model, ids)[0]
    for l in range(5):
        assert rows[l].shape == (1, 4, len(ids))
        torch.testing.assert_close(rows[l].sum(-1), torch.ones(1, 4))
        torch.testing.assert_close(rows[l][0], probs[l][:, -1], rtol=1e-4, atol=1e-6)


def test_attention_by_role_and_labels(word_llama_fig8):
    """Protects: per-sample role masses averaged over samples equal a direct recomputation, the five
    roles sum to 1 per head, the operand/operator/other label follows the largest group, and the heads
    shown in Fig. 7 / 16 are the key heads of that kind, else the model's top heads of that kind."""
    model, tok, samples = word_llama_fig8
    roles = At.attention_by_role(model, tok, samples, layers=[1, 3], batch_size=3)
    allr = roles[roles.task == "all"]
    part = allr[allr.role.isin(At.ROLES)]                  # the five roles; operand and first overlap them
    np.testing.assert_allclose(part.groupby(["layer", "head"]).mean_score.sum(), 1.0, atol=1e-5)
    assert set(roles.task) == {"all"} | {s.op for s in samples}
    assert (allr.kv_head == allr["head"] // 2).all()
    want = torch.zeros(5)
    for s in samples:
        ids = tok(s.clean)["input_ids"]
        row = manual_forward(model, ids)[0][3][2, -1]
        lab = At.role_labels(s.positions, len(ids))
        want += torch.tensor([sum(float(row[p]) for p, r in enumerate(lab) if r == role) for role in At.ROLES])
    got = allr[(allr.layer == 3) & (allr["head"] == 2)].set_index("role").mean_score[list(At.ROLES)]
    np.testing.assert_allclose(got.to_numpy(), (want / len(samples)).numpy(), rtol=1e-4, atol=1e-6)
    fake = pd.DataFrame([(0, h, r, v, 0, "all", 1) for h, vals in enumerate([(.3, .3, .1, .2, .1), (.1, .1, .5, .2, .1),
                                                                              (.1, .0, .1, .7, .1)])
                         for r, v in zip(At.ROLES, vals)], columns=list(roles.columns[:7]))
    lab = At.label_heads(fake, [(0, 2), (0, 0), (0, 1)])
    assert lab.name.tolist() == ["0.2", "0.0", "0.1"] and lab.label.tolist() == ["other", "operand", "operator"]
    np.testing.assert_allclose(lab.operand, [0.1, 0.6, 0.2])
    assert At.heads_of_kind(fake, [(0, 1)], "operator") == [(0, 1)]                  # a key head of that kind
    assert At.heads_of_kind(fake, [(0, 2)], "operand", k=2) == [(0, 0), (0, 1)]      # none: the model's top-k
