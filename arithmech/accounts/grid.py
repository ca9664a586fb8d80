"""The operand grid: every one-digit pair (a, b) on every addition template, as prompts with their counterfactuals.

A grid prompt is a :class:`arithmech.data.pairs.Sample` drawn for a fixed pair: the template's pool words are drawn
once per (template, cell) from a seeded stream, the answer token is the answer's last digit (the prompt carries
its leading digit, identify's ``last-digit`` variant), and with ``shots`` solved examples the first of the
template's example sets that holds neither the pair (either order) nor the answer (:mod:`arithmech.data.shots`'s
rule). ``clean`` is the prompt; ``corrupt`` is left empty here and filled by the counterfactuals
(:func:`counterfactual_prompts`): identify's operator counterfactual (the operator replaced by a neutral word or
symbol), the operand counterfactual (other operands, another last digit, the same carried digits) and Stolfo's
result-preserving counterfactual (other operands, the same sum, not the swapped pair).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from arithmech.data import shots as shots_module
from arithmech.data import templates as templates_module
from arithmech.data.answers import PAIRS_DIVISION, answer_rule
from arithmech.data.batches import token_ids
from arithmech.data.pairs import Sample, select_templates, split_answer
from arithmech.data.render import draw_values, render

OPERANDS = tuple(range(1, 10))  # the project's operands (App. A): the toy saw only these
SETS = shots_module.EXAMPLE_SETS  # example sets tried per template for a cell (the first that fits)
COUNTERFACTUALS = ("operator", "operand", "result-preserving")


def digit_ids(tok) -> list[int]:
    """The token ids of the digits 0-9 (each must be one token: both models split numbers into digits)."""
    out = []
    for d in range(10):
        ids = token_ids(tok, str(d), False)
        if len(ids) != 1:
            raise ValueError(f"digit {d} is {len(ids)} tokens under this tokenizer: the grid needs one token a digit")
        out.append(ids[0])
    return out


def token_position(tok, text: str, span: tuple[int, int]) -> int:
    """The position (BOS included) of the last token overlapping the characters ``span`` of ``text``."""
    enc = tok(text, add_special_tokens=True, return_offsets_mapping=True)
    hits = [i for i, (s, e) in enumerate(enc["offset_mapping"]) if e > s and s < span[1] and e > span[0]]
    if not hits:
        raise ValueError(f"no token of {text!r} covers characters {span}")
    return hits[-1]


def _examples(t: templates_module.Template, a: int, b: int, c: int, shots: int, seed: int):
    if not shots:
        return shots_module.NONE
    for i in range(SETS):
        ex = shots_module.examples(t, shots, seed, i)
        if (a, b) not in ex.pairs and (t.op, c) not in ex.answers:
            return ex
    return None


def cell_prompt(tok, t: templates_module.Template, a: int, b: int, shots: int, seed: int) -> Sample | None:
    """The grid prompt of template ``t`` at ``(a, b)``, or None where the template's rule has no answer, the
    answer's last digit does not follow on a token boundary, or no example set avoids the pair."""
    c = answer_rule(t)(a, b)
    if c is None:
        return None
    ex = _examples(t, a, b, c, shots, seed)
    if ex is None:
        return None
    v = draw_values(t, random.Random(f"grid:{seed}:{t.id}:{a}:{b}"), division=PAIRS_DIVISION)
    v.update(A=a, B=b, C=c)
    query, spans = render(t.clean, v)
    clean = ex.text + query
    split = split_answer(tok, clean, str(c), t.joiner, answer_token="last-digit")
    if split is None:
        return None
    text, ans_id, carried = split
    a_span = (spans["A"][0][0] + len(ex.text), spans["A"][0][1] + len(ex.text))
    return Sample(
        clean=text,
        corrupt="",
        answer=tok.decode([ans_id]).strip(),
        target=str(c),
        a=a,
        b=b,
        op=t.op,
        template=t.id,
        family=t.family,
        positions={"A": [token_position(tok, text, a_span)], "end": len(token_ids(tok, text, True)) - 1},
        answer_token="last-digit",
        carried=carried,
        prefix=ex.text,
    )


def grid_prompts(tok, task: str, shots: int, seed: int, operands: Sequence[int] = OPERANDS) -> list[Sample]:
    """Every cell of every template of ``task`` that has a prompt (:func:`cell_prompt`), templates in task order,
    cells row by row."""
    out = []
    for t in select_templates(task):
        for a in operands:
            for b in operands:
                s = cell_prompt(tok, t, a, b, shots, seed)
                if s is not None:
                    out.append(s)
    return out


def _same_length(tok, x: str, y: str) -> bool:
    return len(token_ids(tok, x, True)) == len(token_ids(tok, y, True))


def _with_operands(tok, s: Sample, a2: int, b2: int, want: str, seed: int) -> str | None:
    """``s``'s prompt with operands ``(a2, b2)`` (same pool words, examples and carried digits) when its answer's last
    digit is ``want`` ("same": the same as ``s``'s, "other": another) and the token length is the same."""
    t = templates_module.TEMPLATES[s.template]
    c2 = answer_rule(t)(a2, b2)
    if c2 is None or (str(c2)[:-1] != s.carried):
        return None
    if (want == "same") != (str(c2)[-1] == s.answer):
        return None
    v = draw_values(t, random.Random(f"grid:{seed}:{t.id}:{s.a}:{s.b}"), division=PAIRS_DIVISION)
    v.update(A=a2, B=b2, C=c2)
    text = s.prefix + render(t.clean, v)[0]
    split = split_answer(tok, text, str(c2), t.joiner, answer_token="last-digit")
    if split is None or not _same_length(tok, split[0], s.clean):
        return None
    return split[0]


def _operator(tok, s: Sample, rng: random.Random, seed: int) -> str | None:
    t = templates_module.TEMPLATES[s.template]
    for _ in range(20):
        v = draw_values(t, random.Random(f"grid:{seed}:{t.id}:{s.a}:{s.b}"), division=PAIRS_DIVISION)
        v.update(
            A=s.a, B=s.b, N=rng.choice(templates_module.NEUTRAL_WORDS), S=rng.choice(templates_module.NEUTRAL_SYMBOLS)
        )
        corrupt = s.prefix + render(t.corrupt, v)[0] + s.clean[len(s.prefix + render(t.clean, v)[0]) :]
        if v["N"] != v["OP"] and v["S"] != v["OP"] and _same_length(tok, corrupt, s.clean):
            return corrupt
    return None


def counterfactual_prompts(tok, samples: Sequence[Sample], kind: str, seed: int) -> list[Sample]:
    """Each sample with its counterfactual of ``kind`` (:data:`COUNTERFACTUALS`) in ``corrupt``; a sample that has
    none (no other pair with the same sum but the swap, no equal token length) is left out."""
    rng = random.Random(f"cf:{seed}:{kind}")
    pairs = [(x, y) for x in OPERANDS for y in OPERANDS]
    out = []
    for s in samples:
        if kind == "operator":
            corrupt = _operator(tok, s, rng, seed)
        else:
            want = "same" if kind == "result-preserving" else "other"
            cands = [(x, y) for x, y in pairs if {x, y} != {s.a, s.b} and ((x + y == s.a + s.b) == (want == "same"))]
            rng.shuffle(cands)
            corrupt = next((c for c in (_with_operands(tok, s, x, y, want, seed) for x, y in cands[:20]) if c), None)
        if corrupt is not None:
            out.append(replace(s, corrupt=corrupt))
    return out
