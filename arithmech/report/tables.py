"""The paper's fine-tuning tables (Tables 1, 2, 5) as data, and ours in the same shape.

The published LLaMA2 tables are :data:`arithmech.paper.TABLE1` / ``TABLE2`` / ``TABLE5``
(accuracy in %, train speed in samples/s, tuned parameters in billions). :func:`results_table` turns ``finetune/<mode>.json`` records (from
:func:`arithmech.steps.finetune.run_finetune`) into the same layout: one row per setting, accuracy and Δ per
benchmark, samples/s and tuned parameters. :func:`long_form` feeds the chart builders.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Sequence

import pandas as pd

from arithmech.core import records
from arithmech.core.records import table1_frame
from arithmech.finetune.adapter import approx_parameters, precise_sft_memory, tuned_parameters
from arithmech.paper import LLAMA2_7B, LLAMA2_7B_FF, table1_by_mode

TOY_NAMES = {"two_digit": "two-digit (math)", "negative": "negative differences (math)",
             "single_digit": "single-digit (math)", "generic": "generic facts"}


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
    rows = [{"setting": "base", "samples/s": None, "tuned params": None,
             **{b: round(scale * v, 1) for b, v in base.items()}}]
    for r in records:
        row = {"setting": setting_name(r), "samples/s": round(r["train"]["samples_per_second"], 1),
               "tuned params": r["tuned_parameters"]}
        for b, v in _values(r["results"]).items():
            row[b] = round(scale * v, 1)
            row[f"Δ {b}"] = round(scale * (v - base[b]), 1)
        rows.append(row)
    cols = ["setting", "samples/s", "tuned params"] + [c for b in base for c in (b, f"Δ {b}")]
    df = pd.DataFrame(rows).astype({"tuned params": "Int64"})
    return df.reindex(columns=cols).rename(columns={**TOY_NAMES, **{f"Δ {k}": f"Δ {v}" for k, v in TOY_NAMES.items()}})


def long_form(records: Sequence[dict]) -> pd.DataFrame:
    """``setting, benchmark, accuracy`` rows (base included) for the bar charts."""
    base = _values(records[0]["base"])
    rows = [{"setting": "base", "benchmark": TOY_NAMES.get(b, b), "accuracy": v} for b, v in base.items()]
    rows += [{"setting": setting_name(r), "benchmark": TOY_NAMES.get(b, b), "accuracy": v}
             for r in records for b, v in _values(r["results"]).items()]
    return pd.DataFrame(rows)


def ablation_frame(records: Sequence[dict], benchmarks: Sequence[str] = ("negative", "two_digit", "generic")) -> pd.DataFrame:
    """Table 2's shape for our runs: ``heads, mlps, samples/s, tuned params`` and accuracy (%) per benchmark."""
    return pd.DataFrame([{"setting": setting_name(r), "heads": len(r["heads"]), "mlps": len(r["mlps"]),
                          "samples/s": round(r["train"]["samples_per_second"], 1), "tuned params": r["tuned_parameters"],
                          **{TOY_NAMES.get(b, b): round(100 * r["results"][b]["value"], 1) for b in benchmarks}} for r in records])


def summary(records: Sequence[dict]) -> str:
    """One line per run: the change of every benchmark from base, in points, largest math gain first."""
    lines = []
    for r in records:
        d = {TOY_NAMES.get(b, b): 100 * r["delta"][b]["delta"] for b in r["results"]}
        lines.append(f"{setting_name(r)}: " + ", ".join(f"{k} {v:+.1f}" for k, v in d.items()))
    return "\n".join(lines)


def memory_table_7b(batch: int = 4, seq: int = 512, n_heads: int = 32, lowest_layer: int = 11) -> pd.DataFrame:
    """GiB per part of precise SFT of LLaMA2-7B on one GPU (bf16 base, fp32 slices, flash attention)
    beside full SFT's parameter state (bf16 weights + fp32 master, grads, AdamW: 16 bytes/param)."""
    est = precise_sft_memory(LLAMA2_7B, n_heads, d_ff=LLAMA2_7B_FF, batch=batch, seq=seq, lowest_layer=lowest_layer)
    rows = [{"part": k, "precise SFT (GiB)": v} for k, v in est.gib().items()]
    n = approx_parameters(LLAMA2_7B, LLAMA2_7B_FF)
    rows.append({"part": "full SFT: weights + grads + AdamW only", "precise SFT (GiB)": None,
                 "full SFT (GiB)": round(16 * n / 2**30, 1)})
    df = pd.DataFrame(rows)
    df.attrs["tuned_parameters"] = tuned_parameters(LLAMA2_7B, n_heads)
    df.attrs["geometry"] = asdict(LLAMA2_7B)
    return df


# -------------------------------------------------------------------------------- Table 1 side by side
def table1_side_by_side(results_dir: str | Path, model_name: str) -> pd.DataFrame:
    """One row per (model, mode): mean math and generic accuracy (%), samples/s and tuned parameters, for
    the paper's LLaMA2-7B (Table 1), the embedded model (``results/embedded/finetune/{full,precise}.json``,
    toy benchmarks: two-digit problems and generic facts) and ``model_name`` (``finetune/<mode>.json``
    of :mod:`arithmech.steps.table1`). Missing results are left out."""
    rows = []
    for mode, r in table1_by_mode("LLaMA2-7B").items():
        rows.append(("LLaMA2-7B (paper)", mode, sum(r[k] for k in ("gsm8k", "addsub", "singleeq", "svamp")) / 4,
                     (r["mmlu"] + r["csqa"]) / 2, r.get("samples_per_second"), r.get("tuned_parameters"), None))
    emb = Path(results_dir) / "embedded"
    val = lambda m, k: 100 * m[k]["value"] if k in m else float("nan")
    for mode in ("full", "precise"):
        if records.finetune_path(emb, mode).exists():
            r = records.read_finetune(emb, mode)
            if mode == "full" or not any(x[0] == "embedded" for x in rows):
                rows.append(("embedded", "base", val(r["base"], "two_digit"), val(r["base"], "generic"), None, None, None))
            rows.append(("embedded", mode, val(r["results"], "two_digit"), val(r["results"], "generic"),
                         r["train"].get("samples_per_second"), r.get("tuned_parameters"), None))
    t = table1_frame(Path(results_dir) / model_name)
    for mode in dict.fromkeys(t.get("mode", [])):
        d = t[t["mode"] == mode].set_index("measure")
        math_ = d.loc[["heldout_phrasings", "two_digit", "addsub", "singleeq", "svamp"], "value"].mean()
        rows.append((model_name, mode, 100 * math_, 100 * d.loc[["mmlu", "csqa"], "value"].mean(),
                     d["samples_per_second"].iloc[0], d["tuned_parameters"].iloc[0], d.loc["lm_loss", "value"]))
    return pd.DataFrame(rows, columns=["model", "mode", "math accuracy (%)", "generic accuracy (%)", "train samples/s",
                                       "tuned parameters", "generic-text loss"])
