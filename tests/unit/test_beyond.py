"""The beyond step's checks, the circuit graph's bookkeeping and the chapter's verdict rule, on small frames."""
from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from arithmech.steps import beyond as B
from arithmech.report import circuit as C


def _frames(edge: float, se: float):
    eap = pd.DataFrame({"layer": [0, 0, 1, 1], "head": ["0", "mlp", "0", "mlp"], "exact": [-0.01, -0.2, -0.05, 0.0]})
    up = pd.DataFrame([{"receiver": "1.0", "path": p, "sender": s, "sender_layer": 0, "effect": e, "effect_se": se, "n": 64}
                       for s, e in (("0.0", edge), ("MLP 0", edge / 2)) for p in ("q", "k", "v")])
    return eap, up


@pytest.mark.parametrize("edge,se,want", [(-0.01, 0.001, "holds"), (-0.09, 0.001, "does not hold"),
                                          (-0.05, 0.01, "inconclusive")])
def test_verdict_rule(edge, se, want):
    """Protects: the chapter's rule — the largest single upstream path against the weakest receiver's
    direct effect (here 5%), with its 95% interval — gives holds / does not hold / inconclusive."""
    eap, up = _frames(edge, se)
    v = C.verdict(eap, up)
    assert v["verdict"] == want and v["D"] == pytest.approx(0.05) and v["E"] == pytest.approx(abs(edge))


def test_graph_and_shares_sum_the_drawn_paths():
    """Protects: the graph's upstream edge weight is the sum of its q, k, v paths; the direct-only share is the
    receivers' direct effects over the total, the graph's adds exactly the drawn upstream edges."""
    eap, up = _frames(-0.02, 0.001)
    nodes, edges = C.graph(eap, up, n_layers=2)
    assert set(nodes.node) == {"1.0", "0.0", "MLP 0", "logits"}
    w = edges[(edges.kind == "upstream") & (edges.source == "0.0")].weight.iloc[0]
    assert w == pytest.approx(-0.06)
    s = C.shares(nodes, edges, total=-0.5)
    assert s["direct_only"] == pytest.approx(-0.05) and s["share_direct_only"] == pytest.approx(0.1)
    assert s["graph"] == pytest.approx(-0.05 - 0.06 - 0.03) and s["senders_direct"] == pytest.approx(-0.21)


@pytest.mark.parametrize("argv,msg", [(["--receivers", "0"], "below 1"), (["--ig-steps", "x"], "not an integer"),
                                      (["--results", "/nonexistent-arithmech"], "does not exist")])
def test_cli_bad_input_is_one_line_and_exit_2(argv, msg):
    """Protects: bad beyond arguments or a missing identify folder are one line and exit 2, before any model loads."""
    p = subprocess.run([sys.executable, "-m", "arithmech", "beyond", *argv], capture_output=True, text=True)
    assert p.returncode == 2 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_check_args_refuses_non_positive():
    """Protects: run() refuses non-positive counts before reading files."""
    with pytest.raises(ValueError, match="ig_steps"):
        B.check_args(5, 0, 10)


def test_ensure_reuses_a_run_made_with_the_same_parameters_and_recomputes_otherwise(tmp_path, embedded_model,
                                                                                    monkeypatch):
    """Protects the chapter's reuse rule (the book's build budget rests on it, and it must never show a run
    made with other parameters): ``beyond.ensure`` computes once, reads back when ``run.json`` records the
    same parameters (``run`` is not called again), and recomputes when one differs."""
    from arithmech.steps import identify as I
    model, tok, _ = embedded_model
    res = I.identify(model, tok, "addition", n_samples=12, seed=0, knockout=False, transfer=False, prob=False)
    I.write_results(res, tmp_path / "embedded", model_name="embedded")
    config = B.Config(model_name="embedded", results=str(tmp_path), receivers=2, ig_steps=2, n_samples=6, seed=0,
                      n_misses=1)
    first = B.ensure(config)
    assert first["summary"]["n_samples"] == 6 and first["n_layers"] == model.config.num_hidden_layers
    calls = []
    real = B.run
    monkeypatch.setattr(B, "run", lambda c: calls.append(c) or real(c))
    again = B.ensure(config)
    assert calls == [] and again["eap"].equals(first["eap"])
    other = B.ensure(config.replace(ig_steps=3))
    assert len(calls) == 1 and other["summary"]["ig_steps"] == 3


def test_chapter_tables_take_every_model_through_one_path():
    """Protects the Beyond page's two-model tables: three method rows per model, one verdict row per model equal
    to the rule's own verdict, and the finding line quoting that verdict."""
    from arithmech.report import beyond_views as V
    runs = []
    for name, edge in (("a", -0.01), ("b", -0.09)):
        eap, up = _frames(edge, 0.001)
        eap = eap.assign(eap=eap.exact, eap_ig=eap.exact, exact_se=0.0)
        S = {"n_samples": 64, "top": 10, "ig_steps": 4, "exact_key_heads": [], "receivers": ["1.0"],
             "receivers_from": "key heads", "times": {"exact_s": 1.0, "eap_s": 0.1, "eap_ig_s": 0.4},
             "total_effect": {"mean": -0.5, "se": 0.01},
             **{m: {"spearman_all": 1.0, "spearman_heads": 1.0, "top_overlap": 2, "key_heads": []} for m in ("eap", "eap_ig")}}
        runs.append({"model": name, "summary": S, "eap": eap, "upstream": up, "n_layers": 2})
    assert list(V.methods_table(runs).model) == ["a"] * 3 + ["b"] * 3
    v = V.verdict_table(runs)
    assert list(v.verdict) == [C.verdict(r["eap"], r["upstream"])["verdict"] for r in runs] == ["holds", "does not hold"]
    assert all(f"**{x}**" in line for x, line in zip(v.verdict, V.finding_lines(runs)))
    assert list(V.shares_table(runs).model) == ["a", "b"] and len(V.upstream_table(runs, top=2)) == 4


def test_spearman_interval_is_fisher_z_and_narrows_with_n():
    """Protects the interval shown beside each rank correlation: Fisher z with s.e. 1.03/√(n−3), containing ρ,
    narrower for more items, and degenerate (ρ, ρ) where the transform is undefined."""
    import math
    from arithmech.report.beyond_views import spearman_ci
    lo, hi = spearman_ci(0.9, 300)
    assert lo < 0.9 < hi and math.isclose(math.atanh(hi) - math.atanh(0.9), 1.959964 * 1.03 / math.sqrt(297), rel_tol=1e-9)
    assert (hi - lo) < (lambda a: a[1] - a[0])(spearman_ci(0.9, 30))
    assert spearman_ci(1.0, 300) == (1.0, 1.0) and spearman_ci(0.5, 3) == (0.5, 0.5)
