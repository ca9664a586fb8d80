"""How pairs are drawn: one small frozen value that travels from a step's config to every draw.

A step's ``Config`` builds it once (:meth:`arithmech.identify.config.Identify.to_draw`) and passes it down: X_r
and X_c (:func:`arithmech.data.pairs.make_pairs`), the knockout's prompts, the reference pool of the means,
the held-out family of the transfer test. It is checked here, once, when it is made; it has no default of
its own for these settings (the step configs' are the only ones), and nothing below it has one.

>>> Draw("last-digit", 0, 1)                    # zero-shot: no solved examples (the one set is not used)
>>> Draw("last-digit", shots=2, example_sets=16) # two solved examples; 16 sets of them per template
>>> Draw("last", 0, 1)                           # ValueError: answer_token='last': use one of ...
>>> Draw("last-digit", 2)                        # TypeError: every setting is given, none defaults here
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from arithmech.core.inputs import ANSWER_TOKENS
from arithmech.data import shots as shots_module


@dataclass(frozen=True)
class Draw:
    """The draw settings every pair of a run shares.

    Attributes:
        answer_token: which answer token is measured, one of :data:`arithmech.core.inputs.ANSWER_TOKENS`
            (``"last-digit"``: the prompt carries the answer's leading digits; ``"single-token"``: one-token
            answers only; ``"first"``: the paper's first answer token; :mod:`arithmech.data.pairs`).
        shots: solved examples of mixed operations before every X_r and X_c (:mod:`arithmech.data.shots`);
            0 is the paper's zero-shot prompts.
        example_sets: sets of solved examples per template, which its prompts take in turn
            (:func:`arithmech.data.shots.set_index`); 1 or more, and not used at zero shots (a zero-shot draw
            has no examples; pass 1).
    """

    answer_token: str
    shots: int
    example_sets: int

    def __post_init__(self) -> None:
        if self.answer_token not in ANSWER_TOKENS:
            raise ValueError(f"answer_token={self.answer_token!r}: use one of {', '.join(ANSWER_TOKENS)}")
        if isinstance(self.shots, bool) or not isinstance(self.shots, int) or self.shots < 0:
            raise ValueError(f"shots={self.shots!r}: the number of solved examples is a whole number, 0 or more")
        if isinstance(self.example_sets, bool) or not isinstance(self.example_sets, int) or self.example_sets < 1:
            raise ValueError(
                f"example_sets={self.example_sets!r}: at least one set of examples per template "
                f"(identify's is {shots_module.EXAMPLE_SETS})"
            )

    @classmethod
    def from_record(cls, params: dict) -> Draw:
        """The draw a run's recorded identify ``parameters`` (``run.json``) were made with, for a later step that
        redraws what identify drew (its reference pool, its held-out side). A record without ``answer_token`` or
        ``shots``, or a few-shot one without ``examples``, is refused (every identify record has them since the
        shipped records were migrated); a zero-shot record has no ``examples`` (one set, unused)."""
        for key in ("answer_token", "shots"):
            if key not in params:
                raise ValueError(f"the identify record names no {key}: re-run python -m arithmech identify")
        if int(params["shots"]) and "examples" not in params:
            raise ValueError("the few-shot identify record names no examples: re-run python -m arithmech identify")
        sets = re.match(r"(\d+) set", params.get("examples", ""))
        return cls(params["answer_token"], int(params["shots"]), int(sets.group(1)) if sets else 1)

    def example_set(self, k: int, n_templates: int) -> int | None:
        """The example set of the ``k``-th prompt drawn over ``n_templates`` templates taken round-robin
        (:func:`arithmech.data.shots.set_index`); ``None`` with one set or none."""
        return shots_module.set_index(k, n_templates, self.example_sets)

    def recorded(self) -> dict:
        """What ``run.json`` records of the examples besides ``shots`` (:func:`arithmech.data.shots.recorded`)."""
        return shots_module.recorded(self.shots, self.example_sets)
