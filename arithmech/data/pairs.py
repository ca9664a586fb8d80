"""Reference / counterfactual prompt pairs (the paper's X_r and X_c), seeded and tokenizer-aware.

``make_pairs`` renders templates from :mod:`arithmech.data.templates` with random operands and
pool words, and keeps a pair only when, under the model's tokenizer,

1. the answer token ``{C}`` follows the prompt on a token boundary (a prompt ends with the space
   token where the tokenizer writes one before a digit), chosen by the *answer-token variant*
   (:data:`arithmech.core.inputs.ANSWER_TOKENS`, :func:`split_answer`), and
2. ``X_r`` and ``X_c`` have the same number of tokens, so that position ``END`` means the
   same thing in both. A pair that fails is re-drawn (other neutral words/symbols and pool
   words) and counted in ``PairStats.redrawn``; a template that never succeeds raises
   :class:`TemplateLengthError`.

**Answer-token variants.** Tokenizers that split digits (LLaMA2, SmolLM2, the embedded model) write
"12" as "1", "2": with the paper's prompt, which ends before the answer, every sum >= 10 has the answer
token "1", and a knockout or a patching effect then measures "is the sum at least 10?".

* ``"last-digit"`` — the prompt carries the answer's leading digits and the answer token is its last
  digit ("3 + 9 = 1" → "2"), which depends on both operands; ``X_c`` carries the same leading digits;
* ``"single-token"`` — only draws whose whole answer is one token are kept ("3 + 4 =" → "7");
* ``"first"`` — the paper's: the answer's first token ("3 + 9 =" → "1").

``Sample.answer`` is the answer token's text, ``Sample.target`` the whole answer, ``Sample.carried`` the
leading digits the prompt carries (``""`` unless ``"last-digit"`` and a multi-digit answer).

``filter_correct`` then keeps the samples the model answers right: the paper's X_r.
Token positions of ``{A}``, ``{B}`` and the operator are stored with each sample for the
attention-by-role analysis. Nothing here imports a model class. Batching prompts by length and the answer
token's id are :mod:`arithmech.data.batches`'.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

from arithmech.core.inputs import quoted
from arithmech.core.results import read
from arithmech.core.safe_read import ResultsError
from arithmech.data import shots as shots_module
from arithmech.data import templates as templates_module
from arithmech.data.answers import PAIRS_DIVISION, draw_operands
from arithmech.data.batches import token_ids
from arithmech.data.draw import Draw
from arithmech.data.pairfile import load_pair_file
from arithmech.data.render import draw_values, render

TASKS = ("addition", "subtraction", "multiplication", "division")
"""Answer-token variants (module docstring): identify's default is ``"last-digit"``, the paper's ``"first"``;
every draw names its own (:class:`arithmech.data.draw.Draw`, checked there)."""

T = TypeVar("T")


class TemplateLengthError(ValueError):
    """A counterfactual template cannot keep X_r and X_c at the same token length."""


@dataclass
class Sample:
    clean: str  # X_r prompt (ends where the answer token starts; carries ``carried``)
    corrupt: str  # X_c prompt, same token length as clean (carries the same ``carried``)
    answer: str  # text of the answer token {C} ("4" of "14" under "last-digit")
    target: str  # the whole answer, e.g. "14"
    a: int
    b: int
    op: str
    template: str
    family: str
    positions: dict = field(default_factory=dict)  # role -> token positions in clean (BOS included)
    answer_token: str = field(kw_only=True)  # the variant it was drawn with (ANSWER_TOKENS), always named
    carried: str = ""  # the answer's leading digits at the end of clean ("1" of "14"), else ""
    prefix: str = ""  # the solved examples clean and corrupt start with (data.shots), "" zero-shot

    def to_json(self) -> dict:
        """The fields as a dict; ``prefix`` only when there is one (zero-shot rows are as they always were)."""
        d = asdict(self)
        if not d["prefix"]:
            del d["prefix"]
        return d

    @classmethod
    def from_json(cls, d: dict) -> Sample:
        """The inverse of :meth:`to_json` (a ``prompts.jsonl`` row or a checkpoint's); a key a Sample does not have
        raises ``TypeError``."""
        return cls(**d)

    @property
    def bare(self) -> str:
        """The prompt before the whole answer (``clean`` without ``carried``): where greedy decoding of
        the whole answer starts (exact match)."""
        return self.clean[: len(self.clean) - len(self.carried)]


@dataclass
class PairStats:
    made: int = 0
    redrawn: int = 0
    per_template: dict = field(default_factory=dict)


def answer_split(tok, prompt: str, target: str, joiner: str = " ") -> tuple[str, int] | None:
    """Find the prompt text whose tokens are followed by the answer's first token.

    Returns ``(prompt_text, answer_token_id)``; the prompt text gets the joiner appended when
    the tokenizer writes the space before a number as a token of its own (SmolLM2, LLaMA2).
    ``None`` when the answer does not start on a token boundary.
    """
    full = token_ids(tok, prompt + joiner + target, False)
    variants = [prompt] + ([prompt + joiner] if joiner else [])
    for p in variants:
        ids = token_ids(tok, p, False)
        if full[: len(ids)] == ids and len(full) > len(ids):
            piece = tok.decode([full[len(ids)]]).strip()
            if piece and target.startswith(piece):
                return p, full[len(ids)]
    return None


def split_answer(tok, prompt: str, target: str, joiner: str = " ", *, answer_token: str) -> tuple[str, int, str] | None:
    """The prompt text, the answer token and the carried digits of one answer under a variant.

    Returns ``(prompt_text, answer_token_id, carried)``, or ``None`` when the variant cannot be had:

    * ``"first"``: :func:`answer_split`, ``carried = ""``;
    * ``"single-token"``: as ``"first"``, and the whole answer is that one token;
    * ``"last-digit"``: for a one-digit answer as ``"first"``; else the prompt text is
      ``prompt + joiner + target[:-1]`` and the answer token is the last digit, only when the tokens of
      that text followed by the answer token are exactly the tokens of ``prompt + joiner + target`` (a
      tokenizer that merges digits, "12" as one token, fails this and the draw is redone).
    """
    first = answer_split(tok, prompt, target, joiner)
    if first is None:
        return None
    if answer_token == "first":
        return first[0], first[1], ""
    full = token_ids(tok, prompt + joiner + target, False)
    if answer_token == "single-token":
        ok = len(full) == len(token_ids(tok, first[0], False)) + 1 and tok.decode([first[1]]).strip() == target
        return (first[0], first[1], "") if ok else None
    if len(target) == 1:
        return first[0], first[1], ""
    carried = target[:-1]
    p = prompt + joiner + carried
    ids = token_ids(tok, p, False)
    if len(full) == len(ids) + 1 and full[:-1] == ids and tok.decode([full[-1]]).strip() == target[-1]:
        return p, full[-1], carried
    return None


def _token_positions(tok, text: str, spans: dict) -> dict:
    enc = tok(text, add_special_tokens=True, return_offsets_mapping=True)
    offsets = enc["offset_mapping"]
    roles = {"A": spans.get("A", []), "B": spans.get("B", []), "operator": spans.get("OP", [])}
    out: dict[str, list[int] | int] = {}
    for role, sp in roles.items():
        out[role] = [i for i, (s, e) in enumerate(offsets) if e > s and any(s < e2 and e > s2 for s2, e2 in sp)]
    out["end"] = len(enc["input_ids"]) - 1
    return out


def make_pairs(
    tok,
    templates: Sequence[templates_module.Template] | str = "addition",
    n: int = 256,
    seed: int = 0,
    max_tries: int = 50,
    *,
    draw: Draw,
) -> tuple[list[Sample], PairStats]:
    """Draw ``n`` (X_r, X_c) pairs, templates taken round-robin, seeded by ``seed``: the paper's
    counterfactual, the template's corrupt text (operator replaced, ``draw_pairs(kind="operator")``).

    Args:
        tok: the model's tokenizer (decides the answer token and the equal-length check).
        templates: a task name (``addition`` ... ``division``, ``all``, ``fig8``, ``fig10``,
            ``exponentiation``) or a list of :class:`~arithmech.data.templates.Template`.
        draw: the answer token (``"first"``, the paper's, ``"last-digit"`` or ``"single-token"``; module
            docstring), the solved examples before every X_r and X_c and their sets per template
            (:class:`arithmech.data.draw.Draw`; ``Draw(answer_token, 0, 1)`` is zero-shot, the paper's prompts).
    """
    return draw_pairs(tok, templates, n, seed, max_tries, kind="operator", draw=draw)


def draw_pairs(
    tok,
    templates: Sequence[templates_module.Template] | str = "addition",
    n: int = 256,
    seed: int = 0,
    max_tries: int = 50,
    kind: str = "operator",
    *,
    draw: Draw,
) -> tuple[list[Sample], PairStats]:
    """The one drawing loop of :func:`make_pairs` (``kind="operator"``) and :func:`make_operand_pairs`
    (``kind="operand"``): template ``k % len(templates)`` for the ``k``-th pair, up to ``max_tries`` draws
    from one ``random.Random(seed)`` each; a failed draw (also an answer the variant cannot use, e.g. a
    two-digit sum under ``"single-token"``, or with ``shots`` a query whose operands an example has) is counted
    in ``PairStats.redrawn``. With ``draw.shots`` the ``k``-th prompt starts with its template's example set
    :meth:`~arithmech.data.draw.Draw.example_set` (drawn from their own stream: the queries' draws are unchanged; a
    redraw of the query keeps the examples)."""
    if kind not in _COUNTERFACTUALS:
        raise ValueError(f"unknown counterfactual kind {kind!r}; choose one of {sorted(_COUNTERFACTUALS)}")
    if not isinstance(draw, Draw):
        raise TypeError(f"draw={draw!r}: pass an arithmech.data.draw.Draw, e.g. Draw('last-digit', 0, 1)")
    shots, answer_token = draw.shots, draw.answer_token
    tpls = select_templates(templates) if isinstance(templates, str) else list(templates)
    rng = random.Random(seed)
    stats = PairStats()
    samples = []
    for k in range(n):
        t = tpls[k % len(tpls)]
        ex = shots_module.examples(t, shots, seed, draw.example_set(k, len(tpls))) if shots else shots_module.NONE
        for _ in range(max_tries):
            s = _try_pair(tok, t, rng, kind, answer_token, ex)
            if s is not None:
                samples.append(s)
                break
            stats.redrawn += 1
            stats.per_template[t.id] = stats.per_template.get(t.id, 0) + 1
        else:
            raise TemplateLengthError(f"template {t.id!r}: after {max_tries} draws " + _FAILED[kind].format(t=t))
    stats.made = len(samples)
    return samples, stats


_FAILED = {
    "operator": "the counterfactual {t.corrupt!r} never had the same token length as {t.clean!r} under this "
    "tokenizer (or the answer did not start on a token boundary). Change the corrupt text so its "
    "replaced words have the same length in tokens.",
    "operand": "no operand counterfactual had the same token length as {t.clean!r} and another answer token "
    "under this tokenizer. Use the operator counterfactual (make_pairs) for this template.",
}


def _operator_corrupt(
    tok,
    t: templates_module.Template,
    rng: random.Random,
    v: dict,
    ans: tuple,
    answer_token: str,
    ex: shots_module.Examples,
) -> str | None:
    """X_c of the paper: the template's corrupt text with the same values."""
    return render(t.corrupt, v)[0]


def _operand_corrupt(
    tok,
    t: templates_module.Template,
    rng: random.Random,
    v: dict,
    ans: tuple,
    answer_token: str,
    ex: shots_module.Examples,
) -> str | None:
    """X_c with other operands (A', B') != (A, B) whose answer, under the same ``answer_token``, carries the same
    leading digits (``ans = (answer_token_id, carried)``) and has another answer token; None after 20 draws."""
    for _ in range(20):
        a2, b2, c2 = draw_operands(t, rng, division=PAIRS_DIVISION)
        if (a2, b2) == (v["A"], v["B"]) or (a2, b2) in ex.pairs:
            continue
        corrupt, _ = render(t.clean, {**v, "A": a2, "B": b2, "C": c2})
        split2 = split_answer(tok, ex.text + corrupt, str(c2), t.joiner, answer_token=answer_token)
        if split2 is not None and split2[1] != ans[0] and split2[2] == ans[1]:
            return corrupt
    return None


_COUNTERFACTUALS = {"operator": _operator_corrupt, "operand": _operand_corrupt}


def _try_pair(
    tok, t: templates_module.Template, rng: random.Random, kind: str, answer_token: str, ex: shots_module.Examples
) -> Sample | None:
    """One draw: values, X_r, the answer token (``answer_token``), X_c of ``kind``, the equal-length check;
    None on failure. ``ex.text`` (solved examples) starts X_r and X_c; a draw whose operands or answer an
    example has (``ex.pairs``, ``ex.answers``) fails."""
    v = draw_values(t, rng, division=PAIRS_DIVISION)
    if ex.text and ((v["A"], v["B"]) in ex.pairs or (t.op, v["C"]) in ex.answers):
        return None
    prefix = ex.text
    query, spans = render(t.clean, v)
    clean = prefix + query
    spans = {f: [(a + len(prefix), b + len(prefix)) for a, b in sp] for f, sp in spans.items()}
    target = str(v["C"])
    split = split_answer(tok, clean, target, t.joiner, answer_token=answer_token)
    if split is None:
        return None
    clean_p, ans_id, carried = split
    corrupt = _COUNTERFACTUALS[kind](tok, t, rng, v, (ans_id, carried), answer_token, ex)
    if corrupt is None:
        return None
    corrupt_p = prefix + corrupt + clean_p[len(clean) :]  # same examples, trailing joiner and carried digits
    if len(token_ids(tok, clean_p, True)) != len(token_ids(tok, corrupt_p, True)):
        return None
    return Sample(
        clean=clean_p,
        corrupt=corrupt_p,
        answer=tok.decode([ans_id]).strip(),
        target=target,
        a=v["A"],
        b=v["B"],
        op=t.op,
        template=t.id,
        family=t.family,
        positions=_token_positions(tok, clean_p, spans),
        answer_token=answer_token,
        carried=carried,
        prefix=prefix,
    )


def select_templates(task: str) -> list[templates_module.Template]:
    """Templates of a task: an operation, ``all`` (Fig. 8 + Fig. 10), ``fig8``, ``fig10``, ``exponentiation``."""
    by = {
        "all": templates_module.FIG8 + templates_module.FIG10,
        "fig8": templates_module.FIG8,
        "fig10": templates_module.FIG10,
        "exponentiation": templates_module.EXPONENTIATION,
        "addition": [t for t in templates_module.FIG8 if t.op == "addition"] + templates_module.FIG10,
    }
    for op in TASKS[1:]:
        by[op] = [t for t in templates_module.FIG8 if t.op == op]
    if task not in by:
        raise ValueError(f"unknown task {task!r}; choose one of {sorted(by)} or pass a template-pair file")
    return by[task]


def load_template_pairs(path: str | Path) -> list[templates_module.Template]:
    """Read and validate user template pairs: a JSON list (or JSONL) of ``{"clean", "corrupt", "op"?,
    "op_word"?, "answer"?, "id"?}`` (format and schema: :mod:`arithmech.data.pairfile`)."""
    return load_pair_file(path)


# ------------------------------------------------------------------------ operand counterfactual
def make_operand_pairs(
    tok,
    templates: Sequence[templates_module.Template] | str = "addition",
    n: int = 256,
    seed: int = 0,
    max_tries: int = 50,
    *,
    draw: Draw,
) -> tuple[list[Sample], PairStats]:
    """Draw ``n`` (X_r, X_c) pairs whose counterfactual changes the *operands*, not the operator.

    The paper's counterfactual (:func:`make_pairs`) keeps ``{A}``, ``{B}`` and replaces the operator
    ("3 + 5 =" → "3 @ 5 ="): patching a head then measures how much of the *operation* it carries.
    Here ``X_c`` is the same sentence — same template, operator, pool words and neutral fields —
    with other operands ``A', B'`` ("3 + 5 =" → "7 + 1 ="), drawn by the template's own rule
    (App. A), so that (A', B') != (A, B) and the answer's first token differs from ``{C}``'s:
    patching a head measures how much *operand* information it carries to END.

    The stream of random numbers is this function's own (``random.Random(seed)``), so
    :func:`make_pairs` draws exactly what it drew before. Equal token length and the answer token
    follow the same rules (one loop, :func:`draw_pairs`); a pair that fails is re-drawn and counted in
    ``PairStats.redrawn``.
    ``Sample.corrupt`` holds ``X_c``; its operands are not stored apart (they are in the text). Under
    ``Draw("last-digit", 0, 1)`` X_c's own answer has the same leading digits as X_r's (both prompts
    carry them) and another last digit ("3 + 9 = 1" → "5 + 8 = 1").
    """
    return draw_pairs(tok, templates, n, seed, max_tries, kind="operand", draw=draw)


def interleave(groups: Iterable[Iterable[T]]) -> list[T]:
    """Round-robin over the tasks, so that the first k samples cover every task."""
    lists = [list(g) for g in groups]
    return [g[i] for i in range(max(map(len, lists))) for g in lists if i < len(g)]


def samples(folder: str | Path) -> list:
    """``prompts.jsonl`` as :class:`arithmech.data.pairs.Sample` objects."""
    return as_samples(read(folder, "prompts.jsonl"), folder)


def as_samples(rows: list[dict], folder: str | Path) -> list:
    """``prompts.jsonl``'s rows (read from ``folder``) as :class:`Sample` objects; a row that is not a prompt is a
    :class:`~arithmech.core.safe_read.ResultsError` naming the file."""
    try:
        return [Sample.from_json(r) for r in rows]
    except TypeError as e:  # a row with a key a Sample does not have
        raise ResultsError(
            f"{quoted(Path(folder) / 'prompts.jsonl')} has a row that is not a prompt ({e}): re-run "
            "python -m arithmech identify"
        ) from None


def reference_samples(folder: Path, n: int, seed: int, ops: Sequence[str] | None = None) -> list[Sample]:
    """``n`` reference samples (X_r) from identify's ``prompts.jsonl``, of the operations ``ops`` (every one when
    None): a seeded subset when there are more."""
    every = [s for s in samples(folder) if ops is None or s.op in ops]
    if not every:
        raise ValueError(
            f"{quoted(Path(folder) / 'prompts.jsonl')} holds no prompts the model answers right: nothing to run on"
        )
    rng = np.random.default_rng(seed)
    return [every[i] for i in sorted(rng.permutation(len(every))[:n])]
