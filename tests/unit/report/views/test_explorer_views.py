"""The static explorer's views on hand-built frames (arithmech.report.views.explorer_views): the knockout verdict
rule, and the vega-lite spec of explorer_chart (params bound to a dropdown and a slider, a click selection on
the heatmap, every table embedded)."""

from __future__ import annotations

import json

import pandas as pd

from arithmech.methods import explorer as methods_explorer
from arithmech.report.views import explorer_views


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
                     n_heads, k, n, n, lo, hi))
    return pd.DataFrame(rows, columns=["step", "threshold", "heads", "n_heads", "correct", "n", "problems", "ci_low",
                                       "ci_high"])


def test_knockout_verdict_rule():
    """Protects the rule fixed before the run: holds only when the knockout's interval lies wholly below the
    intact one's; does not hold at or above the intact count; inconclusive in between; no key head, no verdict."""
    s = _steps([(95, 0), (95, 0), (40, 1), (93, 2), (97, 3)])
    t = explorer_views.knockout_table(s, "m")
    assert list(t["lower than intact"]) == ["— (no head past the threshold)", "holds", "inconclusive", "does not hold"]
    assert list(t["top-1 = answer"]) == ["95/100", "40/100", "93/100", "97/100"]
    lines = explorer_views.step_labels(s)
    assert list(lines[lines.step == 1].label)[1].startswith("knocked out: the answer is top-1 on 40/100 prompts (40%, "
                                                             "95% CI")
    assert list(lines[lines.step == 0].label)[0].endswith("no head is past it, nothing is knocked out")
    assert explorer_views.default_step(s) == 1                   # −5% has a key head: the paper's threshold first
    assert explorer_views.default_step(_steps([(95, 0), (95, 0), (95, 0), (30, 2), (20, 3)])) == 2
    assert "holds" in explorer_views.finding(s, "m", [-0.1, -0.05, -0.02, -0.01]) and "40/100" in explorer_views.finding(s, "m", [-0.1, -0.01])
    # a slider step's heads pass a mean threshold, not the key-head rule: never called key heads (not "1 key head
    # at -1%")
    shown = [explorer_views.finding(s, "m", [-0.1, -0.01]), *explorer_views.step_labels(s).label, *explorer_views.knockout_table(s, "m").columns]
    assert not any("key head" in x for x in shown), shown


def _data(steps: pd.DataFrame, prompts=("1 + 2 =", "3 - 1 =", "x" * 200)) -> dict:
    n = len(prompts)
    return {
        "prompts": pd.DataFrame({"id": range(n), "prompt": list(prompts), "op": ["addition"] * n, "template": ["t"] * n,
                                 "answer": ["3", "2", "1"][:n], "answer_token": ["last-digit"] * n}),
        "tokens": pd.DataFrame([(f"{i}:{p}", i, p, "t", "other") for i in range(n) for p in range(4)],
                               columns=["key", "id", "pos", "token", "role"]),
        "top": pd.DataFrame([(i, s, ["3", "4"], [0.9, 0.1], True, 1) for i in range(n) for s in steps.step],
                            columns=["id", "step", "tokens", "probs", "correct", "answer_rank"]),
        "attention": pd.DataFrame([(i, "0.0", 0, [0.1, 0.2, 0.3, 0.4]) for i in range(n)],
                                  columns=["id", "name", "key_at", "scores"]),
        "mlp": pd.DataFrame([(i, ["3", "3"], [0.5, 0.6]) for i in range(n)], columns=["id", "tokens", "cosines"]),
        "steps": steps,
    }


def test_explorer_chart_binds_prompt_slider_and_head_click():
    """Protects the page's interactivity contract: one dropdown over every prompt id, one slider over every step,
    a click selection on the heatmap's head names, and every view reading only embedded data."""
    heads = methods_explorer.head_steps(_effects(), [-0.1, -0.02, -0.01])
    steps = _steps([(3, 0), (1, 1), (0, 2), (0, 3)], n=3)
    data = _data(steps)
    spec = explorer_views.explorer_chart(data, heads, "m").to_dict()
    params = {p["name"]: p for p in spec["params"]}
    assert params["pid"]["bind"]["input"] == "select" and params["pid"]["bind"]["options"] == [0, 1, 2]
    assert max(len(x) for x in params["pid"]["bind"]["labels"]) <= 63          # long prompts shortened
    assert params["ko_step"]["bind"] == {**params["ko_step"]["bind"], "input": "range", "min": 0, "max": 2, "step": 1}
    assert params["ko_step"]["value"] == 1                  # −5%: the paper's threshold, with a key head here
    text = json.dumps(spec)
    assert '"name": "headsel"' in text and '"fields": ["name"]' in text and "vlSelectionTest('headsel_store'" in text
    assert "url" not in json.dumps(spec.get("datasets", {})) and all("values" not in str(k) for k in spec.get("data", {}))
    assert len(spec["datasets"]) >= 6


def _texts(spec: dict) -> list[str]:
    """Every (datasets' label, subtitle) text the chart draws, and the text marks' properties."""
    out = []
    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "mark" and isinstance(v, dict) and v.get("type") == "text":
                    out.append(("mark", v))
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(spec)
    return out


def test_header_lines_are_whole_and_fit_the_chart():
    """Protects the header a reader reads (not "intact: 1…"): no header text mark cuts its text
    (no ``limit``), every line fits :data:`HEADER_CHARS`, each step has the same number of lines (the header keeps
    its height as the slider moves), the wrapped lines together still say the whole thing — all 12 heads past the
    loosest threshold, the knocked-out and the intact counts with their intervals and n."""
    names = [f"{l}.{h}" for l in range(3) for h in range(4)]
    rows = [(-1, None, [], 0, 90, 100)] + [(s, t, names[:k], k, c, 100) for s, (t, k, c) in
                                           enumerate([(-0.1, 0, 90), (-0.05, 1, 80), (-0.01, 12, 31)])]
    from arithmech.core.stats import wilson_interval
    steps = pd.DataFrame([(*r, r[5], *wilson_interval(r[4], r[5])) for r in rows],
                         columns=["step", "threshold", "heads", "n_heads", "correct", "n", "problems", "ci_low", "ci_high"])
    lines = explorer_views.step_labels(steps)
    assert lines.groupby("step").size().nunique() == 1 and lines.groupby("step").size().iloc[0] >= 4
    assert lines.label.str.len().max() <= explorer_views.HEADER_CHARS and not lines.label.str.contains("…").any()
    loose = " ".join(lines[lines.step == 2].label).replace(explorer_views.NBSP, " ")
    assert all(f"head {n}" in loose for n in names) and "12 heads are past it" in loose
    assert "31/100 prompts (31%, 95% CI" in loose and "intact: the answer is top-1 on 90/100 prompts (90%" in loose
    heads = methods_explorer.head_steps(_effects(), [-0.1, -0.05, -0.01])
    spec = explorer_views.explorer_chart(_data(steps.assign(step=steps.step)), heads, "m").to_dict()
    marks = [m for _, m in _texts(spec) if m.get("fontWeight") == 600 or m.get("baseline") == "top"]
    assert marks and not any("limit" in m for m in marks)


def test_the_view_states_its_rules_and_relays_out_on_every_update():
    """Protects what the chart says about itself: its subtitle states when a head is past a threshold
    (the interval rule), where the slider starts and why — −5% where a head passes it, else the strictest step with
    a head, saying that none passes −5% (SmolLM2's −1% was silent) — and the answer-token rule of its prompts; and
    the chart re-lays itself out on every update (``autosize.resize``), without which vega kept the first layout's
    height and cut every attention row after the first when the slider added heads."""
    heads = methods_explorer.head_steps(_effects(), [-0.1, -0.05, -0.01])
    at_paper = _steps([(95, 0), (95, 0), (40, 1), (30, 3)])
    spec = explorer_views.explorer_chart(_data(at_paper), heads, "m").to_dict()
    assert spec["autosize"] == {"type": "pad", "resize": True}
    sub = " ".join(spec["title"]["subtitle"])
    assert "whole 95% interval of its path-patching effect lies below it" in sub
    assert "the slider starts at −5%, the paper's threshold" in sub
    assert "answer token: the prompt carries the answer's leading digits" in sub
    looser = _steps([(95, 0), (95, 0), (95, 0), (60, 2)])          # no head past −10% or −5%: the slider starts at −2%
    sub = " ".join(explorer_views.explorer_chart(_data(looser), heads, "m").to_dict()["title"]["subtitle"])
    assert "the slider starts at −2%: no head is past the paper's −5% on this model" in sub
    none = _steps([(95, 0)] * 5)
    assert "no head is past any threshold" in " ".join(explorer_views.rules_lines(none, "first"))
    assert "the answer's first token" in " ".join(explorer_views.rules_lines(none, "first"))


def test_the_knockout_says_its_means_are_pooled_not_identifys():
    """Protects the Explorer's honesty about its means (its text once said "as in identify" while the
    precomputed views and the widget use position-pooled X_c means, methods.explorer.knockout_means): the chart's
    knockout panel and the page's paragraph name the pooled means and say they are not identify's reference pool;
    only the live explorer, which uses identify's reference-pool means, may say it is identify's."""
    import inspect
    import json
    from pathlib import Path

    from arithmech.methods import explorer
    heads = methods_explorer.head_steps(_effects(), [-0.1, -0.02, -0.01])
    spec = json.dumps(explorer_views.explorer_chart(_data(_steps([(3, 0), (1, 1), (0, 2), (0, 3)], n=3)), heads, "m").to_dict())
    assert "heads past the threshold out (pooled X_c mean, END)" in spec
    assert ".pooled()" in inspect.getsource(explorer.knockout_means)
    page = (Path(__file__).resolve().parents[4] / "book" / "explorer.md").read_text()
    precomputed = page[:page.index("(live-explorer)=")]
    assert "position-pooled means of the counterfactual prompts" in precomputed and "not identify's" in precomputed
    assert "as in identify" not in precomputed and "as in the identify chapter" not in precomputed
