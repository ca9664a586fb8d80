"""A case study on any model: accuracy per template, two counterfactuals, Table 1 side by side.

The paper's claims, decided on a results folder, are :mod:`arithmech.claims.rules`.

The book's SmolLM2-135M-Instruct appendix runs on this module with ``model`` a parameter (the embedded
model works too). A pretrained model is a weak calculator, so the method runs on the prompts it
answers right (X_r). What the appendix needs beyond the pipeline's own steps:

* :func:`accuracy_by_template`: top-1 accuracy (Wilson 95% interval) and mean p({C}) per operation
  and template (``accuracy_by_template.csv``);
* :func:`operand_identify`, :func:`counterfactual_overlap`: identify with the paper's *operator*
  counterfactual and with the *operand* counterfactual (:func:`arithmech.data.pairs.make_operand_pairs`),
  and the heads both find;
* :func:`ensure_identify`, :func:`ensure_analyze`, :func:`ensure_accuracy`: the appendix's results, read
  from the model's results folder when they were made with the same parameters, else computed by the
  same functions the Identify and Analyze chapters call (the model is a parameter);

Table 1 (base / full SFT / precise SFT) is :mod:`arithmech.steps.table1`. The commands::

    python -m arithmech lrgrid --model smollm2-135m --results results          # each mode's learning rate
    python -m arithmech table1 --model smollm2-135m --results results
    python -m arithmech accuracy-by-template --model smollm2-135m --results results
    python -m arithmech counterfactuals --model smollm2-135m --task addition --results results
"""
from __future__ import annotations

import json
from pathlib import Path
import pandas as pd

from arithmech.data import pairs as D
from arithmech.data import templates as T
from arithmech.core.stats import wilson_interval
from arithmech.core import results as R
from arithmech.core import records
from arithmech.evals.measures import answer_scores
from arithmech.steps.identify import counterfactual_overlap, identify, operand_identify, write_results
from arithmech.core.models import load_model
from arithmech.core.inputs import common_arguments
from arithmech.core.inputs import POSITIVE



# --------------------------------------------------------------------------- accuracy per template
def _figure(template_id: str) -> str:
    return "Fig. 10" if any(t.id == template_id for t in T.FIG10) else "Fig. 8"


def accuracy_by_template(model, tok, task: str = "all", n_per_template: int = 16, seed: int = 0,
                         batch_size: int = 64) -> pd.DataFrame:
    """One row per template and one ``(all)`` row per operation: ``op, template, figure, family, example, n,
    correct, accuracy, ci_low, ci_high`` (Wilson 95%) ``, mean_p_answer`` (mean p({C}) at END)."""
    tpls = D.select_templates(task)
    samples, _ = D.make_pairs(tok, tpls, n=n_per_template * len(tpls), seed=seed)
    ok, p = answer_scores(model, tok, samples, batch_size)
    df = pd.DataFrame({"op": [s.op for s in samples], "template": [s.template for s in samples],
                       "family": [s.family for s in samples], "example": [s.clean for s in samples],
                       "ok": ok.int().numpy(), "p": p.numpy()})
    groups = [((op, tid), g) for (op, tid), g in df.groupby(["op", "template"], sort=False)]
    groups += [((op, "(all)"), g) for op, g in df.groupby("op", sort=False)]
    rows = []
    for (op, tid), g in groups:
        k, n = int(g.ok.sum()), len(g)
        lo, hi = wilson_interval(k, n)
        whole = tid == "(all)"
        rows.append({"op": op, "template": tid, "figure": "(all)" if whole else _figure(tid),
                     "family": "(all)" if whole else g.family.iloc[0],
                     "example": "" if whole else g.example.iloc[0], "n": n, "correct": k, "accuracy": k / n,
                     "ci_low": lo, "ci_high": hi, "mean_p_answer": float(g.p.mean())})
    return pd.DataFrame(rows)














def ensure_accuracy(model, tok, folder: str | Path, n_per_template: int = 16, seed: int = 0,
                    recompute: bool = False) -> pd.DataFrame:
    """``accuracy_by_template.csv`` of ``folder``, computed (every Fig. 8 / Fig. 10 template) when missing or
    made with other parameters."""
    if recompute or not R.made_with(folder, "accuracy", {"n_per_template": n_per_template, "seed": seed}):
        df = accuracy_by_template(model, tok, "all", n_per_template, seed)
        R.write_step(folder, "accuracy", {"accuracy_by_template.csv": df},
                     {"parameters": {"n_per_template": n_per_template, "seed": seed}})
    return R.read(folder, "accuracy_by_template.csv")




# -------------------------------------------------------------------------------------------- CLI
def _cli(a) -> None:
    folder = R.model_folder(a.results, a.model)
    step = "accuracy" if a.command == "accuracy-by-template" else "counterfactuals"
    R.check_writable(folder, step, a.overwrite)
    net, tok, _ = load_model(a.model, device=a.device, dtype=a.dtype)
    if step == "accuracy":
        df = ensure_accuracy(net, tok, folder, a.n_per_template, a.seed, recompute=True)
        print(df[df.template == "(all)"].to_string(index=False))
        return
    op = identify(net, tok, a.task, n_samples=a.n_samples, seed=a.seed, knockout=False, transfer=False)
    nd = operand_identify(net, tok, a.task, a.n_samples, a.seed, knockout=False)
    out = folder / "counterfactuals"
    write_results(op, out / "operator", model=a.model)
    write_results(nd, out / "operand", model=a.model)
    ov = counterfactual_overlap(op.effects, nd.effects, a.task)
    R.write_step(folder, "counterfactuals", {"counterfactual_overlap.json": ov}, {"operand_task": a.task})
    print(json.dumps({k: ov[k] for k in ("a", "b", "shared")}))


def add_cli(subparsers, name: str) -> None:
    """``accuracy-by-template`` or ``counterfactuals`` (operator vs operand counterfactual)."""
    if name == "accuracy-by-template":
        s = subparsers.add_parser(name, help="accuracy and p({C}) per template, with Wilson intervals")
        common_arguments(s)
        s.add_argument("--n-per-template", type=POSITIVE, default=16)
    else:
        s = subparsers.add_parser(name, help="identify with the operator and with the operand counterfactual")
        common_arguments(s, n_samples=128)
        s.add_argument("--task", default="addition")
    s.set_defaults(func=_cli)
