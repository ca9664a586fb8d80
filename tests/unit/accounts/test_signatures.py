"""The signature table (arithmech/accounts/signatures.py): removal summaries and one row per criterion."""
from __future__ import annotations

import torch

from arithmech.accounts import rules, signatures
from tests.unit.accounts.test_rules import numbers


def test_removal_numbers_pair_each_prompt_with_the_mean_random_drop():
    """Protects the F3 summary: drops are clean minus edited LD, the paired difference is the periodic drop minus the
    mean random drop per prompt, and the random draws' percentiles are taken over the draws' mean drops."""
    base = torch.tensor([5.0, 5.0, 5.0, 5.0])
    r = {"periodic": torch.tensor([1.0, 1.0, 2.0, 2.0]), "random": torch.tensor([[4.0] * 4, [3.0] * 4]),
         "full": torch.zeros(4)}
    out = signatures.removal_numbers(base, r, [(1, 1), (1, 2), (2, 1), (2, 2)], 200, 0)
    assert out["periodic_drop"] == 3.5 and out["full_drop"] == 5.0 and out["random_median"] == 1.5
    assert out["diff"][0] == 2.0 and out["diff"][1] <= 2.0 <= out["diff"][2] and out["n_random"] == 2


def test_rows_list_every_criterion_with_its_verdict_and_evidence():
    """Protects the table: one row per criterion of every account, in the rules' order, carrying the decided verdict
    and a line of evidence; the text form names every account's verdict."""
    n = numbers(heads_studied=["20.8"], heads_from="top heads", flagged_mlps=[20], top_k=24, parity=dict(
        r_pairs=0.9, r_neurons=0.9, sign_agreement=0.9, n_prompts=8, n_neurons=4), assoc_prompts=10,
        periodic_rate=0.2, periodic_null_rate=0.0, spectrum_attn=0.6, spectrum_isotropic=5 / 9)
    n["probes"][0].update(x="a", T=2, layer=3)
    for k in ("removal_mlp", "removal_attn"):
        n[k]["n_random"] = 5
    sig = {"model": "m", "rules_sha256": rules.rules_sha256(), "numbers": n, "verdicts": rules.decide(n)}
    rows = signatures.rows(sig)
    assert [r["criterion"] for r in rows] == [c.id for rule in rules.RULES for c in rule.criteria]
    assert all(r["evidence"] for r in rows) and rows[0]["verdict"] == rules.PASS
    assert "H (heads move operands, MLPs compute): pass" in signatures.table_text(sig)
