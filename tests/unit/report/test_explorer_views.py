"""The static explorer's views on hand-built frames (arithmech.report.explorer_views): the knockout verdict
rule, and the vega-lite spec of explorer_chart (params bound to a dropdown and a slider, a click selection on
the heatmap, every table embedded)."""

from __future__ import annotations

import json

import pandas as pd

from arithmech.methods import explorer as X
from arithmech.report import explorer_views as V


def _effects() -> pd.DataFrame:
    rows = [("all", 0, "0", -0.30), ("all", 0, "1", -0.03), ("all", 1, "0", -0.012), ("all", 1, "1", 0.02),
            ("all", 0, "mlp", -0.5), ("addition", 0, "0", -0.9)]
    df = pd.DataFrame(rows, columns=["task", "layer", "head", "effect"])
    return df.assign(effect_hi=df.effect + 0.001)       # the interval's upper end, as effects.csv v2 has it


def _steps(counts: list[tuple[int, int]], n: int = 100) -> pd.DataFrame:
    from arithmech.core.stats import wilson_interval
    rows = []
    for s, (k, n_heads) in enumerate(counts, start=-1):
        lo, hi = wilson_interval(k, n)
        rows.append((s, None if s < 0 else [-0.1, -0.05, -0.02, -0.01][s], [f"0.{i}" for i in range(n_heads)],
                     n_heads, k, n, lo, hi))
    return pd.DataFrame(rows, columns=["step", "threshold", "heads", "n_heads", "correct", "n", "ci_low", "ci_high"])


def test_knockout_verdict_rule():
    """Protects the rule fixed before the run: holds only when the knockout's interval lies wholly below the
    intact one's; does not hold at or above the intact count; inconclusive in between; no key head, no verdict."""
    s = _steps([(95, 0), (95, 0), (40, 1), (93, 2), (97, 3)])
    t = V.knockout_table(s, "m")
    assert list(t["lower than intact"]) == ["— (no head past the threshold)", "holds", "inconclusive", "does not hold"]
    assert list(t["top-1 = answer"]) == ["95/100", "40/100", "93/100", "97/100"]
    lines = V.step_labels(s)
    assert list(lines[lines.step == 1].label)[1].startswith("knocked out: top-1 = answer on 40/100 prompts (40%, 95% CI")
    assert list(lines[lines.step == 0].label)[0].endswith("no head passes it: nothing is knocked out")
    assert V.default_step(s) == 1                   # −5% has a key head: the paper's threshold first
    assert V.default_step(_steps([(95, 0), (95, 0), (95, 0), (30, 2), (20, 3)])) == 2
    assert "holds" in V.finding(s, "m", [-0.1, -0.05, -0.02, -0.01]) and "40/100" in V.finding(s, "m", [-0.1, -0.01])
    # a slider step's heads pass a mean threshold, not the key-head rule: never called key heads (#26: "1 key head
    # at -1%")
    shown = [V.finding(s, "m", [-0.1, -0.01]), *V.step_labels(s).label, *V.knockout_table(s, "m").columns]
    assert not any("key head" in x for x in shown), shown


def test_explorer_chart_binds_prompt_slider_and_head_click():
    """Protects the page's interactivity contract: one dropdown over every prompt id, one slider over every step,
    a click selection on the heatmap's head names, and every view reading only embedded data."""
    heads = X.head_steps(_effects(), [-0.1, -0.02, -0.01])
    steps = _steps([(3, 0), (1, 1), (0, 2), (0, 3)], n=3)
    data = {
        "prompts": pd.DataFrame({"id": [0, 1, 2], "prompt": ["1 + 2 =", "3 - 1 =", "x" * 200],
                                 "op": ["addition"] * 3, "template": ["t"] * 3, "answer": ["3", "2", "1"]}),
        "tokens": pd.DataFrame([(f"{i}:{p}", i, p, "t", "other") for i in range(3) for p in range(4)],
                               columns=["key", "id", "pos", "token", "role"]),
        "top": pd.DataFrame([(i, s, ["3", "4"], [0.9, 0.1], True, 1) for i in range(3) for s in range(-1, 3)],
                            columns=["id", "step", "tokens", "probs", "correct", "answer_rank"]),
        "attention": pd.DataFrame([(i, "0.0", 0, [0.1, 0.2, 0.3, 0.4]) for i in range(3)],
                                  columns=["id", "name", "key_at", "scores"]),
        "mlp": pd.DataFrame([(i, ["3", "3"], [0.5, 0.6]) for i in range(3)], columns=["id", "tokens", "cosines"]),
        "steps": steps,
    }
    spec = V.explorer_chart(data, heads, "m").to_dict()
    params = {p["name"]: p for p in spec["params"]}
    assert params["pid"]["bind"]["input"] == "select" and params["pid"]["bind"]["options"] == [0, 1, 2]
    assert max(len(x) for x in params["pid"]["bind"]["labels"]) <= 63          # long prompts shortened
    assert params["ko_step"]["bind"] == {**params["ko_step"]["bind"], "input": "range", "min": 0, "max": 2, "step": 1}
    assert params["ko_step"]["value"] == 1                  # −5%: the paper's threshold, with a key head here
    text = json.dumps(spec)
    assert '"name": "headsel"' in text and '"fields": ["name"]' in text and "vlSelectionTest('headsel_store'" in text
    assert "url" not in json.dumps(spec.get("datasets", {})) and all("values" not in str(k) for k in spec.get("data", {}))
    assert len(spec["datasets"]) >= 6
