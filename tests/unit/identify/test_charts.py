"""Unit tests of ``arithmech/identify/charts.py``."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from arithmech.identify.charts import knockout_control_chart

TASKS = ["addition", "subtraction"]


def _knockout(tasks=TASKS, ks=range(4)) -> pd.DataFrame:
    """A small knockout.csv: per task an effect-rank curve over ``ks``, three random orders, and the two rules."""
    rows, row = [], dict(positions="end", correct=0, n=50, mean_source="reference")
    for i, t in enumerate(tasks):
        for k in ks:
            rows.append({**row, "task": t, "kind": "head", "order": "effect-rank", "seed": 0, "k": k,
                         "accuracy": 0.9 - 0.2 * k - 0.01 * i, "ci_low": 0.05, "ci_high": 0.95})
            rows += [{**row, "task": t, "kind": "head", "order": "random-rank", "seed": s, "k": k,
                      "accuracy": 0.9 - 0.01 * k, "ci_low": 0.0, "ci_high": 1.0} for s in range(3)]
        for order, a in (("all-heads-out", 0.3 + 0.1 * i), ("majority-floor", 0.1 + 0.1 * i)):
            rows.append({**row, "task": t, "kind": "sanity", "order": order, "seed": 0, "k": 0, "accuracy": a,
                         "ci_low": a - 0.05, "ci_high": a + 0.05})
    return pd.DataFrame(rows)


def _x_axes(spec: dict) -> list[dict]:
    layers = (spec.get("spec") or spec)["layer"]
    return [l["encoding"]["x"]["axis"] for l in layers if "x" in l["encoding"]]


@pytest.mark.parametrize("tasks", [["addition"], TASKS])
def test_knockout_axis_ticks_are_whole_numbers(tasks):
    """Protects Fig. 3's k axis (integer axes once had half-integer ticks): k heads knocked out is a
    count, so its axis asks for whole-number ticks printed without decimals, and the drawn chart's tick
    labels are 0, 1, 2, 3 — never 0.5 — with one panel per task or a single one."""
    spec = knockout_control_chart(_knockout(tasks), "head").to_dict()
    assert all(a["tickMinStep"] == 1 and a["format"] == "d" for a in _x_axes(spec))
    import vl_convert as vlc
    svg = vlc.vegalite_to_svg(spec)
    (axis,) = set(re.findall(r"X-axis titled 'number of heads knocked out \(k\)'[^\"]*", svg))
    ticks = re.findall(r'role-axis-label"[^>]*>(.*?)</g>', svg, flags=re.S)
    labels = {t for g in ticks for t in re.findall(r">([^<>]+)</text>", g)}
    assert {"0", "1", "2", "3"} <= labels and not any("." in l for l in labels if l[0].isdigit() and "%" not in l), labels
    assert "values from 0 to 3" in axis


def test_knockout_panels_hold_their_own_task():
    """Protects the faceted Fig. 3 (several tasks): every layer's rows are the facet's, so each panel draws
    its own task's curve and its own two dashed rules (the chart used to refuse several tasks outright)."""
    spec = knockout_control_chart(_knockout(), "head").to_dict()
    assert spec["facet"]["field"] == "task" and all("data" not in l for l in spec["spec"]["layer"])
    import vl_convert as vlc
    svg = vlc.vegalite_to_svg(spec)
    rules = [re.findall(r'aria-label="([^"]*)"', p.split("</g>")[0]) for p in svg.split('child_layer_2_marks"')[1:]]
    assert [len(r) for r in rules] == [2, 2], rules
    assert sorted(rules[0]) == ["accuracy: 0.1; rule: majority floor; low: 5.0%; high: 15.0%; n: 50",
                                "accuracy: 0.3; rule: all heads out; low: 25.0%; high: 35.0%; n: 50"], rules[0]
    assert [l.split(";")[0] for l in sorted(rules[1])] == ["accuracy: 0.2", "accuracy: 0.4"], rules[1]
