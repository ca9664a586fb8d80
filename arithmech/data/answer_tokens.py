"""What the answer token lets a measurement see, and whether each counterfactual really changes the answer.

Two checks on the prompts an identify run keeps (its X_r), reported per template in
``answer_tokens.csv`` (:func:`answer_token_table`):

* **the majority-answer floor** — the share of kept prompts whose answer token is the most frequent
  one. A model (or a knocked-out model) that always writes that token scores this much, so an accuracy
  at or below it says nothing about the calculation. Under the paper's answer token (``"first"``) and a
  tokenizer that splits digits, every sum >= 10 has the answer token "1"; under ``"last-digit"`` the
  token depends on both operands (:mod:`arithmech.data.pairs`);
* **the counterfactual check** (:func:`check_counterfactuals`) — X_c must take the answer away: a pair
  whose X_c still makes the model's top-1 next token the X_r answer token is dropped and counted
  (``xc_checked`` pairs, ``xc_passed`` kept), for operator and operand counterfactuals alike.

A majority floor ignores what the prompt carries. Under ``"last-digit"`` a prompt carries the operation and
the answer's leading digits (:attr:`Sample.carried`), and one operand may pin the rest: "7 times B = 5|" leaves
only B = 8. :func:`conditioned_floor` is the accuracy of the best of a few predictors that read only that —
the most frequent answer within the groups :data:`FLOOR_GROUPS` — each scored leave-one-out, so that a
prompt alone in its group does not predict itself.

Beside the answer-token accuracy the table gives the exact match of the whole answer under greedy
decoding (:func:`arithmech.evals.scoring.greedy_exact` after :attr:`Sample.bare`).

>>> keep, passed = check_counterfactuals(model, tok, kept)          # passed: list of bool, one per sample
>>> summary = template_summary(samples, correct, exact, passed)   # passed: None where not checked
>>> answer_token_table({"addition": {"answer_token": "last-digit", "templates": summary}})
>>> conditioned_floor(kept)          # {"correct", "n", "accuracy", "by": "op, carried, a", "by_group": {...}}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pandas as pd

from arithmech.data.pairs import Sample

TABLE_COLUMNS = (
    "task",
    "template",
    "answer_token",
    "n_drawn",
    "correct",
    "accuracy",
    "exact",
    "exact_match",
    "exact_correct",
    "xc_checked",
    "xc_passed",
    "xc_pass_rate",
    "n",
    "top_token",
    "top_share",
)


def template_summary(
    samples: Sequence[Sample],
    correct: Sequence[bool],
    exact: Sequence[bool],
    passed: Sequence[bool | None],
    checked: bool = True,
) -> dict:
    """Per template, the counts behind ``answer_tokens.csv`` (JSON-ready, kept in ``run.json``).

    ``correct[i]``: the answer token is the top-1 next token; ``exact[i]``: greedy decoding writes the
    whole answer; a sample is right (X_r, ``exact_correct``) when both hold; ``passed[i]``: the X_c check of
    a right sample (None where not checked: the sample is not right). ``checked=False``: no X_c check was
    made, every right sample is kept and ``xc_*`` stay 0. Returns ``{template: {n_drawn, correct, exact,
    exact_correct, xc_checked, xc_passed, answers: {token: count over kept}}}``."""
    out: dict[str, dict] = {}
    for s, c, e, p in zip(samples, correct, exact, passed):
        row = out.setdefault(
            s.template,
            {
                "n_drawn": 0,
                "correct": 0,
                "exact": 0,
                "exact_correct": 0,
                "xc_checked": 0,
                "xc_passed": 0,
                "answers": {},
            },
        )
        row["n_drawn"] += 1
        row["correct"] += bool(c)
        row["exact"] += bool(e)
        row["exact_correct"] += bool(c and e)
        row["xc_checked"] += checked and c and e and p is not None
        row["xc_passed"] += checked and c and e and bool(p)
        if c and e and (p or not checked):
            row["answers"][s.answer] = row["answers"].get(s.answer, 0) + 1
    for row in out.values():
        row["answers"] = dict(sorted(row["answers"].items()))
    return out


def _row(task: str, template: str, variant: str, rows: Sequence[dict]) -> dict:
    total = lambda k: sum(r[k] for r in rows)
    answers: Counter[str] = Counter()
    for r in rows:
        answers.update(r["answers"])
    n = sum(answers.values())
    # most frequent answer token; ties broken by the token's text, so the file is deterministic
    top, k = min(answers.items(), key=lambda kv: (-kv[1], kv[0])) if answers else ("", 0)
    ratio = lambda a, b: a / b if b else float("nan")
    return {
        "task": task,
        "template": template,
        "answer_token": variant,
        "n_drawn": total("n_drawn"),
        "correct": total("correct"),
        "accuracy": ratio(total("correct"), total("n_drawn")),
        "exact": total("exact"),
        "exact_match": ratio(total("exact"), total("n_drawn")),
        "exact_correct": total("exact_correct"),
        "xc_checked": total("xc_checked"),
        "xc_passed": total("xc_passed"),
        "xc_pass_rate": ratio(total("xc_passed"), total("xc_checked")),
        "n": n,
        "top_token": top,
        "top_share": ratio(k, n),
    }


def answer_token_table(info: dict) -> pd.DataFrame:
    """``answer_tokens.csv`` from an identify run's ``info`` (``{task: prepare's info}``): one row per
    task × template, one ``template = "all"`` row per task, and a ``task = "all"`` row over every task when
    there are several. Columns :data:`TABLE_COLUMNS`: counts (``n_drawn``, ``correct``, ``exact``,
    ``exact_correct`` = both, the X_r before the X_c check),
    ``xc_checked``, ``xc_passed``, ``n`` = kept X_r), their rates, and the most frequent answer token
    among the kept prompts with its share ``top_share`` — the accuracy of always answering it (the floor).
    Every task's info has its ``templates`` (:func:`arithmech.methods.prepare.prepare` counts them, ready-made
    samples included); no info, no rows."""
    out, every = [], []
    for task, i in info.items():
        variant = i["answer_token"]  # prepare records the rule it drew with
        rows = list(i["templates"].items())
        out += [_row(task, t, variant, [r]) for t, r in rows]
        out.append(_row(task, "all", variant, [r for _, r in rows]))
        every.append((variant, [r for _, r in rows]))
    if len(every) > 1:
        variants = sorted({v for v, _ in every})
        out.append(_row("all", "all", "/".join(variants), [r for _, rs in every for r in rs]))
    return pd.DataFrame(out, columns=list(TABLE_COLUMNS))


# ------------------------------------------------------------------------------- the conditioned floor
FLOOR_GROUPS = (("op", "carried"), ("op", "carried", "a"), ("op", "carried", "b"))
"""The predictors of :func:`conditioned_floor`: the most frequent answer token among the prompts that share
these fields (the operation, the carried leading digits, and one operand or none)."""


def _loo_top(counts: Counter, own: str) -> str | None:
    """The most frequent answer of a group with one prompt (answer ``own``) taken out; ties: smallest text."""
    best = None
    for answer, c in counts.items():
        c -= answer == own
        if c > 0 and (best is None or (-c, answer) < best):
            best = (-c, answer)
    return None if best is None else best[1]


def _loo_correct(samples: Sequence[Sample], fields: tuple[str, ...]) -> int:
    """How many prompts the group majority of ``fields`` predicts right, leave-one-out; a prompt whose group
    has no other prompt falls back to the coarser group (the last field dropped, down to every prompt)."""
    chain = [fields[:k] for k in range(len(fields), -1, -1)]
    counts: dict[tuple[str, ...], dict[tuple, Counter[str]]] = {f: {} for f in chain}
    key = lambda s, f: tuple(getattr(s, x) for x in f)
    for s in samples:
        for f in chain:
            counts[f].setdefault(key(s, f), Counter())[s.answer] += 1
    right = 0
    for s in samples:
        for f in chain:
            guess = _loo_top(counts[f][key(s, f)], s.answer)
            if guess is not None:
                right += guess == s.answer
                break
    return right


def conditioned_floor(samples: Sequence[Sample]) -> dict:
    """The accuracy of guessing the answer token from what the prompt carries, not from the calculation.

    For each grouping of :data:`FLOOR_GROUPS`, prompt ``i`` is predicted as the most frequent answer token
    among the *other* prompts of its group (ties: the smallest token text; a group of one falls back to
    the coarser group: ``(op, carried, a)`` → ``(op, carried)`` → ``(op,)`` → every prompt). The floor is the
    best grouping's count. Returns ``{"correct", "n", "accuracy", "by": the best grouping, "by_group":
    {grouping: correct}}`` (accuracy NaN for no prompt)."""
    by = {", ".join(f): _loo_correct(samples, f) for f in FLOOR_GROUPS}
    best = min(by, key=lambda g: (-by[g], list(by).index(g)))  # the first grouping among equals
    n = len(samples)
    return {"correct": by[best], "n": n, "accuracy": by[best] / n if n else float("nan"), "by": best, "by_group": by}
