"""The published numbers of Zhang et al. (ICML 2024), each typed once; every chapter and module reads them here.

Everything is LLaMA2-7B unless a table names another model. Heads are ``(layer, head)``, 0-based as
the paper writes them ("13.11" is layer 13, head 11). Accuracies are in %, train speed in samples/s,
tuned parameters in billions (CSQA is read as CommonsenseQA, see the data README). Tables 2 and 5 print
some rows of Table 1 again (top-32 heads); they are kept as the paper prints them, one table each.
"""

from __future__ import annotations

from typing import TypedDict

import pandas as pd

from arithmech.core.geometry import Geometry

# --------------------------------------------------------------------------- identify (§5.1, App. E)
KEY_HEADS: dict[str, list[tuple[int, int]]] = {  # Table 4 / Table 3 / Fig. 2, ranked
    "fig2": [(12, 22), (13, 11), (14, 2), (11, 8)],
    "table4_ours": [(12, 22), (13, 11), (16, 0), (15, 26), (18, 26), (18, 24), (30, 31), (14, 27), (22, 25), (11, 8)],
    "table4_gsm8k": [(19, 6), (11, 8), (12, 22), (14, 31), (13, 11), (22, 25), (16, 0), (21, 17), (15, 26), (29, 5)],
    "table3_exponentiation": [(11, 8), (12, 22), (13, 11), (14, 2), (15, 15)],
}
TABLE3_KNOCKOUT = [-0.66, -0.62]  # Table 3: relative change after knocking out the exponentiation key heads
KEY_HEAD_LAYERS = (12, 17)  # §5.1: key heads "primarily concentrated between layers 12 and 17" (of 32)
N_LAYERS, N_HEADS = 32, 32  # LLaMA2-7B: 1,024 heads

FIG4_CASES: list[tuple[str, str]] = [  # Fig. 4, transfer of the knockout: prompt, the correct next token
    (
        "Danny has 12 bottle caps in his collection. He found 53 bottle caps at the park. "
        "How many bottle caps does he have now? The answer is",
        "6",
    ),
    ("281 + 135 =", "4"),
    ("The war lasted 5 years from 1723 to 172", "8"),
    ("4.2 plus 2.5 equals to", "6"),
]

# ---------------------------------------------------------------------------- analyze (§5.2, App. C)
HEAD_ROLES = {"operand": [(13, 11), (12, 22)], "operator": [(14, 2), (11, 8)]}  # Fig. 5, §5.2
# App. C, Fig. 13 (MLP_in vs operands) and Fig. 14 (MLP_out - MLP_in vs {C}): start-inflection-end
# layers, the same triple for both curves; with each model's number of layers.
STAGES = {"LLaMA2-7B": ((13, 18, 28), 32), "LLaMA2-13B": ((13, 18, 35), 40), "Mistral-7B": ((13, 20, 28), 32)}
# Fig. 6c, "4 + 3 =": the top number token of MLP_out - MLP_in at the layers the text names.
FIG6C_TOP = {17: "3", 19: "4", 20: "6", 21: "1", 22: "7", 23: "7", 25: "7", 27: "7"}

# ---------------------------------------------------------------------------- fine-tuning (§5.3)
PAPER_CORRECT_PROB = 0.82  # §3: the mean probability of the correct answer token across the paper's models (addition)
KEY_THRESHOLD = -0.05  # §4.1: a key head lowers the answer logit by more than 5% (relative change)
N_BOOT = 1000  # (this reproduction) bootstrap resamples of the prompts per 95% interval


class SFTSettings(TypedDict):
    """The keys of :data:`SFT` with their types (the batch size an int, the rest floats)."""

    lr: float
    batch_size: int
    epochs: float
    warmup: float
    weight_decay: float


SFT: SFTSettings = dict(lr=2e-5, batch_size=128, epochs=2.0, warmup=0.02, weight_decay=0.1)  # §5.3 settings
LLAMA2_7B = Geometry(n_layers=32, n_heads=32, n_kv_heads=32, head_dim=128, d_model=4096, vocab_size=32000)
LLAMA2_7B_FF = 11008

TABLE1_BENCHMARKS = ["GSM8K", "AddSub", "SingleEq", "SVAMP", "MMLU", "CSQA"]
TABLE1 = pd.DataFrame(
    [
        ("LLaMA2-7B", "base", None, None, 14.6, 30.5, 65.4, 34.7, 46.0, 59.8),
        ("LLaMA2-7B", "full SFT", 15, 6.7, 24.6, 53.7, 68.2, 50.3, 40.5, 54.0),
        ("LLaMA2-7B", "precise SFT", 50, 0.07, 27.4, 50.6, 69.7, 55.8, 46.4, 59.6),
        ("LLaMA2-13B", "base", None, None, 28.7, 33.7, 76.6, 45.7, 54.8, 67.3),
        ("LLaMA2-13B", "full SFT", 8, 13.0, 44.6, 62.2, 79.8, 62.8, 50.2, 62.0),
        ("LLaMA2-13B", "precise SFT", 34, 0.08, 46.3, 61.1, 82.2, 66.6, 55.0, 67.2),
    ],
    columns=["model", "setting", "samples/s", "tuned params (B)"] + TABLE1_BENCHMARKS,
)

TABLE2 = pd.DataFrame(
    [
        ("top-8 heads", 8, 0, 58, 0.017, 25.4, 45.1),
        ("top-16 heads", 16, 0, 52, 0.033, 26.5, 45.8),
        ("top-32 heads", 32, 0, 50, 0.067, 27.4, 46.4),
        ("top-48 heads", 48, 0, 46, 0.101, 27.4, 46.4),
        ("top-64 heads", 64, 0, 40, 0.134, 27.3, 45.5),
        ("top-32 heads + top-3 MLPs", 32, 3, 31, 0.473, 28.0, 45.2),
    ],
    columns=["setting", "heads", "mlps", "samples/s", "tuned params (B)", "GSM8K", "MMLU"],
)

TABLE5 = pd.DataFrame(
    [
        ("top-32 heads", 0, 50, 0.067, 27.4, 46.4),
        ("top-32 heads + top-1 MLP", 1, 44, 0.202, 27.5, 46.0),
        ("top-32 heads + top-2 MLPs", 2, 38, 0.338, 27.7, 45.7),
        ("top-32 heads + top-3 MLPs", 3, 31, 0.473, 28.0, 45.2),
        ("top-32 heads + top-6 MLPs", 6, 26, 0.879, 28.2, 44.9),
        ("top-32 heads + all MLPs", 32, 19, 4.396, 29.2, 43.9),
    ],
    columns=["setting", "mlps", "samples/s", "tuned params (B)", "GSM8K", "MMLU"],
)

# §5.1: knocking out the key heads on SVAMP, accuracy (%) before (Table 1's base row) and the change in
# points (-22.9 / 34.7 = -66%).
SVAMP_KNOCKOUT = {
    "before": float(TABLE1.query("model == 'LLaMA2-7B' and setting == 'base'")["SVAMP"].iloc[0]),
    "change": -22.9,
}


def table1_by_mode(model_name: str = "LLaMA2-7B") -> dict[str, dict]:
    """Table 1 rows of ``model`` keyed by mode (``base``, ``full``, ``precise``): accuracy (%) per benchmark
    in lower case (``gsm8k`` ... ``csqa``), and for the fine-tuned rows ``samples_per_second`` and
    ``tuned_parameters`` (a count, 6.7e9)."""
    rows = TABLE1[TABLE1["model"] == model_name]
    if rows.empty:
        raise ValueError(f"Table 1 has no rows for {model_name!r}; it has {sorted(set(TABLE1['model']))}")
    out = {}
    for _, r in rows.iterrows():
        d = {b.lower(): float(r[b]) for b in TABLE1_BENCHMARKS}
        if pd.notna(r["samples/s"]):
            d.update(
                samples_per_second=float(r["samples/s"]), tuned_parameters=round(float(r["tuned params (B)"]) * 1e9)
            )
        out[r["setting"].split()[0]] = d
    return out
