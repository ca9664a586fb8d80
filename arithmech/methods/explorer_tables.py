"""The tables of the static page's explorer (:func:`arithmech.methods.explorer.precompute`), from what its forward
passes gave: the top tokens and the correct rate of each slider step, the prompts, the heads' attention rows and
the number tokens closest to each MLP's write. Pure functions, no model.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from arithmech.core.stats import wilson_interval
from arithmech.data import pairs
from arithmech.methods.attention import Head

TOP_COLUMNS = ["id", "step", "tokens", "probs", "correct", "answer_rank"]
STEP_COLUMNS = ["step", "threshold", "heads", "n_heads", "correct", "n", "problems", "ci_low", "ci_high"]


def step_rows(
    tok, top_ids: dict, top_p: dict, answers: torch.Tensor, sets: list, thresholds: Sequence[float], m: int
) -> tuple[list, list]:
    """The rows of the ``top`` and ``steps`` tables: for the intact model (step -1) and each slider step (its head
    set ``sets[s]`` knocked out), every prompt's top-k tokens, their probabilities, whether top-1 is the answer and
    the answer's rank; and the step's correct count with its Wilson interval over the ``m`` problems (each
    problem's prompts one trial: the prompts share problems across templates)."""
    k = next(iter(top_ids.values())).shape[1]
    n = len(answers)
    ok = {c: (top_ids[c][:, 0] == answers) for c in top_ids}
    top_rows, steps = [], []
    for s, c in [(-1, ())] + [(s, tuple(x)) for s, x in enumerate(sets)]:
        names = tok.convert_ids_to_tokens(top_ids[c].flatten().tolist())
        hit = (top_ids[c] == answers[:, None]).int()
        rank = torch.where(hit.any(1), hit.argmax(1) + 1, 0)  # 0: answer not in the top k
        top_rows += [
            (i, s, names[i * k : (i + 1) * k], [round(float(v), 4) for v in top_p[c][i]], bool(ok[c][i]), int(rank[i]))
            for i in range(n)
        ]
        kk = int(ok[c].sum())
        lo, hi = wilson_interval(kk * m / n, m)  # each problem's prompts one trial (prompts share problems)
        steps.append((s, None if s < 0 else float(thresholds[s]), [f"{l}.{h}" for l, h in c], len(c), kk, n, m, lo, hi))
    return top_rows, steps


def prompts_frame(samples: Sequence[pairs.Sample]) -> pd.DataFrame:
    """The ``prompts`` table: each prompt's id, text, operation, template, answer and answer-token rule."""
    return pd.DataFrame(
        {
            "id": range(len(samples)),
            "prompt": [s.clean for s in samples],
            "op": [s.op for s in samples],
            "template": [s.template for s in samples],
            "answer": [s.answer for s in samples],
            "answer_token": [s.answer_token for s in samples],
        }
    )


def attention_frame(att: dict, shown: Sequence[Head], key_at: dict) -> pd.DataFrame:
    """The ``attention`` table: each shown head's END-row attention on each prompt (``att[id][head]``), rounded,
    with the position its key token sits at."""
    name = lambda h: f"{h[0]}.{h[1]}"
    return pd.DataFrame(
        [(i, name(h), int(key_at[name(h)]), [round(v, 3) for v in att[i][h]]) for i in range(len(att)) for h in shown],
        columns=["id", "name", "key_at", "scores"],
    )


def mlp_frame(best, labels: Sequence[str]) -> pd.DataFrame:
    """The ``mlp`` table: per prompt and layer, the number token closest (cosine, ``best``: a ``max`` over the
    number tokens, (n, L)) to the MLP's write at END, and that cosine."""
    return pd.DataFrame(
        [
            (
                i,
                [labels[j].strip() for j in best.indices[i].tolist()],
                [round(v, 3) for v in best.values[i].tolist()],
            )
            for i in range(best.values.shape[0])
        ],
        columns=["id", "tokens", "cosines"],
    )
