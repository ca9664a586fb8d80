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

Beside the answer-token accuracy the table gives the exact match of the whole answer under greedy
decoding (:func:`arithmech.evals.scoring.greedy_exact` after :attr:`Sample.bare`).

>>> keep, passed = check_counterfactuals(model, tok, kept)          # passed: list of bool, one per sample
>>> summary = template_summary(samples, correct, exact, passed)   # passed: None where not checked
>>> answer_token_table({"addition": {"answer_token": "last-digit", "templates": summary}})
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import pandas as pd

from arithmech.data.pairs import Sample

TABLE_COLUMNS = ("task", "template", "answer_token", "n_drawn", "correct", "accuracy", "exact", "exact_match",
                 "xc_checked", "xc_passed", "xc_pass_rate", "n", "top_token", "top_share")


def template_summary(samples: Sequence[Sample], correct: Sequence[bool], exact: Sequence[bool],
                     passed: Sequence[bool | None], checked: bool = True) -> dict:
    """Per template, the counts behind ``answer_tokens.csv`` (JSON-ready, kept in ``run.json``).

    ``correct[i]``: the answer token is the top-1 next token; ``exact[i]``: greedy decoding writes the
    whole answer; ``passed[i]``: the X_c check (None where not checked: the sample is not correct).
    ``checked=False``: no X_c check was made, every correct sample is kept and ``xc_*`` stay 0. Returns
    ``{template: {n_drawn, correct, exact, xc_checked, xc_passed, answers: {token: count over kept}}}``."""
    out: dict[str, dict] = {}
    for s, c, e, p in zip(samples, correct, exact, passed):
        row = out.setdefault(s.template, {"n_drawn": 0, "correct": 0, "exact": 0, "xc_checked": 0,
                                          "xc_passed": 0, "answers": {}})
        row["n_drawn"] += 1
        row["correct"] += bool(c)
        row["exact"] += bool(e)
        row["xc_checked"] += checked and p is not None
        row["xc_passed"] += checked and bool(p)
        if c and (p or not checked):
            row["answers"][s.answer] = row["answers"].get(s.answer, 0) + 1
    for row in out.values():
        row["answers"] = dict(sorted(row["answers"].items()))
    return out


def _row(task: str, template: str, variant: str, rows: Sequence[dict]) -> dict:
    total = lambda k: sum(r[k] for r in rows)
    answers = Counter()
    for r in rows:
        answers.update(r["answers"])
    n = sum(answers.values())
    # most frequent answer token; ties broken by the token's text, so the file is deterministic
    top, k = min(answers.items(), key=lambda kv: (-kv[1], kv[0])) if answers else ("", 0)
    ratio = lambda a, b: a / b if b else float("nan")
    return {"task": task, "template": template, "answer_token": variant, "n_drawn": total("n_drawn"),
            "correct": total("correct"), "accuracy": ratio(total("correct"), total("n_drawn")),
            "exact": total("exact"), "exact_match": ratio(total("exact"), total("n_drawn")),
            "xc_checked": total("xc_checked"), "xc_passed": total("xc_passed"),
            "xc_pass_rate": ratio(total("xc_passed"), total("xc_checked")), "n": n, "top_token": top,
            "top_share": ratio(k, n)}


def answer_token_table(info: dict) -> pd.DataFrame:
    """``answer_tokens.csv`` from an identify run's ``info`` (``{task: prepare's info}``): one row per
    task × template, one ``template = "all"`` row per task, and a ``task = "all"`` row over every task when
    there are several. Columns :data:`TABLE_COLUMNS`: counts (``n_drawn``, ``correct``, ``exact``,
    ``xc_checked``, ``xc_passed``, ``n`` = kept X_r), their rates, and the most frequent answer token
    among the kept prompts with its share ``top_share`` — the accuracy of always answering it (the floor).
    Tasks whose info has no ``templates`` (ready-made sample lists drawn before this table existed) are left out."""
    out, every = [], []
    for task, i in info.items():
        if "templates" not in i:
            continue
        variant = i.get("answer_token", "first")
        rows = list(i["templates"].items())
        out += [_row(task, t, variant, [r]) for t, r in rows]
        out.append(_row(task, "all", variant, [r for _, r in rows]))
        every.append((variant, [r for _, r in rows]))
    if len(every) > 1:
        variants = sorted({v for v, _ in every})
        out.append(_row("all", "all", "/".join(variants), [r for _, rs in every for r in rs]))
    return pd.DataFrame(out, columns=list(TABLE_COLUMNS))
