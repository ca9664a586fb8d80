"""The analyze claims' deciders (arithmech.analyze.claims): the operand and operator rules decided on the heads that
carry the effect, each on its own, on synthetic results folders whose numbers the old deciders read otherwise."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arithmech.analyze.claims import other_heads_p95
from arithmech.claims import decide
from arithmech.claims.evidence import Context
from arithmech.core import results


def _roles(special: dict) -> pd.DataFrame:
    """40 heads (4 layers × 10); every head's operand mass 0.10 + 0.005·i (i = its index, so the others' 95th
    percentile is known) and operator mass 0.05, unless ``special[(l, h)] = (operand, operator)``."""
    rows = []
    for l in range(4):
        for h in range(10):
            i = 10 * l + h
            op, opr = special.get((l, h), (0.10 + 0.005 * i, 0.05))
            for role, m in (("operand", op), ("operator", opr)):
                rows.append({"layer": l, "head": h, "role": role, "mean_score": m, "se": 0.001, "task": "all",
                             "n": 500, "mass_nofirst": m, "se_nofirst": 0.001, "tokens": 2.0, "tokens_nofirst": 2.0,
                             "density": m / 2, "density_nofirst": m / 2, "kv_head": 0})
    return pd.DataFrame(rows)


def _specific(lo=1.0, hi=3.0, clusters=25, value=2):
    """analyze.json's ``specific_stages`` with the inflections' difference ``value [lo, hi]`` over ``clusters``."""
    k = {"knots": [1, 2, 3], "lo": [1.0, 1.0, 2.0], "hi": [2.0, 3.0, 3.0]}
    return {"operands": k, "answer": k, "difference": {"value": value, "lo": lo, "hi": hi}, "clusters": clusters,
            "n_boot": 1000, "level": 0.95}


def _write(folder, roles, share_heads, baseline_verdict="does not hold", operations=None, control=None,
           specific=None):
    head = lambda l, h: {"layer": l, "head": h, "name": f"{l}.{h}"}
    kh = {"task": "all", "heads": [], "threshold": -0.05, "by_share": {"heads": [head(*x) for x in share_heads]},
          **({"control": control} if control else {})}
    eff = pd.DataFrame([{"task": "all", "layer": l, "head": str(h), "effect": 0.0, "effect_lo": -0.01,
                         "effect_hi": 0.01, "logit_diff": 0.0, "n": 500} for l in range(4) for h in range(10)])
    base = pd.DataFrame([{"name": "0.0", "layer": 0, "head": 0, "role": r, "measure": "mass", "view": "without first",
                          "value": 0.1, "se": 0.001, "n": 500, "nonkey_median": 0.1, "nonkey_p05": 0.1,
                          "nonkey_p95": 0.2, "percentile": 50.0, "n_nonkey": 39, "verdict": baseline_verdict}
                         for r in ("operand", "operator")])
    files = {"key_heads.json": kh, "effects.csv": eff, "prompts.jsonl": [{"clean": "1 + 2 =", "corrupt": "1 @ 2 =",
             "answer": "3", "template": "t"}]}
    results.write_step(folder, "identify", files, {"parameters": {}})
    results.write_step(folder, "analyze", {"attention_roles.csv": roles, "attention_baseline.csv": base,
                                     "analyze.json": {"key_heads": [], "stages": {"operands": [1, 2, 3], "answer": [1, 3, 3]},
                                                      "specific_stages": _specific() if specific is None else specific,
                                                      "heads_from": "top 10 by effect rank (no key head)",
                                                      **({"operations": operations} if operations else {})}},
                 {"parameters": {}})
    return folder


def test_attention_roles_are_decided_on_the_share_heads_where_the_paper_finds_none(tmp_path):
    """Protects the SmolLM2 case (science review §2.3): no head passes the paper's rule, two pass the share rule
    and both read the operands far above the other 38 heads: the claim holds, said to be on the share rule's
    heads (version 3 printed "no key head to test": inconclusive). Where the share heads read nothing special
    it does not hold."""
    yes = _write(tmp_path / "a", _roles({(3, 0): (0.9, 0.05), (3, 1): (0.05, 0.8)}), [(3, 0), (3, 1)])
    row = decide.claims(Context(yes), ["attention-roles"]).iloc[0]
    assert row.holds is True and "LD-ratio rule's key heads" in row.here and "1 of 2 heads read the operands" in row.here
    no = _write(tmp_path / "b", _roles({(3, 0): (0.01, 0.01), (3, 1): (0.01, 0.01)}), [(3, 0), (3, 1)])
    assert decide.claims(Context(no), ["attention-roles"]).holds.iloc[0] is False


def test_operands_and_operator_are_two_claims_each_decided_on_its_own(tmp_path):
    """Protects the split of the merged rule (attention-roles version 8, attention-reads-operator version 1): heads
    that read only the operands make the operand claim hold and the operator claim not hold, said as "0 of 3
    heads read the operator" (version 7 of the merged rule held, and the missing operator heads went unsaid); heads
    that read only the operator, the other way round; half the heads on the operands is enough for the operand
    claim, one head on the operator for the operator claim."""
    ids = ["attention-roles", "attention-reads-operator"]
    heads = [(3, 0), (3, 1), (3, 2)]
    operands = _write(tmp_path / "a", _roles({h: (0.9, 0.01) for h in heads}), heads)
    rows = decide.claims(Context(operands), ids).set_index("id")
    assert rows.loc["attention-roles", "holds"] is True and rows.loc["attention-reads-operator", "holds"] is False
    assert "3 of 3 heads read the operands" in rows.loc["attention-roles", "here"]
    assert rows.loc["attention-reads-operator", "here"].startswith(
        "on the LD-ratio rule's key heads (key_heads.json's by_share; the paper's rule finds none): 0 of 3 heads read "
        "the operator more than the 37 other heads (none); 0 inconclusive; other heads' 95th percentile 0.05 "
        "[0.05, 0.05]; n = 500 prompts of every operation")
    operator = _write(tmp_path / "b", _roles({h: (0.01, 0.8) for h in heads}), heads)
    rows = decide.claims(Context(operator), ids).set_index("id")
    assert rows.loc["attention-roles", "holds"] is False and rows.loc["attention-reads-operator", "holds"] is True
    split = _write(tmp_path / "c", _roles({(3, 0): (0.9, 0.01), (3, 1): (0.01, 0.8), (3, 2): (0.01, 0.01),
                                           (3, 3): (0.9, 0.01)}), [(3, 0), (3, 1), (3, 2), (3, 3)])
    rows = decide.claims(Context(split), ids).set_index("id")                  # 2 of 4 on the operands, 1 of 4 on the operator
    assert rows.loc["attention-roles", "holds"] is True and rows.loc["attention-reads-operator", "holds"] is True
    assert "1 of 4 heads read the operator" in rows.loc["attention-reads-operator", "here"]


def test_an_operator_head_inside_the_others_interval_leaves_the_operator_claim_open(tmp_path):
    """Protects the operator rule's middle outcome: no head reads the operator, but one lies inside the interval of
    the other heads' 95th percentile (neither above its upper end nor below its lower end by two standard
    errors): inconclusive, not "does not hold"."""
    # the other heads' operator masses spread out (0.02 + 0.002 i), so their 95th percentile has a wide interval
    spread = {(l, h): (0.10 + 0.005 * (10 * l + h), 0.02 + 0.002 * (10 * l + h)) for l in range(4) for h in range(10)}
    _, lo, hi = other_heads_p95(np.array([0.02 + 0.002 * i for i in range(39)]))
    assert hi - lo > 0.01                                          # room for a head 2 SE (0.002) inside it
    spread[(3, 9)] = (0.01, (lo + hi) / 2)
    row = decide.claims(Context(_write(tmp_path / "a", _roles(spread), [(3, 9)])), ["attention-reads-operator"]).iloc[0]
    assert row.holds is None and "0 of 1 heads read the operator" in row.here and "1 inconclusive" in row.here
    spread[(3, 9)] = (0.01, 0.001)
    row = decide.claims(Context(_write(tmp_path / "b", _roles(spread), [(3, 9)])), ["attention-reads-operator"]).iloc[0]
    assert row.holds is False


def test_a_head_inside_the_interval_of_the_others_percentile_is_undecided(tmp_path):
    """Protects the interval on the other heads' 95th percentile: a head 2 SE above the point percentile but
    below the upper end of its interval neither reads nor fails to (version 3 read it against the point); the
    interval matches a brute-force bootstrap over the heads."""
    others = np.array([0.10 + 0.005 * i for i in range(40) if i != 39])
    p95, lo, hi = other_heads_p95(others)
    rng = np.random.default_rng(0)
    boot = np.percentile(rng.choice(others, size=(2000, len(others)), replace=True), 95, axis=1)
    assert (lo, hi) == (np.percentile(boot, 2.5), np.percentile(boot, 97.5)) and lo <= p95 < hi
    mid = p95 + 0.003 if p95 + 0.003 < hi - 0.002 else None
    assert mid is not None
    folder = _write(tmp_path / "a", _roles({(3, 9): (mid, 0.01)}), [(3, 9)])
    row = decide.claims(Context(folder), ["attention-roles"]).iloc[0]
    assert row.holds is None and "0 of 1 heads" in row.here and "1 inconclusive" in row.here


def test_analyze_on_operations_the_control_no_longer_pools_decides_nothing(tmp_path):
    """Protects attention-roles version 7 (and 8, attention-reads-operator 1) and stages version 4 (the control's
    version 5): analyze ran on
    addition and subtraction, the operations that passed the control then; where the control now pools addition
    only (subtraction's floor became uncertain), both claims are inconclusive and say to re-run analyze (version 6 /
    3: decided on the recorded operations). With the same operations as the control pools they are decided."""
    special = {(3, 0): (0.9, 0.05), (3, 1): (0.05, 0.8)}
    ctl = {"floors": {}, "failed": {"subtraction": "uncertain"}, "pooled": ["addition"]}
    stale = _write(tmp_path / "a", _roles(special), [(3, 0), (3, 1)], operations=["addition", "subtraction"],
                   control=ctl)
    rows = decide.claims(Context(stale), ["attention-roles", "attention-reads-operator", "stages"]).set_index("id")
    for cid in ("attention-roles", "attention-reads-operator", "stages"):
        assert rows.loc[cid, "holds"] is None and "re-run analyze" in rows.loc[cid, "here"], rows.loc[cid, "here"]
    same = _write(tmp_path / "b", _roles(special), [(3, 0), (3, 1)], operations=["addition"], control=ctl)
    rows = decide.claims(Context(same), ["attention-roles", "attention-reads-operator", "stages"]).set_index("id")
    assert rows.loc["attention-roles", "holds"] is True and rows.loc["stages", "holds"] is True
    assert rows.loc["attention-reads-operator", "holds"] is True


@pytest.mark.parametrize(("specific", "holds", "says"), [
    (_specific(lo=0.0, hi=2.0, value=1), True, "+1 layers [+0, +2] (95% over 25 problem clusters"),
    (_specific(lo=-3.0, hi=-1.0, value=-2), False, "-2 layers [-3, -1]"),
    (_specific(lo=-1.0, hi=2.0, value=0), None, "+0 layers [-1, +2]"),
    (_specific(clusters=19), None, "fewer than 20 problem clusters"),
    ({}, None, "no answer-specific stages (a run before rule version 5): re-run analyze"),
])
def test_stages_are_decided_on_the_interval_of_the_answer_specific_inflections(tmp_path, specific, holds, says):
    """Protects stages version 5: the answer-specific inflection minus the operand-specific one, decided on its 95%
    interval over problem clusters: at or above 0 holds (0 is "at"), wholly below 0 does not hold, straddling 0 is
    inconclusive, as are fewer than identify's 20 problem clusters and a file made before the curves existed."""
    f = _write(tmp_path, _roles({}), [(3, 0)], specific=specific)
    row = decide.claims(Context(f), ["stages"]).set_index("id").loc["stages"]
    assert row["holds"] is holds and says in row["here"], row["here"]
