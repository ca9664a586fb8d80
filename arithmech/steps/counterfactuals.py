"""The operand counterfactual beside the paper's operator counterfactual (``python -m arithmech counterfactuals``).

:func:`operand_identify` runs identify with X_c changing an operand instead of the operator
(:func:`arithmech.data.pairs.make_operand_pairs`); :func:`counterfactual_overlap` names the heads both
counterfactuals find, with each one's effect under both.
"""
from __future__ import annotations

import json

import pandas as pd

from arithmech.core import results as R
from arithmech.data import pairs
from arithmech.data import pairs as D


# ----------------------------------------------------------------- identify with two counterfactuals
def operand_identify(model, tok, task: str = "addition", n_samples: int = 128, seed: int = 0, **kw):
    """:func:`arithmech.identify.identify` on ``task`` with the *operand* counterfactual: X_c is X_r with
    other operands (:func:`arithmech.data.pairs.make_operand_pairs`). Rows are labelled ``"<task> (operand)"``.

    ``kw`` go to ``identify`` (e.g. ``knockout=False``); no transfer test (it is the operator run's).
    ``kw["answer_token"]`` (default ``"last-digit"``, identify's) chooses the pairs' answer token; pairs whose
    X_c leaves the model's answer in place are dropped there, as for the operator counterfactual.
    """
    from arithmech.steps.identify import identify
    pairs, _ = D.make_operand_pairs(tok, task, n=n_samples, seed=seed, answer_token=kw.get("answer_token", "last-digit"))
    res = identify(model, tok, [pairs], n_samples=n_samples, seed=seed, **{**kw, "transfer": False})
    label = f"{task} (operand)"
    res.effects["task"] = label
    res.key_heads["task"] = label
    res.knockout["task"] = label
    res.info = {label: res.info.pop("custom")}
    res.tasks = {label: res.tasks.pop("custom")}
    res.params.update(tasks=[label], counterfactual="operand")
    return res


def counterfactual_overlap(operator_effects: pd.DataFrame, operand_effects: pd.DataFrame, task: str = "addition",
                           top: int = 10) -> dict:
    """Shared and specific heads among the ``top`` of the operator and the operand effect rankings of
    ``task`` (:func:`arithmech.methods.knockout.overlap`; ``a`` = operator, ``b`` = operand), with each head's
    relative change and logit difference under both counterfactuals."""
    from arithmech.steps.identify import ranking
    from arithmech.methods.knockout_overlap import overlap
    ov = overlap(ranking(operator_effects, task)[0], ranking(operand_effects, f"{task} (operand)")[0], top)
    def look(eff, t, h):
        r = eff[(eff.task == t) & (eff.layer == h[0]) & (eff["head"].astype(str) == str(h[1]))].iloc[0]
        return {"effect": float(r.effect), "logit_diff": float(r.logit_diff)}
    heads = sorted(set(ov["a"]) | set(ov["b"]))
    ov["by_head"] = [{"head": f"{l}.{h}", "operator": look(operator_effects, task, (l, h)),
                      "operand": look(operand_effects, f"{task} (operand)", (l, h))} for l, h in heads]
    return {**{k: ([f"{l}.{h}" for l, h in v] if isinstance(v, list) and k != "by_head" else v)
               for k, v in ov.items()}, "task": task, "a_name": "operator", "b_name": "operand"}
