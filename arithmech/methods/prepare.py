"""The identify step's samples: draw (X_r, X_c) pairs of a task, keep what the model answers right, and
keep only pairs whose counterfactual changes the answer.

"Right" is two checks, both needed: the measured answer token is the model's top-1 next token, *and*
greedy decoding from the prompt before the whole answer (:attr:`Sample.bare`) writes the whole answer
(:func:`~arithmech.evals.scoring.greedy_exact`). The token alone is not enough under
``answer_token="last-digit"``: the prompt hands the model the answer's leading digits, which it may not
have written itself (SmolLM2: 584 prompts right by the token, 337 by the whole answer).

>>> kept, info = prepare(model, tok, "addition", n_samples=128, seed=0, draw=Draw("last-digit", 0, 1))
>>> info["n_drawn"], info["n_correct"], info["n_exact_correct"], info["n_kept"], info["exact_match"]

``info`` (recorded per task in ``run.json``'s ``samples``) holds the answer-token accuracy, the exact match
of the whole answer (greedy), the counterfactual check's counts and, per template, the counts behind
``answer_tokens.csv`` (:mod:`arithmech.data.answer_tokens`).
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from arithmech.data import pairs, templates
from arithmech.data.answer_tokens import template_summary
from arithmech.data.draw import Draw
from arithmech.evals.scoring import check_counterfactuals, filter_correct, greedy_exact


class NoReferenceData(ValueError):
    """Nothing is left to patch: no prompt answered right, or none whose X_c moves the answer. ``info`` holds
    the counts :func:`prepare` measured on the way (a yield of zero is a result too)."""

    def __init__(self, message: str, info: dict):
        super().__init__(message)
        self.info = info


def task_templates(task) -> tuple[str, list[templates.Template]]:
    """``(label, templates)`` for a task name, a template-pair file or a list of templates."""
    if isinstance(task, (list, tuple)):
        return "custom", list(task)
    task = str(task)
    if task.endswith((".json", ".jsonl")) or Path(task).is_file():
        return Path(task).stem, pairs.load_template_pairs(task)
    return task, pairs.select_templates(task)


def ready_made(task) -> bool:
    """Whether ``task`` is a list of ready :class:`~arithmech.data.pairs.Sample` (nothing to draw from)."""
    return isinstance(task, (list, tuple)) and bool(task) and isinstance(task[0], pairs.Sample)


def task_label(task) -> str:
    """A short name for a task: its name, a file's stem, the id of a single template, else ``custom``."""
    if ready_made(task):
        return "custom"
    if isinstance(task, (list, tuple)):
        return task[0].id if len(task) == 1 else "custom"
    return task_templates(task)[0]


def prepare(
    model, tok, task, n_samples: int, seed: int, batch_size: int = 64, *, draw: Draw, check_xc: bool = True
) -> tuple[list[pairs.Sample], dict]:
    """Draw ``n_samples`` pairs of ``task``, keep those the model answers right (the paper's X_r: the answer
    token is top-1 and greedy decoding writes the whole answer) and, with ``check_xc``, whose X_c moves the
    model's top-1 token away from the answer token.

    ``task``: an operation, ``fig8``, ``fig10``, ``exponentiation``, a template-pair file, a list of
    templates, or a list of ready :class:`~arithmech.data.pairs.Sample` (e.g. :func:`gsm8k_samples`,
    operand pairs; drawn with their own variant, so ``draw`` is not applied to them).
    ``draw``: the answer token, solved examples and example sets of drawn pairs (:class:`~arithmech.data.draw.Draw`).

    Returns ``(kept, info)``; ``info``: ``n_drawn``, ``n_correct`` (answer token right), ``n_exact_correct``
    (answer token right and the whole answer written), ``n_kept`` (also passing the X_c check), ``accuracy``
    (answer-token, of the drawn), ``exact_match`` (whole answer, greedy, of the drawn), ``redrawn``,
    ``accuracy_by_template``, ``answer_token``, ``counterfactual_check`` (``checked``, ``passed``, ``dropped``) and
    ``templates`` (:func:`~arithmech.data.answer_tokens.template_summary`).
    """
    if n_samples < 1:
        raise ValueError(f"n_samples={n_samples}: need at least one sample")
    samples, stats, variant = _draw(tok, task, n_samples, seed, draw)
    correct_s, acc = filter_correct(model, tok, samples, batch_size)
    correct_ids = {id(s) for s in correct_s}
    correct = [id(s) in correct_ids for s in samples]
    # whole answer (greedy) where the answer token is right: greedy decoding that writes the whole answer has
    # written its leading digits and then the answer token, so elsewhere it is not exact; decoding only these
    # prompts saves most of the decoding (a weak model gets few answer tokens right)
    got = iter(greedy_exact(model, tok, [(s.bare, s.target) for s in correct_s], batch_size=batch_size))
    exact = [next(got) if c else False for c in correct]
    both = [c and e for c, e in zip(correct, exact)]
    right = [s for s, b in zip(samples, both) if b]  # X_r: the token and the whole answer right
    if check_xc:
        kept, flags = check_counterfactuals(model, tok, right, batch_size)
    else:
        kept, flags = list(right), [True] * len(right)
    passed = iter(flags)
    per_sample = [next(passed) if b else None for b in both]
    info = {
        "n_drawn": len(samples),
        "n_correct": len(correct_s),
        "n_exact_correct": len(right),
        "n_kept": len(kept),
        "accuracy": len(correct_s) / len(samples),
        "exact_match": sum(exact) / len(samples),
        "redrawn": stats.redrawn,
        "accuracy_by_template": acc,
        "answer_token": variant,
        "counterfactual_check": {
            "checked": len(right) if check_xc else 0,
            "passed": len(kept) if check_xc else 0,
            "dropped": len(right) - len(kept),
        },
        "templates": template_summary(samples, correct, exact, per_sample, checked=check_xc),
    }
    if not kept:
        _refuse(task, len(samples), len(correct_s), len(right), info)
    return kept, info


def _draw(tok, task, n_samples: int, seed: int, draw: Draw) -> tuple[list[pairs.Sample], pairs.PairStats, str]:
    """The pairs to check: the first ``n_samples`` of ready-made samples (their own answer tokens), or
    ``n_samples`` drawn from the task's templates with ``draw``. Returns ``(samples, stats, answer_token)``."""
    if ready_made(task):
        samples, stats = task[:n_samples], pairs.PairStats(made=len(task[:n_samples]))
        return samples, stats, "/".join(sorted({s.answer_token for s in samples}))
    _, tpls = task_templates(task)
    samples, stats = pairs.make_pairs(tok, tpls, n=n_samples, seed=seed, draw=draw)
    return samples, stats, draw.answer_token


def _refuse(task, n_drawn: int, n_correct: int, n_right: int, info: dict) -> NoReturn:
    """No pair left: raise :class:`NoReferenceData` saying why (the model answers none right, or every X_c leaves
    its answer in place) and what to try, with ``info``."""
    what = (
        task
        if isinstance(task, str)
        else "of templates " + ", ".join(getattr(t, "id", getattr(t, "template", "?")) for t in task[:5])
    )
    if not n_right:
        raise NoReferenceData(
            f"the model answers none of the {n_drawn} prompts {what} right ({n_correct} "
            "by the answer token, none also writing the whole answer), so there is no reference "
            "data X_r to patch; use a task the model can do (see `python -m arithmech accuracy`) "
            "or more samples",
            info,
        )
    raise NoReferenceData(
        f"the model answers {n_right} of the {n_drawn} prompts {what} right, but on "
        "every one of their counterfactuals X_c its top-1 token is still the answer, so no pair "
        "is left to patch; use another counterfactual or more samples",
        info,
    )
