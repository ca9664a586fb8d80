"""The operand counterfactual beside the paper's operator counterfactual (``python -m arithmech counterfactuals``).

Identify runs twice on ``config.task`` (path patching only): once with X_c changing the operator, once
changing an operand (:func:`arithmech.steps.identify.operand_identify`); ``counterfactual_overlap.json``
names the heads both find, with each one's effect under both. Everything goes to ``<model folder>/counterfactuals/``,
apart from the book's own overlap (beside identify's files, :func:`arithmech.steps.identify.operand`).
"""

from __future__ import annotations

import json

from arithmech.core import results
from arithmech.core.models import load_model
from arithmech.methods.ablation.overlap import counterfactual_overlap
from arithmech.steps.config import Counterfactuals as Config
from arithmech.steps.identify import operand_identify, write_results
from arithmech.steps.identify_pipeline import identify


def run(config: Config) -> dict:
    """Both identify runs into ``<folder>/counterfactuals/{operator,operand}/`` and the overlap file."""
    c = config
    folder = results.model_folder(c.results, c.model_name)
    results.check_writable(folder / "counterfactuals", "counterfactuals", c.overwrite)
    model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype)
    op = identify(model, tok, c.task, n_samples=c.n_samples, seed=c.seed, knockout=False, transfer=False)
    nd = operand_identify(model, tok, c.task, n_samples=c.n_samples, seed=c.seed, knockout=False)
    out = folder / "counterfactuals"
    write_results(op, out / "operator", model_name=c.model_name)
    write_results(nd, out / "operand", model_name=c.model_name)
    overlap = counterfactual_overlap(op.effects, nd.effects, c.task)
    results.write_step(out, "counterfactuals", {"counterfactual_overlap.json": overlap}, {"operand_task": c.task})
    return overlap


def summary(overlap: dict) -> str:
    """The command line's summary: the heads each counterfactual finds and those both find."""
    return json.dumps({k: overlap[k] for k in ("a", "b", "shared")})
