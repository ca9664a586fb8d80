"""Scoring the embedded model on the held-out splits of :mod:`arithmech.data.heldout` (which operand pairs
and phrasings training never saw): answer token, last digit and exact match per split, Wilson intervals,
and the model card's section.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from arithmech.core.stats import wilson_interval
from arithmech.data import templates
from arithmech.data.heldout import SPLITS, declaration, split_items
from arithmech.data.pairs import answer_split
from arithmech.evals.scoring import greedy_exact, predict


def score(model, tok, items: list[dict], batch_size: int = 64) -> dict[str, list[bool]]:
    """Per item, three measures: ``answer_token``: the top-1 next token is the answer's first token
    (:func:`arithmech.data.pairs.answer_split`, as ``filter_correct``); ``last_digit``: after the prompt and the
    answer's leading digits ("3 + 9 = 1"), the top-1 next token is its last digit (the computing answer token);
    ``exact_match``: greedy decoding writes the whole answer (:func:`arithmech.evals.scoring.greedy_exact`)."""
    first = [answer_split(tok, it["prompt"], it["target"], it["joiner"]) for it in items]
    last = [
        answer_split(tok, it["prompt"] + it["joiner"] + it["target"][:-1], it["target"][-1], "")
        if len(it["target"]) > 1
        else f
        for it, f in zip(items, first)
    ]
    for it, f, la in zip(items, first, last):
        if f is None or la is None:
            raise ValueError(f"{it['template']}: the answer {it['target']!r} does not start on a token boundary")
    # past the check above every split is a (prompt, answer token) pair: the casts only tell mypy so
    first_ok = cast("list[tuple[str, int]]", first)
    last_ok = cast("list[tuple[str, int]]", last)
    out = {}
    for name, splits in (("answer_token", first_ok), ("last_digit", last_ok)):
        pred = predict(model, tok, [p for p, _ in splits], batch_size)[:, 0].tolist()
        out[name] = [p == a for p, (_, a) in zip(pred, splits)]
    out["exact_match"] = greedy_exact(
        model, tok, [(p, it["target"]) for (p, _), it in zip(first_ok, items)], batch_size
    )
    return out


def proportion(ok: Iterable[bool]) -> dict:
    """``{k, n, acc, lo, hi}``: a proportion with its Wilson 95 % interval, rounded to 4 places."""
    ok = list(ok)
    k, n = sum(ok), len(ok)
    lo, hi = wilson_interval(k, n)
    return {"k": k, "n": n, "acc": round(k / n, 4), "lo": round(lo, 4), "hi": round(hi, 4)}


def split_report(model, tok, split: str, seed: int = 1, **kw) -> dict:
    """One split scored: overall and per operation, each measure of :func:`score` as a :func:`proportion`."""
    items = split_items(split, seed, **kw)
    ok = score(model, tok, items)
    ops = sorted({it["op"] for it in items}, key=list(templates.OPS).index)
    by = lambda v, op: proportion(o for o, it in zip(v, items) if it["op"] == op)
    return {
        **{m: proportion(v) for m, v in ok.items()},
        "by_operation": {op: {m: by(v, op) for m, v in ok.items()} for op in ops},
    }


def heldout_report(model, tok, seed: int = 1, n_per_template: int = 40, draws_per_pair: int = 2) -> dict:
    """The declaration and the four splits (:data:`SPLITS`) scored, as stored under ``accuracy.json["heldout"]``;
    ``split_report(model, tok, split, **r["draws"])`` recomputes one split of a stored report ``r``."""
    draws = {"seed": seed, "n_per_template": n_per_template, "draws_per_pair": draws_per_pair}
    return {
        "declaration": declaration(),
        "eval_seed": seed,
        "draws": draws,
        "splits": {s: split_report(model, tok, s, **draws) for s in SPLITS},
    }


# ------------------------------------------------------------------------------------ model card
TARGET = 0.99


LABELS = {
    "in_distribution": "in-distribution (trained pairs, trained templates)",
    "heldout_pairs": "held-out pairs, trained templates",
    "heldout_phrasings": "trained pairs, held-out phrasings",
    "heldout_both": "held-out pairs in held-out phrasings",
}


def verdict(p: dict, target: float = TARGET) -> str:
    """The rule fixed before the run: accuracy ``>= target`` *holds* when the Wilson interval's lower end is
    at least ``target``, *does not hold* when its upper end is below it, and is *inconclusive* otherwise."""
    return "holds" if p["lo"] >= target else "does not hold" if p["hi"] < target else "inconclusive"


def interval_cell(p: dict) -> str:
    """``"97.5% [95.1%, 98.7%]"``: a :func:`proportion` as the card prints it."""
    return f"{p['acc']:.1%} [{p['lo']:.1%}, {p['hi']:.1%}]"


def card_section(h: dict) -> str:
    """The model card's held-out declaration and results, from ``accuracy.json["heldout"]``."""
    d, sp = h["declaration"], h["splits"]
    sym = {op: s for op, (s, *_) in templates.OPS.items()}
    pairs = "\n".join(
        f"- {op} ({n} of {tot} pairs): " + ", ".join(f"{a} {sym[op]} {b}" for a, b in d["pairs"][op])
        for op, (n, tot) in d["n_pairs"].items()
    )
    phr = "\n".join(f'- `{k}`: "{v}"' for k, v in d["phrasings"].items())
    cells = lambda r: " | ".join(interval_cell(r[m]) for m in ("answer_token", "last_digit", "exact_match"))
    rows = "\n".join(
        f"| {LABELS[s]} | {sp[s]['exact_match']['n']} | {cells(sp[s])} | {verdict(sp[s]['exact_match'])} |"
        for s in SPLITS
    )
    ops = "\n".join(
        f"| {s.replace('_', ' ')} | {op} | {v['exact_match']['n']} | {cells(v)} |"
        for s in SPLITS[1:]
        for op, v in sp[s]["by_operation"].items()
    )
    return f"""## Held out from training (declared in `arithmech/embedded/heldout.py`)
Training never shows these (a test draws the training stream and checks):

**Operand pairs**: seed {d["seed"]}, about {d["fraction"]:.0%} of each operation's pairs in 1..9, drawn per
answer length (one / two digits); for {" and ".join(d["commutative_mirrored"])} a pair is held out together with
its mirror. A held-out pair is never trained in any template of its operation (addition: Fig. 8 and all of
Fig. 10); facts of the other operations are not held out with it.
{pairs}

**Phrasings**: {len(d["phrasings"])} sentence forms never trained, made of words the model knows (no Fig. 8 /
Fig. 10 template is held out: the chapters use them all; no pool word is held out: an unseen word's embedding
is untrained):
{phr}

## Held-out accuracy
Seeded prompts (evaluation seed {h["eval_seed"]}); answer token = the answer's first token after the prompt;
last digit = the answer's last digit after the prompt and its leading digits ("3 + 9 = 1" -> "2"); exact match =
greedy decoding writes the whole answer. Brackets: Wilson 95 % intervals. Rule fixed before training: \
exact-match accuracy >= {TARGET:.0%}
*holds* when the interval's lower end is >= {TARGET:.0%}, *does not hold* when its upper end is below.

| split | n | answer token | last digit | exact match | >= {TARGET:.0%}? |
|---|---|---|---|---|---|
{rows}

| split | operation | n | answer token | last digit | exact match |
|---|---|---|---|---|---|
{ops}
"""
