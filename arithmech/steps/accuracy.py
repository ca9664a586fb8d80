"""Accuracy per template on any model (``python -m arithmech accuracy-by-template``): top-1 accuracy with its
Wilson 95% interval and the mean p({C}) per operation and template (``accuracy_by_template.csv``). The
SmolLM2 appendix reads it beside identify's yield: a pretrained model is a weak calculator, so the method
runs on the prompts it answers right (X_r).

The scored token is ``config.answer_token``, identify's rule by default (:class:`~arithmech.prompts.config.Accuracy`):
under ``"last-digit"`` a prompt carries the answer's leading digits and the table scores its last digit, the
token identify patches and knocks out; ``"first"`` scores the paper's first answer token. ``run.json`` records
the rule, and :func:`arithmech.pipeline.ensure.ensure` reuses a table only when it was scored with the rule asked
for.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from arithmech.core import admission, results
from arithmech.core.models import load_model
from arithmech.core.progress import Progress, announce
from arithmech.core.stats import wilson_interval
from arithmech.data import pairs, templates
from arithmech.evals.measures import answer_scores
from arithmech.prompts.config import Accuracy as Config


# --------------------------------------------------------------------------- accuracy per template
def _figure(template_id: str) -> str:
    return "Fig. 10" if any(t.id == template_id for t in templates.FIG10) else "Fig. 8"


def accuracy_by_template(
    model, tok, task: str = "all", n_per_template: int = 16, seed: int = 0, batch_size: int = 64, *, answer_token: str
) -> pd.DataFrame:
    """One row per template and one ``(all)`` row per operation: ``op, template, figure, family, example, n,
    correct, accuracy, ci_low, ci_high`` (Wilson 95%) ``, mean_p_answer`` (mean p({C}) at END), on pairs drawn
    under ``answer_token`` (:data:`arithmech.core.inputs.ANSWER_TOKENS`; ``example`` carries the leading digits
    under ``"last-digit"``)."""
    tpls = pairs.select_templates(task)
    samples, _ = pairs.make_pairs(
        tok, tpls, n=n_per_template * len(tpls), seed=seed, draw=pairs.Draw(answer_token, 0, 1)
    )
    ok, p = answer_scores(model, tok, samples, batch_size)
    df = pd.DataFrame(
        {
            "op": [s.op for s in samples],
            "template": [s.template for s in samples],
            "family": [s.family for s in samples],
            "example": [s.clean for s in samples],
            "ok": ok.int().numpy(),
            "p": p.numpy(),
        }
    )
    groups = [((op, tid), g) for (op, tid), g in df.groupby(["op", "template"], sort=False)]
    groups += [((op, "(all)"), g) for op, g in df.groupby("op", sort=False)]
    rows = []
    for (op, tid), g in groups:
        k, n = int(g.ok.sum()), len(g)
        lo, hi = wilson_interval(k, n)
        whole = tid == "(all)"
        rows.append(
            {
                "op": op,
                "template": tid,
                "figure": "(all)" if whole else _figure(tid),
                "family": "(all)" if whole else g.family.iloc[0],
                "example": "" if whole else g.example.iloc[0],
                "n": n,
                "correct": k,
                "accuracy": k / n,
                "ci_low": lo,
                "ci_high": hi,
                "mean_p_answer": float(g.p.mean()),
            }
        )
    return pd.DataFrame(rows)


def recorded(config: Config) -> dict:
    """What ``run.json`` records of a table made with ``config``: the parameters a reused table must match."""
    return {"n_per_template": config.n_per_template, "seed": config.seed, "answer_token": config.answer_token}


def run(config: Config, model=None, tok=None) -> Result:
    """Draw ``config.n_per_template`` prompts per Fig. 8 / Fig. 10 template under ``config.answer_token``, score
    them, write ``accuracy_by_template.csv`` to the model's folder (``model``/``tok``: an already loaded model);
    returns the :class:`Result` read back from it (:func:`read`)."""
    c = config
    folder = results.model_folder(c.results, c.model_name)
    results.check_writable(folder, "accuracy", c.overwrite)
    est = admission.check(c)  # refused here when it cannot fit, before the model loads
    announce("accuracy-by-template", est.line() if est else "")
    with Progress("accuracy-by-template", 1) as bar:
        if model is None:
            model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype)
        df = accuracy_by_template(model, tok, "all", c.n_per_template, c.seed, answer_token=c.answer_token)
        bar.advance()
    results.write_step(folder, "accuracy", {"accuracy_by_template.csv": df}, {"parameters": recorded(c)})
    return read(folder, c)


@dataclass(frozen=True)
class Result:
    """The step's file as a run made with ``config`` wrote it (:func:`read`; what
    :func:`arithmech.pipeline.ensure.ensure` returns for an :class:`Accuracy` config):

    * ``table`` — ``accuracy_by_template.csv`` (checked): accuracy, its Wilson interval and the mean p(answer) per
      operation and template, and per operation over every template (``template == "(all)"``);
    * ``config`` — the config the file was made with (or reused for)."""

    config: Config
    table: pd.DataFrame


def read(folder, config: Config) -> Result:
    """``accuracy_by_template.csv`` of ``folder`` (checked), as the :class:`Result` of a run made with ``config``."""
    return Result(config=config, table=results.read(folder, "accuracy_by_template.csv"))


def summary(result: Result) -> str:
    """The command line's summary: the accuracy over every template, per task."""
    df = result.table
    return df[df.template == "(all)"].to_string(index=False)
