"""Unit tests of ``arithmech/report/charts/colours.py``: one colour per meaning across the book (red and green once
meant operand A, full SFT, EAP and "key" on different pages).

Every chart builder of ``arithmech/report`` is built on a small synthetic frame and its Vega-Lite spec is read:
each colour it draws must come from the roles that chart encodes (plus ``ink``), each continuous scheme from
:data:`~arithmech.report.charts.colours.SCHEMES`, and no chart may carry a colour literal outside the table.
"""
from __future__ import annotations

import colorsys
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from arithmech.report.charts import colours

HEX = re.compile(r"^#[0-9a-fA-F]{6}$")
ANY_HEX = re.compile(r"#[0-9a-fA-F]{3,8}\b")
NAMED = {"red", "green", "blue", "white", "black", "grey", "gray", "orange", "purple", "steelblue", "darkred",
         "lightgrey", "lightgray", "crimson", "firebrick", "seagreen", "forestgreen", "teal", "navy"}
COLOUR_KEYS = {"color", "fill", "stroke", "range", "scheme", "value"}


def _hls(hex_: str) -> tuple[float, float, float]:
    r, g, b = (int(hex_[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, l, s = colorsys.rgb_to_hls(r, g, b)
    return 360 * h, l, s


def is_red(hex_: str) -> bool:
    h, l, s = _hls(hex_)
    return (h < 15 or h > 345) and s > 0.45 and 0.2 < l < 0.7


def is_green(hex_: str) -> bool:
    h, l, s = _hls(hex_)
    return 75 < h < 160 and s > 0.35 and 0.15 < l < 0.8


def test_the_table_gives_each_colour_one_meaning():
    """Protects the table itself: colours are hex; a colour in two roles is one of the declared shared meanings
    (red: key, grey: random control); the only red is "key" and the only green is "the answer"."""
    where: dict[str, set[str]] = {}
    for role, values in colours.ROLES.items():
        for value, c in values.items():
            assert HEX.match(c), (role, value, c)
            where.setdefault(c.lower(), set()).add(role)
    for c, roles in where.items():
        assert len(roles) == 1 or c in {k.lower() for k in colours.SHARED}, (c, roles)
    reds = {(r, v) for r, vs in colours.ROLES.items() for v, c in vs.items() if is_red(c)}
    greens = {(r, v) for r, vs in colours.ROLES.items() for v, c in vs.items() if is_green(c)}
    assert reds == {("selection", "key"), ("arm", "precise-key")}, reds
    assert greens == {("answer", "answer")}, greens
    assert colours.SCHEMES["effect"] == "redblue"            # red = negative effect = the key side, as the red above


def test_scale_and_colour_name_what_is_missing():
    """Protects the helpers: labels map to the role's colours in order, and an unknown value is a KeyError naming
    the role's values (a chart cannot silently fall back to a default colour)."""
    s = colours.scale("selection", {"effect rank": "key", "random": "control"}).to_dict()
    assert s == {"domain": ["effect rank", "random"], "range": [colours.KEY, colours.CONTROL]}
    with pytest.raises(KeyError, match="precise-key"):
        colours.colour("arm", "precise")


# ------------------------------------------------------------------------------------------ the charts
def _walk(node, key=None, out=None):
    """Every (key, string) of a spec: colours sit under colour keys or in a scale's ``range`` list."""
    out = [] if out is None else out
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("datasets", "data", "tooltip", "title", "text", "labelExpr", "expr", "filter", "calculate"):
                continue
            _walk(v, k, out)
    elif isinstance(node, list):
        for v in node:
            _walk(v, key, out)
    elif isinstance(node, str):
        out.append((key, node))
    return out


def used(spec: dict) -> tuple[set[str], set[str]]:
    """``(colours, schemes)`` a spec draws with, its theme ``config`` apart."""
    spec = {k: v for k, v in spec.items() if k != "config"}
    cols, schemes = set(), set()
    for key, s in _walk(spec):
        if key == "scheme":
            schemes.add(s)
        elif ANY_HEX.fullmatch(s.strip()):
            cols.add(s.strip().lower())
        elif key in COLOUR_KEYS and s.lower() in NAMED:
            cols.add(s.lower())
    return cols, schemes


def allowed(*roles: str) -> set[str]:
    return {c.lower() for r in (*roles, "ink") for c in colours.ROLES[r].values()}


def _knockout():
    rows = [dict(task="all", positions="end", kind="head", order="effect-rank", seed=-1, k=k, accuracy=0.9 - 0.1 * k,
                 ci_low=0.1, ci_high=0.9, n=50) for k in range(4)]
    rows += [dict(task="all", positions="end", kind="head", order="random-rank", seed=s, k=k, accuracy=0.9,
                  ci_low=0.8, ci_high=1.0, n=50) for s in range(3) for k in (1, 2)]
    rows += [dict(task="all", positions="end", kind="sanity", order=o, seed=-1, k=k, accuracy=a, ci_low=a, ci_high=a,
                  n=50) for o, k, a in (("all-heads-out", 4, 0.2), ("majority-floor", 0, 0.1))]
    return pd.DataFrame(rows)


def _effects():
    return pd.DataFrame([dict(task="all", layer=l, head=h, effect=-0.1 * l, logit_diff=0.0, n=8)
                         for l in range(2) for h in ("0", "1", "mlp")])


def _roles():
    return pd.DataFrame([dict(task=t, layer=1, head=0, role=r, mean_score=0.2, kv_head=0, n=8)
                         for t in ("addition", "subtraction") for r in colours.ROLES["operand"]])


def _mlp():
    return pd.DataFrame([dict(layer=l, quantity=q, value=0.1 * l, sem=0.01, std=0.02)
                         for l in range(3) for q in ("in_A", "in_B", "diff_C", "diff_other")])


def _arms():
    return pd.DataFrame([dict(arm=a, measure=m, delta=0.1, delta_ci_low=0.0, delta_ci_high=0.2, runs=2)
                         for a in ("base", "full", "precise-key", "precise-random") for m in ("two_digit", "generic")])


def _tradeoff():
    return pd.DataFrame([dict(arm=a, seed=0, lr=1e-4, chosen=True, math_gain=0.1, general_change=-0.1,
                              math="two-digit", general="facts") for a in ("full", "precise-key", "precise-random")])


def _faith():
    rows = [dict(task="all", method="noising", ablation="mean", order="top", draw=0, n=n, share=0.5, lo=0.4, hi=0.6,
                 components="0.0", n_prompts=16) for n in (1, 2)]
    rows += [dict(task="all", method="noising", ablation="mean", order="random", draw=d, n=n, share=0.1, lo=0.0,
                  hi=0.2, components="1.1", n_prompts=16) for n in (1, 2) for d in range(3)]
    f = pd.DataFrame(rows).assign(positions="end", level=0.995, over_one=0.0, n_used=16, n_used_clusters=8)
    return f.assign(**{f"{m}{e}": f[c] for m in ("recovery", "recovery_raw") for e, c in (("", "share"), ("_lo", "lo"),
                                                                                       ("_hi", "hi"))})


def _baseline():
    return pd.DataFrame([dict(name=nm, role=r, measure=m, view=v, value=0.3, se=0.01, nonkey_median=0.1,
                              nonkey_p05=0.0, nonkey_p95=0.2, percentile=99, n_nonkey=40, verdict="holds", n=16)
                         for nm in ("0.0", "1.1") for r in ("A", "B") for m in ("mass", "density")
                         for v in ("with first", "without first")])


def _stability():
    return pd.DataFrame([dict(kind="operator", name=f"{l}.{h}", layer=l, head=h, effect=-0.1 * h, effect_lo=-0.2,
                              effect_hi=-0.01 * h, n=16, key_runs=1, runs=2, top_runs=2) for l in range(2) for h in range(3)])


def _jaccard():
    return pd.DataFrame([dict(comparison=c, kind="operator", seed=0, ref_seed=1, set=s, size=z, ref_size=64, jaccard=0.5,
                              n_a=2, n_b=2, n_shared=1, prompts_a=z) for c in ("size_vs_largest", "between_seeds")
                         for s in ("key", "top5") for z in (16, 32)])


def _circuit():
    from arithmech.circuits import graph as circuit
    eap = pd.DataFrame({"layer": [0, 0, 1, 1], "head": ["0", "mlp", "0", "mlp"], "exact": [-0.01, -0.2, -0.05, 0.0]})
    up = pd.DataFrame([{"receiver": "1.0", "position": "END", "path": p, "sender": s, "sender_layer": 0, "effect": -0.01,
                        "effect_se": 0.001, "n": 64} for s in ("0.0", "MLP 0") for p in ("q", "k", "v")])
    return circuit.graph(eap, up, 2)


def _beyond_run():
    eap = pd.DataFrame({"layer": [0, 1], "head": ["0", "mlp"], "exact": [-0.1, 0.0], "exact_se": [0.01, 0.01],
                        "eap": [-0.09, 0.01], "eap_ig": [-0.1, 0.0]})
    from arithmech.circuits import beyond
    return beyond.Result(config=beyond.Config(), model="m", summary={"n_samples": 8}, eap=eap, upstream=pd.DataFrame(),
                         n_layers=2)


def _explorer():
    from arithmech.core.stats import wilson_interval
    from arithmech.methods import explorer
    from arithmech.report.views import explorer_views
    eff = pd.DataFrame([("all", 0, "0", -0.30), ("all", 0, "1", -0.03), ("all", 1, "0", -0.012), ("all", 1, "1", 0.02)],
                       columns=["task", "layer", "head", "effect"]).assign(effect_hi=lambda d: d.effect + 0.001)
    heads = explorer.head_steps(eff, [-0.1, -0.02])
    steps = pd.DataFrame([(s, None if s < 0 else [-0.1, -0.02][s], [f"0.{i}" for i in range(n)], n, k, 3, 3,
                           *wilson_interval(k, 3)) for s, (k, n) in enumerate([(3, 0), (1, 1), (0, 2)], start=-1)],
                         columns=["step", "threshold", "heads", "n_heads", "correct", "n", "problems", "ci_low", "ci_high"])
    data = {"prompts": pd.DataFrame({"id": [0, 1], "prompt": ["1 + 2 =", "3 - 1 ="], "op": ["addition"] * 2,
                                     "template": ["t"] * 2, "answer": ["3", "2"], "answer_token": ["last-digit"] * 2}),
            "tokens": pd.DataFrame([(f"{i}:{p}", i, p, "t", "other") for i in range(2) for p in range(4)],
                                   columns=["key", "id", "pos", "token", "role"]),
            "top": pd.DataFrame([(i, s, ["3", "4"], [0.9, 0.1], True, 1) for i in range(2) for s in range(-1, 2)],
                                columns=["id", "step", "tokens", "probs", "correct", "answer_rank"]),
            "attention": pd.DataFrame([(i, "0.0", 0, [0.1, 0.2, 0.3, 0.4]) for i in range(2)],
                                      columns=["id", "name", "key_at", "scores"]),
            "mlp": pd.DataFrame([(i, ["3", "3"], [0.5, 0.6]) for i in range(2)], columns=["id", "tokens", "cosines"]),
            "steps": steps}
    return explorer_views.explorer_chart(data, heads, "m")


def _transfer():
    rows = [dict(case=0, prompt="2 + 2 =", expected="4", status="ok", when=w, rank=r, token=str(3 + r), prob=0.5 / r)
            for w in ("before", "after") for r in range(1, 6)]
    return pd.DataFrame(rows + [dict(case=1, prompt="Danny has 12", expected="6", status="skipped: unknown to the "
                                     "tokenizer: 'Danny'", when=None, rank=None, token=None, prob=None)])


def _curve_chart(monkeypatch):
    curve = {"points": [{"step": s, "val_math": 0.1 * s, "val_nll": 1.0, "val_generic": 0.9} for s in (0, 10, 20)],
             "knee": 10, "lr": 1e-4, "batch_size": 8}
    from arithmech.table1 import charts
    from arithmech.table1.result import Table1Result

    return charts.curve_chart(Table1Result({}, {}, None, {}, curve, Path("unused")))


def _charts(monkeypatch):
    """``(name, chart, roles it may use, schemes it may use)`` for every chart builder of arithmech.report."""
    from arithmech.circuits import charts as faithfulness_chart
    from arithmech.circuits import graph as circuit
    from arithmech.circuits import views as beyond_views
    from arithmech.identify import charts as knockout_chart
    from arithmech.identify import stability_charts as stability_views
    from arithmech.identify import transfer_chart
    from arithmech.report.charts import (
        accuracy_chart,
        attention_chart,
        attention_control,
        effect_chart,
        mlp_chart,
    )
    from arithmech.table1 import charts as tradeoff
    nodes, edges = _circuit()
    acc = pd.DataFrame({"template": ["a", "b"], "figure": ["Fig. 8"] * 2, "op": ["+"] * 2, "family": ["x", "y"],
                        "accuracy": [0.5, 0.9]})
    strips = pd.DataFrame([dict(sample="s", head="head 0.0", position=p, token=str(p), role="other", score=0.3)
                           for p in range(3)])
    top = pd.DataFrame([dict(layer=l, rank=r, token=str(r), cosine=0.3, prompt="p") for l in range(2) for r in (1, 2)])
    adder = pd.DataFrame([dict(step=0, a_bit=1, b_bit=1, carry_in=0, sum_bit=0, partial=2)])
    long = pd.DataFrame([dict(setting=s, benchmark=b, accuracy=0.5) for s in ("base", "full SFT",
                         "precise SFT (top-8 heads)", "precise SFT (top-16 heads)") for b in ("GSM8K", "MMLU")])
    abl = pd.DataFrame({"heads": [1, 2], "two-digit (math)": [10, 20], "generic facts": [50, 40], "samples/s": [3, 4]})
    return [
        ("template_accuracy_chart", accuracy_chart.template_accuracy_chart(acc, "m"), ["series"], []),
        ("effect_heatmap", effect_chart.effect_heatmap(_effects()), [], ["effect"]),
        ("attention_roles_explorer", attention_chart.attention_roles_explorer(_roles()), ["operand"], []),
        ("attention_strip_chart", attention_chart.attention_strip_chart(strips), [], ["attention"]),
        ("mlp_in_chart", mlp_chart.mlp_in_chart(_mlp(), (0, 1, 2)), ["operand", "reference"], []),
        ("mlp_diff_chart", mlp_chart.mlp_diff_chart(_mlp()), ["answer", "reference"], []),
        ("mlp_projection_explorer", mlp_chart.mlp_projection_explorer(_mlp()), [], []),
        ("top_numbers_chart", mlp_chart.top_numbers_chart(top), [], ["cosine"]),
        ("adder_vs_llm_chart", mlp_chart.adder_vs_llm_chart(adder, top.assign(rank=1), 1, 1), [], ["cosine"]),
        ("finetune_bars", accuracy_chart.finetune_bars(long), ["arm", "series"], []),
        ("ablation_chart", accuracy_chart.ablation_chart(abl, paper=abl.rename(columns={"two-digit (math)": "GSM8K",
                                                                               "generic facts": "MMLU"})),
         ["benchmark"], []),
        ("knockout_control_chart", knockout_chart.knockout_control_chart(_knockout()), ["selection", "reference"], []),
        ("tradeoff_chart", tradeoff.tradeoff_chart(_tradeoff()), ["arm", "reference"], []),
        ("arms_chart", tradeoff.arms_chart(_arms(), ["two_digit", "generic"]), ["arm", "reference"], []),
        ("frontier_chart", tradeoff.frontier_chart(*_frontier()), ["arm", "reference"], []),
        ("curve_chart", _curve_chart(monkeypatch), ["arm", "reference", "series"], []),
        ("faithfulness_chart", faithfulness_chart.faithfulness_chart(_faith(), "m", panels=[("noising", "mean")]),
         ["selection", "reference"], []),
        ("nonkey_band_chart", attention_control.nonkey_band_chart(_baseline()), ["selection", "reference", "series"], []),
        ("jaccard_chart", stability_views.jaccard_chart(_jaccard()), ["series"], []),
        ("head_intervals_chart", stability_views.head_intervals_chart(_stability()), ["selection", "reference"], []),
        ("scatter_chart", beyond_views.scatter_chart(_beyond_run()), ["method", "reference"], []),
        ("circuit_chart", circuit.circuit_chart(nodes, edges, "m"), ["node"], ["effect"]),
        ("explorer_chart", _explorer(), ["answer"], ["effect", "attention"]),
        ("transfer_chart", transfer_chart.transfer_chart(_transfer(), "m", "the key heads"), ["answer"], []),
    ]


def _frontier():
    """Runs and grid points of every arm the colour table names (Table 1's arms)."""
    arms = ["full", "precise-key", "precise-share", "precise-random", "precise-random-any"]
    runs = pd.DataFrame([dict(arm=a, lr=1e-3, run=f"{a}-{i}", math=0.1 * i, general=-0.01 * i, collapsed=i == 2,
                              math_name="carry", general_name="cloze") for a in arms for i in range(3)])
    points = pd.DataFrame([dict(arm=a, lr=1e-3, runs=3, math=0.1, general=-0.01, frontier=True, collapsed=False)
                           for a in arms])
    return runs, points


def test_every_chart_draws_only_the_colours_of_its_roles(monkeypatch):
    """Protects "one colour per meaning": every chart builder's spec uses colours of the roles it encodes (and
    ink) only, schemes of its continuous quantities only, and no colour literal outside the table — a chart that
    writes "#27ae60" for its own purpose, or draws "full SFT" in the key red, fails here."""
    charts = _charts(monkeypatch)
    bad = {}
    for name, chart, roles, schemes in charts:
        cols, used_schemes = used(chart.to_dict())
        if cols - allowed(*roles) or used_schemes - {colours.SCHEMES[s] for s in schemes}:
            bad[name] = (sorted(cols - allowed(*roles)), sorted(used_schemes - {colours.SCHEMES[s] for s in schemes}))
    assert not bad, bad
    assert len(charts) >= 23


def test_the_arms_and_the_selection_agree_on_key_and_random(monkeypatch):
    """Protects the two shared meanings where a reader meets them side by side: Fig. 3's effect-rank curve and the
    precise-key arm are the same red, its random band and the precise-random arm the same grey, and full SFT is
    neither (it was once the key red)."""
    from arithmech.identify import charts as knockout_chart
    from arithmech.table1 import charts as tradeoff
    ko = json.dumps(knockout_chart.knockout_control_chart(_knockout()).to_dict())
    arms = tradeoff.ARM_SCALE.to_dict()
    assert dict(zip(arms["domain"], arms["range"]))["precise-key"] == colours.KEY and colours.KEY in ko
    assert dict(zip(arms["domain"], arms["range"]))["precise-random"] == colours.CONTROL and colours.CONTROL in ko
    assert colours.colour("arm", "full") not in (colours.KEY, colours.CONTROL)


def test_the_theme_and_fig1_use_the_table():
    """Protects the theme (its default category range is the meaning-free ``series`` palette: an uncoloured legend
    never draws red or green) and the pipeline figure's SVG (ink and the key red only)."""
    from pathlib import Path

    from arithmech.report.charts import pipeline, theme
    cfg = theme.theme()["config"]
    assert cfg["range"]["category"] == colours.series() and not any(is_red(c) or is_green(c) for c in colours.series())
    chrome = {cfg["mark"]["color"], cfg["title"]["subtitleColor"], cfg["axis"]["domainColor"]}
    assert chrome <= allowed()
    from arithmech.report.build.generate import pipeline_stages
    svg = pipeline.pipeline_svg(pipeline_stages(Path(__file__).resolve().parents[4]))
    assert {c.lower() for c in ANY_HEX.findall(svg)} <= allowed("selection") and colours.KEY in svg
