"""The introduction's scope box: what a 135M model can and cannot test about a 7B model's mechanism.

:func:`scope_box` takes the two SmolLM2 identify runs (``results/smollm2-135m/zero-shot/`` and
``results/smollm2-135m/``, each a :class:`~arithmech.identify.result.Ranking` the publisher reads) and states how many
of the paper's one-digit prompts the model answers right — the whole answer under greedy decoding
(``answer_tokens.csv``'s ``exact_correct`` of ``n_drawn``, every operation) — without and with solved examples; the
rest of the box is what follows from that for the book's verdicts.
It is written first in ``book/_generated/findings.md`` (:func:`arithmech.report.build.generate.write_generated`), so it
is on the introduction's first screen.
"""

from __future__ import annotations

from arithmech.core.stats import wilson_interval
from arithmech.identify.result import Ranking
from arithmech.paper import PAPER_CORRECT_PROB

MODEL = "smollm2-135m"


def _yield(run: Ranking | None) -> tuple[int, int] | None:
    """``(answered right, drawn)`` over every operation of an identify run, or None without its table."""
    if run is None or run.answer_tokens is None:
        return None
    t = run.answer_tokens
    t = t[(t.template == "all") & (t.task != "all")]
    return (int(t.exact_correct.sum()), int(t.n_drawn.sum())) if len(t) else None


def _rate(kn: tuple[int, int]) -> str:
    k, n = kn
    lo, hi = wilson_interval(k, n)
    return f"{k / n:.0%} ({k:,} of {n:,}; 95% {lo:.0%}–{hi:.0%})"


def scope_box(zero_shot: Ranking | None, pooled: Ranking | None) -> str | None:
    """The scope box as markdown, or None without the zero-shot run's table."""
    zero, few = _yield(zero_shot), _yield(pooled)
    if zero is None:
        return None
    shots = pooled.parameters.get("shots") if few and pooled is not None else None
    with_shots = f"; with {shots} solved examples before each prompt, {_rate(few)}" if few and shots else ""
    return "\n".join(
        [
            ":::{admonition} Scope: what SmolLM2-135M can and cannot test about LLaMA2-7B",
            ":class: important",
            "",
            f"Without solved examples SmolLM2-135M writes the whole right answer to {_rate(zero)} of the paper's "
            f"one-digit prompts (four operations){with_shots}. The paper's models put {PAPER_CORRECT_PROB:.0%} of "
            "their probability on the right answer of its addition prompts, on average (§3). Everything below is "
            "measured on the prompts the model answers right (X_r), a selection, whose circuit may mix calculation, "
            "format and guessing.",
            "",
            "**It can test** whether the paper's mechanism *exists* at this scale: whether a few heads at the last "
            "position carry the counterfactual's effect, read the operands or the operator, and are needed for the "
            "right answers on problems never ranked on, more than as many random heads; whether the methods and their "
            "controls behave on a real pretrained model; and precise fine-tuning at small scale, for a skill the "
            "base model lacks.",
            "",
            "**It cannot test** any negative about LLaMA2-7B. A rule that does not hold here — no head past the "
            "paper's −5%, top heads outside the middle layers, stages out of order — is a fact about this model on "
            "these prompts, not evidence against the paper's mechanism: the paper's rules and thresholds were set on "
            "a model that solves these prompts. Nor can it test the transfer of Fig. 4 or App. E, which need a model "
            "that solves those problems before any knockout.",
            "",
            "The count under each model below keeps the paper's own claims apart from the claims this book adds and "
            "from the controls of the method.",
            ":::",
        ]
    )
