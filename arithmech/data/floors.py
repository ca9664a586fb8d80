"""How much of a task's answers can be guessed without the calculation, counted over distinct problems.

The control of identify asks whether the answer token of the kept prompts (X_r) could be guessed from what a
prompt carries besides the calculation: the operation, the answer's leading digits (:attr:`Sample.carried`,
under the ``"last-digit"`` answer token) and *one* operand. Version 1 of that floor
(:func:`arithmech.data.answer_tokens.conditioned_floor`) guessed each prompt's answer from the *other prompts*
of its group; X_r holds the same problem many times over in other templates (4-shot addition: 467 prompts from
53 problems, up to 22 copies), so the "other prompts" held the very problem whose answer was guessed, and the
floor measured duplication (zero-shot addition: 64 %, against about 23 % over the draw).

:func:`problem_floor` (version 2) never lets a prompt's copies vote. The guesser is fitted on the **draw
population** — every problem ``(operation, A, B)`` the task's draw rules can give (:mod:`arithmech.data.answers`:
``A, B`` in each template's operands, 1..9 or 10..99 for a two-digit twin, under its rule, division uniform over
quotients), each once, weighted by its probability under the draw and never by how often it was kept — and
guesses, for each grouping of :data:`FLOOR_GROUPS`, the group's most probable answer token. Its accuracy is counted
three ways:

* ``population``: over the draw population (a property of the draw and the answer token, not of the model);
* ``problems``: over X_r's distinct problems, each once;
* ``prompts``: over X_r's prompts, each copy counted (what a guessing model would score on them);

and the floor is the **highest** of these over every grouping: a task passes its control only where no
reading finds a guess for half its answers. The model's X_r is a selection, and a selection can favour the
problems a heuristic gets right (zero-shot addition: 23 % over the population, 48 % over its prompts), so
neither count alone is the floor.

The guess for a problem counts that problem once among its group's population. Where the group pins the
answer ("7 times B = 5|": only B = 8 fits), the answer *is* guessable without reading B, a real leak.
:func:`loo_problem_floor` also reports the guess from the **other problems only** (leave one problem out):
it cannot see such pinned answers (a problem alone in its group falls back to a coarser group), so it is a
lower bound, printed beside the floor and never deciding.

>>> problem_floor(kept)    # {"accuracy", "by", "on", "n", "problems", "table": {on: {grouping: accuracy}}, "loo"}
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from arithmech.data.answer_tokens import FLOOR_GROUPS
from arithmech.data.answers import OPERANDS, answer_rule, operation_answer
from arithmech.data.pairs import Sample
from arithmech.data.splits import cluster
from arithmech.data.templates import TEMPLATES

EVALUATIONS = ("population", "problems", "prompts")
"""Where :func:`problem_floor` counts the guesser's accuracy (module docstring); the floor is the highest."""

Problem = tuple[str, int, int]  # (operation, A, B)


def _template_weights(template_id: str, op: str) -> dict[tuple[int, int], float]:
    """P(A, B) under one template's draw (:func:`arithmech.data.answers.draw_operands`); a template this package
    does not know (a custom file, a test's "t") draws by its operation's rule."""
    t = TEMPLATES.get(template_id)
    clean, expr = (t.clean, t.answer_expr) if t is not None and t.op == op else ("", "")
    span = range(t.operands[0], t.operands[1] + 1) if t is not None and t.op == op else OPERANDS
    if op == "division" and not expr:  # uniform-quotient (PAIRS_DIVISION)
        by = defaultdict(list)
        for a in span:
            for b in span:
                if operation_answer(op, clean, a, b) is not None:
                    by[operation_answer(op, clean, a, b)].append((a, b))
        return {p: 1 / len(by) / len(ps) for ps in by.values() for p in ps}
    rule = answer_rule(t) if expr else (lambda a, b: operation_answer(op, clean, a, b))
    ps = [(a, b) for a in span for b in span if rule(a, b) is not None]
    return {p: 1 / len(ps) for p in ps}


def _target(op: str, template_id: str, a: int, b: int) -> str | None:
    t = TEMPLATES.get(template_id)
    c = answer_rule(t)(a, b) if t is not None and t.op == op else operation_answer(op, "", a, b)
    return None if c is None else str(c)


_SPLITS = {"last-digit": lambda t: (t[-1], t[:-1]), "first-digit": lambda t: (t[0], ""), "whole": lambda t: (t, "")}


def population(samples: Sequence[Sample]) -> tuple[dict[Problem, float], dict[Problem, tuple[str, str]]]:
    """The draw population of ``samples``' tasks: ``(weight, token)``, ``weight[(op, a, b)]`` = P(problem) (each
    operation weighted by its share of the prompts; within it, its templates alike), ``token[(op, a, b)]`` =
    ``(answer token, carried digits)``, split from the whole answer the way every sample is split (the last
    digit after the leading ones, the first digit, or the whole answer; ``ValueError`` where none fits)."""
    weight: dict[Problem, float] = defaultdict(float)
    by_op = defaultdict(list)
    for s in samples:
        by_op[s.op].append(s)
    targets: dict[Problem, str | None] = {}
    for op, ss in by_op.items():
        tpls = sorted({s.template for s in ss})
        for tid in tpls:
            for (a, b), w in _template_weights(tid, op).items():
                weight[(op, a, b)] += w / len(tpls) * len(ss) / len(samples)
                targets.setdefault((op, a, b), _target(op, tid, a, b))
    for s in samples:  # the kept problems are in their population
        targets[(s.op, s.a, s.b)] = s.target
        weight.setdefault((s.op, s.a, s.b), 0.0)
    for split in _SPLITS.values():
        if all(split(s.target) == (s.answer, s.carried) for s in samples):
            return dict(weight), {p: split(t) for p, t in targets.items() if t}
    raise ValueError("the samples' answer tokens are not the last digit, the first digit or the whole answer")


def _fields(p: Problem, token: tuple[str, str], fields: tuple[str, ...]) -> tuple:
    v = {"op": p[0], "a": p[1], "b": p[2], "carried": token[1]}
    return tuple(v[f] for f in fields)


def guesses(
    weight: dict[Problem, float],
    token: dict[Problem, tuple[str, str]],
    fields: tuple[str, ...],
    leave_out: bool = False,
) -> dict[Problem, str | None]:
    """For every problem, the most probable answer token of its group (the problems sharing ``fields``) under the
    draw population (ties: the smallest token text). ``leave_out``: from the *other* problems of the group only;
    a problem alone in its group falls back to the coarser group (the last field dropped), None where no other
    problem is left."""
    chain = [fields[:k] for k in range(len(fields), -1, -1)]
    # the weights are floats, so each group's token weights sum in a defaultdict(float), not a (int) Counter
    counts: dict[tuple[str, ...], defaultdict[tuple, defaultdict[str, float]]] = {
        f: defaultdict(lambda: defaultdict(float)) for f in chain
    }
    for p, w in weight.items():
        for f in chain:
            counts[f][_fields(p, token[p], f)][token[p][0]] += w
    out: dict[Problem, str | None] = {}
    for p in weight:
        out[p] = None
        for f in chain:
            c = dict(counts[f][_fields(p, token[p], f)])  # token[p][0] is a key: p's own weight was added
            if leave_out:
                c[token[p][0]] -= weight[p]
            c = {k: v for k, v in c.items() if v > 1e-12}
            if c:
                out[p] = min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0]
                break
    return out


def _accuracies(samples, weight, token, leave_out: bool) -> dict[str, dict[str, float]]:
    problems = sorted({(s.op, s.a, s.b) for s in samples})
    total = sum(weight.values())
    table: dict[str, dict[str, float]] = {e: {} for e in EVALUATIONS}
    for g in FLOOR_GROUPS:
        guess = guesses(weight, token, g, leave_out)
        right = lambda p: guess[p] == token[p][0]  # noqa: B023 (used at once)
        name = ", ".join(g)
        table["population"][name] = sum(w for p, w in weight.items() if right(p)) / total
        table["problems"][name] = sum(map(right, problems)) / len(problems)
        table["prompts"][name] = sum(right((s.op, s.a, s.b)) for s in samples) / len(samples)
    return table


def kish(weights) -> float:
    """Kish's effective number of trials of a weighted mean, ``(Σw)² / Σw²`` (``weights``: each unit's weight in
    the mean, zeros ignored): the number of equally weighted units whose mean is as variable. Equal weights give
    the number of units; one unit carrying all the weight gives 1. NaN for no positive weight."""
    w = [float(x) for x in weights if x > 0]
    return sum(w) ** 2 / sum(x * x for x in w) if w else float("nan")


def effective_trials(samples: Sequence[Sample], weight: dict[Problem, float] | None = None) -> dict[str, float]:
    """Per count of :data:`EVALUATIONS`, :func:`kish` of the weights its **problem clusters** have in it (version 7 of
    the control: the trials are clusters, :func:`arithmech.data.splits.cluster`, as for every other rule and
    :data:`~arithmech.data.answers.MIN_CLUSTERS`; the guess is still made per ordered problem, but the problems and
    prompts of one cluster are weighed as one unit, as if right or wrong together). ``population``: the draw
    probabilities (``weight``, :func:`population`'s; exact, so never an interval's trials); ``problems``: each
    cluster's number of distinct ordered problems among X_r (1 or 2: a cluster kept as 3 + 5 and 5 + 3 weighs 2, one
    unit); ``prompts``: each cluster's number of prompts (a cluster kept 22 times weighs 22 times as much as one kept
    once, so the count is worth fewer clusters than it holds). Equal weights give the number of clusters."""
    problems = Counter(cluster(s) for s in {(s.op, s.a, s.b): s for s in samples}.values())
    prompts = Counter(cluster(s) for s in samples)
    weight = population(samples)[0] if weight is None else weight
    return {"population": kish(weight.values()), "problems": kish(problems.values()), "prompts": kish(prompts.values())}


def problem_floor(samples: Sequence[Sample]) -> dict:
    """The floor over distinct problems (module docstring): ``{"accuracy": the highest accuracy of the
    population's guess, "by": its grouping, "on": where counted (:data:`EVALUATIONS`), "n": prompts,
    "problems": distinct ordered problems, "clusters": distinct problem clusters (the trials), "table": {on:
    {grouping: accuracy}}, "n_eff": {on: the effective number of problem clusters of that count}
    (:func:`effective_trials`), "loo": the same table guessed from the other problems only (a lower bound)}``;
    accuracy NaN for no sample."""
    if not samples:
        return {
            "accuracy": float("nan"),
            "by": "",
            "on": "",
            "n": 0,
            "problems": 0,
            "clusters": 0,
            "table": {},
            "n_eff": {},
            "loo": {},
        }
    weight, token = population(samples)
    table = _accuracies(samples, weight, token, False)
    on, by = max(((e, g) for e in EVALUATIONS for g in table[e]), key=lambda eg: table[eg[0]][eg[1]])
    return {
        "accuracy": table[on][by],
        "by": by,
        "on": on,
        "n": len(samples),
        "problems": len({(s.op, s.a, s.b) for s in samples}),
        "clusters": len({cluster(s) for s in samples}),
        "table": table,
        "n_eff": effective_trials(samples, weight),
        "loo": _accuracies(samples, weight, token, True),
    }


def loo_problem_floor(samples: Sequence[Sample]) -> float:
    """The highest accuracy of the guess from the other problems only (leave one problem out), over the three
    counts and every grouping: a lower bound beside :func:`problem_floor` (it cannot see answers a group pins)."""
    return max(v for t in problem_floor(samples)["loo"].values() for v in t.values()) if samples else float("nan")


# ------------------------------------------------------------------ heuristics in the model's own outputs
def output_heuristics(samples: Sequence[Sample], outputs: Sequence[str]) -> dict:
    """Is the model's answer token predictable from the operation, the carried digits and one operand, right or
    wrong? Over *drawn* prompts (not only X_r) with the model's top-1 token ``outputs[i]`` at the answer position:
    for each grouping of :data:`FLOOR_GROUPS`, each prompt's output is guessed as the most frequent output among
    the prompts of *other problems* in its group (leave one problem out; ties: the smallest text; a group with no
    other problem falls back to the coarser group). The same guess is made of the right answer token. Returns
    ``{"n", "problems", "accuracy": the model's top-1 accuracy, "output": {grouping: share of outputs guessed},
    "answer": {grouping: share of right answers guessed}}``: outputs guessed far more often than answers point to
    a heuristic that reads fewer fields than the calculation needs."""
    if len(samples) != len(outputs):
        raise ValueError(f"{len(samples)} samples but {len(outputs)} outputs")
    keys = [(s.op, s.a, s.b) for s in samples]
    by: dict[str, dict[str, float]] = {"output": {}, "answer": {}}  # out's "output" and "answer", filled below
    out = {
        "n": len(samples),
        "problems": len(set(keys)),
        "accuracy": sum(o == s.answer for s, o in zip(samples, outputs)) / max(len(samples), 1),
        "output": by["output"],
        "answer": by["answer"],
    }
    for g in FLOOR_GROUPS:
        chain = [g[:k] for k in range(len(g), -1, -1)]
        field = lambda s, f: tuple({"op": s.op, "a": s.a, "b": s.b, "carried": s.carried}[x] for x in f)
        for what, values in (("output", list(outputs)), ("answer", [s.answer for s in samples])):
            counts: dict[tuple[str, ...], defaultdict[tuple, defaultdict[Problem, Counter[str]]]] = {
                f: defaultdict(lambda: defaultdict(Counter)) for f in chain
            }
            for s, k, v in zip(samples, keys, values):
                for f in chain:
                    counts[f][field(s, f)][k][v] += 1
            right = 0
            for s, k, v in zip(samples, keys, values):
                for f in chain:
                    c: Counter[str] = Counter()
                    for other, cv in counts[f][field(s, f)].items():
                        if other != k:
                            c.update(cv)
                    if c:
                        right += min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] == v
                        break
            by[what][", ".join(g)] = right / max(len(samples), 1)
    return out


# ------------------------------------------------------------------ reading a control (arithmech.steps.control)
STATUSES = ("passes", "fails", "undecided", "insufficient")
"""A task's control (steps.control version 7): its floor's interval below the bound; its X_r readings' interval at or
above it; neither (across it, or only the draw population's point at or above it); too few problem clusters. The
readers below sit here, under the steps, so that every layer that prints a control reads it one way."""


def not_passed(control: dict) -> dict[str, str]:
    """Every task of a :func:`task_control` (or a stored one) that does not pass, with why: those that fail or are
    insufficient (``failed``) and, from version 6, those undecided (``undecided``): what the rules that need a
    control read as not passed."""
    return {**(control.get("failed") or {}), **(control.get("undecided") or {})}


def status(control: dict, task: str) -> str:
    """``task``'s :data:`STATUSES` entry in ``control`` (a stored control from before version 6 records none: a
    task it lists as failed fails, ``insufficient`` where it lists it so or its reason says so)."""
    if task in (control.get("status") or {}):
        return control["status"][task]
    if task in (control.get("undecided") or {}):
        return "undecided"
    if task in (control.get("failed") or {}):
        short = task in (control.get("insufficient") or []) or control["failed"][task].startswith("insufficient")
        return "insufficient" if short else "fails"
    return "passes"


def shown(control: dict, task: str) -> str:
    """How a page prints ``task``'s control: ``"passes"``, ``"fails: <why>"``, or the reason itself for an undecided
    (``"undecided on N problem clusters: …"``) or insufficient (``"insufficient: …"``) task."""
    s, why = status(control, task), not_passed(control).get(task, "")
    return "passes" if s == "passes" else f"fails: {why}" if s == "fails" else why
