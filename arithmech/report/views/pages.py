"""What every chapter's page shares: its last cell, its claims' lines and the sentence under answer tokens.

* :func:`chapter_end` — a chapter's last cell: glues the chapter's "what this run found" (shown under
  its title through ``{glue:md}``) and prints a footer naming the model the page actually ran on.
* :func:`claim_lines` — the claims a chapter names, each with its verdict and this run's numbers
  (:func:`finetune_lines`: a fine-tuning run's accuracies per benchmark).
* :func:`answer_token_sentence` — the one sentence a page prints under a table or a view of answer tokens,
  naming the answer-token rule its files record (:data:`arithmech.core.inputs.ANSWER_TOKENS`).

The introduction's findings box and the rules page: :mod:`arithmech.report.views.findings`; how a table reads:
:mod:`arithmech.report.views.table_display`.
"""

from __future__ import annotations

import pandas as pd

from arithmech.claims.decide import claims
from arithmech.claims.evidence import Context
from arithmech.identify.config import Identify
from arithmech.report.views.table_display import claim_verdict
from arithmech.report.views.tables import setting_name

# What each answer-token rule scores (arithmech.data.pairs' docstring), as a clause of a sentence.
ANSWER_TOKEN_RULES = {
    "last-digit": "the prompt carries the answer's leading digits and the scored token is its last digit "
    '("3 + 9 = 1" → "2"), which depends on both operands',
    "single-token": 'only pairs whose whole answer is one token are drawn ("3 + 4 =" → "7")',
    "first": 'the scored token is the answer\'s first token, the paper\'s rule ("3 + 9 =" → "1", as for '
    "every sum from 10 to 18)",
}


def _footer(model_name: str, params) -> str:
    """The page's last line: the model and the parameters (a dict or a chapter config) it ran with."""
    values = params.as_dict() if hasattr(params, "as_dict") else dict(params)
    shown = ", ".join(
        f"`{k}={list(v) if isinstance(v, tuple) else v!r}`" for k, v in values.items() if k != "model_name"
    )
    return (
        f"*This page was executed on the model **{model_name}** by `python -m arithmech book`"
        + (f" with {shown}" if shown else "")
        + ". Every chapter's parameters and how to re-run it on "
        "another model: [Parameters](appendix_parameters.md).*"
    )


def chapter_end(findings: list[str], model_name: str, params=None, real: list[str] | None = None) -> None:
    """A chapter's last cell: glue ``findings`` (3–5 computed lines) as the markdown the chapter's
    "What this run found" box shows (``{glue:md} findings``), and display the footer naming ``model``.
    ``real``: the lines of the model that can test the chapter's claims (:func:`shipped_lines`), which lead the
    box; ``findings`` then follow as this build's model's."""
    from IPython.display import Markdown, display  # lazy: the book extra (a kernel)
    from myst_nb import glue  # lazy: the book extra

    glue("findings", Markdown(findings_markdown(findings, model_name, real)), display=False)
    display(Markdown(_footer(model_name, params or {})))


REAL = ("smollm2-135m", "SmolLM2-135M")  # the model whose shipped results can test the paper's claims here


def shipped_lines(real: Context, ids) -> list[str]:
    """:func:`claim_lines` of the claims ``ids`` decided on ``real``, :data:`REAL`'s shipped results
    (``results/smollm2-135m/``); ``[]`` where they are not there."""
    return [] if real.identify_files.effects is None else claim_lines(claims(real, ids), ids)


def findings_markdown(findings: list[str], model_name: str, real: list[str] | None = None) -> str:
    """The box's markdown: ``real``'s lines first under :data:`REAL`'s name, then ``findings`` under the model
    this page ran on (bullets only, as before, where there are no ``real`` lines)."""
    bullets = lambda lines: "\n".join(f"* {line}" for line in lines)
    if not real or model_name == REAL[0]:
        return bullets(findings)
    return (
        f"**{REAL[1]}** (its shipped results, the model that can test these claims):\n\n{bullets(real)}\n\n"
        f"**{model_name}** (this build's model; its verdicts check the machinery, not the paper):\n\n"
        f"{bullets(findings)}"
    )


def answer_token_sentence(rule: str, identify_rule: str | None = None) -> str:
    """One sentence naming the answer-token ``rule`` a table or view was scored with, read by the caller from
    what its step recorded (``run.json``, the explorer's ``prompts`` table), never typed; it says whether that
    is ``identify_rule`` (the rule of identify's files beside it) or, without one, identify's default."""
    if rule not in ANSWER_TOKEN_RULES:
        raise ValueError(f"answer token {rule!r}: use one of {', '.join(ANSWER_TOKEN_RULES)}")
    if identify_rule:
        tail = (
            "the rule identify's files here were measured with"
            if rule == identify_rule
            else f"identify's files here were measured with `{identify_rule}`"
        )
    else:
        default = Identify.__dataclass_fields__["answer_token"].default
        tail = "identify's default rule" if rule == default else f"identify's default is `{default}`"
    return f'Scored under `answer_token = "{rule}"`: {ANSWER_TOKEN_RULES[rule]}; {tail}.'


def claim_lines(claims: pd.DataFrame, ids) -> list[str]:
    """``"<claim>: **holds** (<this run>)"`` for the claims ``ids`` (ids of :mod:`arithmech.claims.decide`,
    in that order; an id the frame lacks is a ``KeyError``); a claim ruled out here reads ``**not testable**``
    (:func:`~arithmech.report.views.table_display.claim_verdict`), its account as the claims tables give it."""
    rows = claims.set_index("id").loc[list(ids)].reset_index()
    return [f"{r['claim']}: **{claim_verdict(r['holds'], r['here'])}** ({r['here']})" for _, r in rows.iterrows()]


def finetune_lines(records: list[dict], names: dict[str, str] | None = None) -> list[str]:
    """One line per benchmark: base → each record's accuracy (with its 95% interval and n where the
    record has them), from fine-tune records (:func:`arithmech.table1.finetune.run`)."""
    names = names or {}
    pct = lambda m: f"{m['value']:.0%} [{m['ci'][0]:.0%}, {m['ci'][1]:.0%}]" if m.get("ci") else f"{m['value']:.0%}"
    out = []
    for b, m in records[0]["base"].items():
        runs = "; ".join(f"{setting_name(r)} {pct(r['results'][b])}" for r in records if b in r["results"])
        n = f" (n = {m['n']})" if m.get("n") else ""
        out.append(f"{names.get(b, b)}{n}: base {pct(m)} → {runs}")
    return out
