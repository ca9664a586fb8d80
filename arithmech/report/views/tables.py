"""The paper's fine-tuning tables (Tables 1, 2, 5) as data, and ours in the same shape.

The published LLaMA2 tables are :data:`arithmech.paper.TABLE1` / ``TABLE2`` / ``TABLE5``
(accuracy in %, train speed in samples/s, tuned parameters in billions). :func:`results_table` turns
``finetune/<mode>.json`` records (from :func:`arithmech.table1.finetune.run`) into the same layout: one row per setting,
accuracy and Δ per benchmark, samples/s and tuned parameters. :func:`long_form` feeds the chart builders.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import pandas as pd

from arithmech.core import records as records_io
from arithmech.finetune.adapter import approx_parameters, precise_sft_memory, tuned_parameters
from arithmech.paper import LLAMA2_7B, LLAMA2_7B_FF

TOY_NAMES = {
    "two_digit": "two-digit (math)",
    "negative": "negative differences (math)",
    "single_digit": "single-digit (math)",
    "generic": "generic facts",
}


def _values(measures: dict) -> dict[str, float]:
    """``{benchmark: value}`` of a fine-tune record's ``results`` or ``base``."""
    return {b: m["value"] for b, m in measures.items()}


def setting_name(record: dict) -> str:
    """``full SFT`` or ``precise SFT (top-k heads[ + m MLPs])`` from a finetune record."""
    if record["mode"] == "full":
        return "full SFT"
    m = len(record["mlps"])
    return f"precise SFT (top-{len(record['heads'])} heads" + (f" + {m} MLP{'s' * (m > 1)})" if m else ")")


def results_table(records: Sequence[dict], percent: bool = True) -> pd.DataFrame:
    """Rows: base (from the first record's ``before``), then one per record; columns: samples/s,
    tuned parameters, and per benchmark the accuracy and its change from base."""
    scale = 100 if percent else 1
    base = _values(records[0]["base"])
    rows = [
        {
            "setting": "base",
            "samples/s": None,
            "tuned params": None,
            **{b: round(scale * v, 1) for b, v in base.items()},
        }
    ]
    for r in records:
        row = {
            "setting": setting_name(r),
            "samples/s": round(r["train"]["samples_per_second"], 1),
            "tuned params": r["tuned_parameters"],
        }
        for b, v in _values(r["results"]).items():
            row[b] = round(scale * v, 1)
            row[f"Δ {b}"] = round(scale * (v - base[b]), 1)
        rows.append(row)
    cols = ["setting", "samples/s", "tuned params"] + [c for b in base for c in (b, f"Δ {b}")]
    df = pd.DataFrame(rows).astype({"tuned params": "Int64"})
    return df.reindex(columns=cols).rename(
        columns={
            **TOY_NAMES,
            **{f"Δ {k}": f"Δ {v}" for k, v in TOY_NAMES.items()},
        }
    )


def long_form(records: Sequence[dict]) -> pd.DataFrame:
    """``setting, benchmark, accuracy`` rows (base included) for the bar charts."""
    base = _values(records[0]["base"])
    rows = [{"setting": "base", "benchmark": TOY_NAMES.get(b, b), "accuracy": v} for b, v in base.items()]
    rows += [
        {"setting": setting_name(r), "benchmark": TOY_NAMES.get(b, b), "accuracy": v}
        for r in records
        for b, v in _values(r["results"]).items()
    ]
    return pd.DataFrame(rows)


def ablation_frame(
    records: Sequence[dict], benchmarks: Sequence[str] = ("negative", "two_digit", "generic")
) -> pd.DataFrame:
    """Table 2's shape for our runs: ``heads, mlps, samples/s, tuned params`` and accuracy (%) per benchmark, with
    ``<benchmark> lo`` / ``hi`` (its 95% interval, %) where the record has one (:func:`arithmech.table1.finetune.run`
    keeps them)."""
    rows = []
    for r in records:
        row = {
            "setting": setting_name(r),
            "heads": len(r["heads"]),
            "mlps": len(r["mlps"]),
            "samples/s": round(r["train"]["samples_per_second"], 1),
            "tuned params": r["tuned_parameters"],
        }
        for b in benchmarks:
            m, name = r["results"][b], TOY_NAMES.get(b, b)
            row[name] = round(100 * m["value"], 1)
            if m.get("ci"):
                row[f"{name} lo"], row[f"{name} hi"] = (round(100 * c, 1) for c in m["ci"])
        rows.append(row)
    return pd.DataFrame(rows)


def ablation_readable(
    records: Sequence[dict], benchmarks: Sequence[str] = ("negative", "two_digit", "generic")
) -> pd.DataFrame:
    """:func:`ablation_frame` as the page shows it: base first, then each run; per benchmark its accuracy with its
    95% Wilson interval over items ("43.3 [37.8, 49.0]"), the number of items in the column's name."""
    base = {**records[0], "results": records[0]["base"], "heads": [], "mlps": []}
    out = []
    for r in [base, *records]:
        row = {"setting": "base" if r is base else setting_name(r), "MLPs": len(r["mlps"]) if r is not base else ""}
        for b in benchmarks:
            m = r["results"][b]
            ci = f" [{100 * m['ci'][0]:.1f}, {100 * m['ci'][1]:.1f}]" if m.get("ci") else ""
            row[f"{TOY_NAMES.get(b, b)} (n = {m.get('n') or '?'})"] = f"{100 * m['value']:.1f}{ci}"
        row["samples/s"] = "" if r is base else round(r["train"]["samples_per_second"], 1)
        row["tuned params"] = "" if r is base else r["tuned_parameters"]
        out.append(row)
    return pd.DataFrame(out).set_index("setting")


def _change(d: dict, before: dict, after: dict) -> str:
    """One change ``d`` from measure ``before`` to ``after`` in points with its paired interval; "(no item changed)"
    where both keep their items and every item scored as before (the bootstrap's interval is then [0, 0], not a
    measurement of precision)."""
    if before.get("items") is not None and before.get("items") == after.get("items"):
        return f"{100 * d['delta']:+.1f} (no item changed)"
    return f"{100 * d['delta']:+.1f}" + (f" [{100 * d['ci'][0]:+.1f}, {100 * d['ci'][1]:+.1f}]" if d.get("ci") else "")


def summary(records: Sequence[dict]) -> str:
    """One line per run: the change of every benchmark from base, in points, with its paired 95% interval over the
    same items where the record has one."""
    lines = []
    for r in records:
        parts = []
        for b in r["results"]:
            parts.append(f"{TOY_NAMES.get(b, b)} {_change(r['delta'][b], r['base'][b], r['results'][b])}")
        lines.append(f"{setting_name(r)}: " + ", ".join(parts))
    return "\n".join(lines)


def versus_first(records: Sequence[dict], seed: int = 0) -> str:
    """One line per later run: its change from the first run (what the MLPs add to the heads alone), per benchmark
    in points with the paired 95% interval over the same items (:func:`arithmech.core.records.paired_deltas`)."""
    first, lines = records[0], []
    for r in records[1:]:
        d = records_io.paired_deltas(first["results"], r["results"], seed)
        parts = [
            f"{TOY_NAMES.get(b, b)} {_change(d[b], first['results'][b], r['results'][b])}"
            for b in r["results"]
            if b in d
        ]
        lines.append(f"{setting_name(r)} − {setting_name(first)}: " + ", ".join(parts))
    return "\n".join(lines)


def memory_table_7b(batch: int = 4, seq: int = 512, n_heads: int = 32, lowest_layer: int = 11) -> pd.DataFrame:
    """GiB per part of precise SFT of LLaMA2-7B on one GPU (bf16 base, fp32 slices, flash attention)
    beside full SFT's parameter state (bf16 weights + fp32 master, grads, AdamW: 16 bytes/param)."""
    est = precise_sft_memory(LLAMA2_7B, n_heads, d_ff=LLAMA2_7B_FF, batch=batch, seq=seq, lowest_layer=lowest_layer)
    rows = [{"part": k, "precise SFT (GiB)": v} for k, v in est.gib().items()]
    n = approx_parameters(LLAMA2_7B, LLAMA2_7B_FF)
    rows.append(
        {
            "part": "full SFT: weights + grads + AdamW only",
            "precise SFT (GiB)": None,
            "full SFT (GiB)": round(16 * n / 2**30, 1),
        }
    )
    df = pd.DataFrame(rows)
    df.attrs["tuned_parameters"] = tuned_parameters(LLAMA2_7B, n_heads)
    df.attrs["geometry"] = asdict(LLAMA2_7B)
    return df
