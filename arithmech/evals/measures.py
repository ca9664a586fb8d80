"""What Table 1 measures, on any model: its training data and every evaluation (paper §5.3).

* **training data**: Fig. 8 sentences in the *training phrasings* (4 of the 9 forms of each operation:
  not :data:`HELDOUT_FORMS`, not the validation forms of :mod:`arithmech.data.splits`), half with
  single-digit operands (App. A rules), half two-digit addition/subtraction from the training side of
  :func:`arithmech.data.sentences.two_digit_split`; completion ``" {C}"`` (the loss covers it only);
* **measured on what training did not see**, every math accuracy by exact match of the whole answer:
  ``heldout_phrasings`` (Fig. 8 forms :data:`HELDOUT_FORMS` and Fig. 10 on the test half of the operand
  pairs), ``two_digit`` (the test operand pairs), ``addsub``/``singleeq``/``svamp``/``gsm8k`` (test
  sides of :func:`arithmech.evals.benchmarks.math_splits`, few-shot, direct answer, the whole final
  number); ``mmlu``/``csqa`` in letter form and ``mmlu_cloze``/``csqa_cloze`` in cloze form (answer text
  log-likelihood per character); ``lm_loss``: mean next-token loss on a generic text that Python itself
  ships (sections :data:`GENERIC_TOPICS` of the Language Reference in ``pydoc_data/topics.py``);
* **uncertainty**: every accuracy with a Wilson 95% interval, every loss with mean ± 1.96 standard
  errors over 256-token chunks (the runners add paired bootstrap intervals of each change).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import torch

from arithmech.core.stats import mean_interval, wilson_interval
from arithmech.data import pairs, splits
from arithmech.data.batches import answer_ids, group_by_length
from arithmech.data.sentences import VALIDATION_TOPICS, generic_text, phrasings, two_digit_items
from arithmech.data.splits import single_digit_items
from arithmech.evals import benchmarks
from arithmech.evals.benchmarks import format_number
from arithmech.evals.scoring import (
    choice_logits,
    cloze_choice,
    continuation_logprobs,
    extract_answer,
    greedy_decode,
    greedy_exact,
    is_correct,
)


# ------------------------------------------------------------------------------- answer tokens
@torch.no_grad()
def answer_scores(
    model, tok, samples: Sequence[pairs.Sample], batch_size: int = 64
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(correct (n,) bool, p (n,))``: top-1 = answer token {C}, and the softmax probability of {C} at END."""
    gold = answer_ids(tok, samples)
    correct, prob = torch.zeros(len(samples), dtype=torch.bool), torch.zeros(len(samples))
    dev = model.get_input_embeddings().weight.device
    for idx, ids in group_by_length(tok, [s.clean for s in samples], batch_size):
        logits = model(ids.to(dev), logits_to_keep=1).logits[:, -1].float().cpu()
        correct[idx] = logits.argmax(-1) == gold[idx]
        prob[idx] = logits.softmax(-1).gather(1, gold[idx, None])[:, 0]
    return correct, prob


# ------------------------------------------------------------------------- Table 1: measurements
def math_direct(model, tok, rows, shots, batch_size: int = 8) -> list[int]:
    """Few-shot word problems answered directly ("Answer: The answer is N."): 1 where the number greedy
    decoding writes after "The answer is" equals the answer exactly (the whole number, commas removed)."""
    head = "".join(f"Question: {s.question}\nAnswer: The answer is {format_number(s.answer)}.\n\n" for s in shots)
    outs = greedy_decode(
        model,
        tok,
        [f"{head}Question: {p.question}\nAnswer: The answer is" for p in rows],
        max_new_tokens=12,
        batch_size=batch_size,
        stop="\n",
    )
    return [int(is_correct(extract_answer("The answer is" + o), p.answer)) for o, p in zip(outs, rows)]


def _choice_rows(name: str, n: int, n_shot: int, seed: int, data_dir) -> tuple[list, list]:
    """``(test rows, shots per row)``: MMLU (a seeded sample of ``n`` test rows, ``n_shot`` dev rows of
    each row's subject) or CSQA (``n`` dev rows, ``n_shot`` train rows)."""
    if name == "mmlu":
        dev: dict = {}
        for c in benchmarks.read_mmlu("dev", data_dir):
            dev.setdefault(c.subject, []).append(c)
        rows = random.Random(seed).sample(benchmarks.read_mmlu("test", data_dir), n)
        return rows, [dev[c.subject][:n_shot] for c in rows]
    shots = random.Random(seed).sample(benchmarks.read_csqa("train", data_dir), n_shot)
    rows = random.Random(seed).sample(benchmarks.read_csqa("dev", data_dir), n)
    return rows, [shots] * len(rows)


def choice_items(
    model, tok, name: str, n: int, n_shot: int, seed: int = 0, data_dir=None, batch_size: int = 8
) -> list[int]:
    """MMLU or CSQA in letter form: 1 where the most likely answer letter after ``Answer:`` is right."""
    rows, shots = _choice_rows(name, n, n_shot, seed, data_dir)
    letters = "ABCD" if name == "mmlu" else "ABCDE"
    pred = choice_logits(
        model, tok, [benchmarks.choice_prompt(c, s) for c, s in zip(rows, shots)], letters, batch_size
    ).argmax(1)
    return [int(letters[i] == c.answer) for i, c in zip(pred.tolist(), rows)]


def cloze_items(
    model, tok, name: str, n: int, n_shot: int, seed: int = 0, data_dir=None, batch_size: int = 16
) -> list[int]:
    """MMLU or CSQA in cloze form: "Question: ...\nAnswer:" then each option's own text; 1 where the
    option with the highest log-likelihood per character (:func:`arithmech.evals.scoring.cloze_choice`)
    is right. Shots are written as question + answer text."""
    rows, shots = _choice_rows(name, n, n_shot, seed, data_dir)
    text = lambda c: c.choices["ABCDE".index(c.answer)]
    head = lambda ss: "".join(f"Question: {s.question}\nAnswer: {text(s)}\n\n" for s in ss)
    prompts = [head(s) + f"Question: {c.question}\nAnswer:" for c, s in zip(rows, shots)]
    pred = cloze_choice(model, tok, prompts, [c.choices for c in rows], batch_size)
    return [int("ABCDE"[i] == c.answer) for i, c in zip(pred, rows)]


@torch.no_grad()
def lm_losses(model, tok, text: str, window: int = 256, max_tokens: int = 4096) -> list[float]:
    """Mean next-token loss (nats) of each ``window``-token chunk of ``text`` (first ``max_tokens`` tokens)."""
    ids = tok(text, add_special_tokens=False)["input_ids"][:max_tokens]
    dev = model.get_input_embeddings().weight.device
    chunks = [ids[i : i + window] for i in range(0, len(ids) - 1, window) if len(ids[i : i + window]) > 1]
    return [float(model(torch.tensor([c], device=dev), labels=torch.tensor([c], device=dev)).loss) for c in chunks]


def table1_sizes(scale: float = 1.0) -> dict:
    """Evaluation sizes and training steps; ``scale`` multiplies them (the GPU run: ``scale=10``).

    The sizes are set so that a 95% Wilson interval is about ±5 points where it matters: 400 items give
    a half-width of 4.9 points at 50% and 4.5 at 30% (MMLU/CSQA cloze, above chance on SmolLM2);
    the math sets use every test row (AddSub ~120, SingleEq ~150, SVAMP ~300: ±5–9 points), GSM8K 400.
    Letter-form MMLU/CSQA stay at 150 (at chance on small models: kept to show it). At ``scale >= 2``
    the letter prompts get 5 shots, at ``scale 1`` MMLU letter is zero-shot and CSQA one-shot.
    """
    s = lambda x: max(1, int(round(x * scale)))
    big = scale >= 2
    return {
        "heldout_per_template": s(8),
        "two_digit": min(300, s(300)),
        "math_per_set": s(400),
        "math_shots": 2,
        "gsm8k": s(400),
        "mmlu": s(150),
        "mmlu_shots": 5 if big else 0,
        "csqa": s(150),
        "csqa_shots": 5 if big else 1,
        "mmlu_cloze": s(400),
        "csqa_cloze": s(400),
        "cloze_shots": 1,
        "lm_tokens": s(4096),
        "steps": s(40),
        "batch_size": 16,
    }


def evaluate_table1(model, tok, sizes: dict, seed: int = 0, data_dir=None) -> dict:
    """Every Table 1 measurement: ``{name: {"value", "n", "ci", "items", "metric"}}`` (items for paired CIs).

    Every math accuracy is exact match of the whole answer: ``heldout_phrasings`` (forms
    :data:`HELDOUT_FORMS` and Fig. 10 on the test side of the operand pairs,
    :func:`arithmech.data.splits.single_digit_items`), ``two_digit`` (test pairs), the word
    problems ``addsub``/``singleeq``/``svamp``/``gsm8k`` (the whole final number). ``mmlu``/``csqa``:
    letter form; ``mmlu_cloze``/``csqa_cloze``: cloze form (:func:`cloze_items`); ``lm_loss``: generic text.
    """
    _, held = phrasings()
    held_items = single_digit_items("test", sizes["heldout_per_template"], seed, templates=held)
    items = {
        "heldout_phrasings": [int(ok) for ok in greedy_exact(model, tok, held_items)],
        "two_digit": [int(ok) for ok in greedy_exact(model, tok, two_digit_items(sizes["two_digit"], seed))],
    }
    splits = benchmarks.math_splits(data_dir, seed)
    for name in ("addsub", "singleeq", "svamp", "gsm8k"):
        rng = random.Random(seed)
        n = min(sizes["gsm8k" if name == "gsm8k" else "math_per_set"], len(splits[name]["test"]))
        test = rng.sample(splits[name]["test"], n)
        items[name] = math_direct(model, tok, test, rng.sample(splits[name]["train"], sizes["math_shots"]))
    for name in ("mmlu", "csqa"):
        items[name] = choice_items(model, tok, name, sizes[name], sizes[f"{name}_shots"], seed, data_dir)
        items[f"{name}_cloze"] = cloze_items(
            model, tok, name, sizes[f"{name}_cloze"], sizes["cloze_shots"], seed, data_dir
        )
    out = {name: accuracy_measure(it) for name, it in items.items()}
    out["lm_loss"] = lm_loss_measure(model, tok, sizes["lm_tokens"])
    return out


def accuracy_measure(items: list) -> dict:
    """An accuracy measure: value, n, Wilson 95% interval and the 0/1 items."""
    lo, hi = wilson_interval(sum(items), len(items))
    return {"metric": "accuracy", "value": sum(items) / len(items), "n": len(items), "ci": [lo, hi], "items": items}


def loss_measure(losses: list[float]) -> dict:
    """A measure dict of per-chunk losses (nats/token): their mean, their count and the chunks as items."""
    return {"metric": "nats/token", "value": sum(losses) / len(losses), "n": len(losses), "ci": None, "items": losses}


def lm_loss_measure(model, tok, max_tokens: int = 4096) -> dict:
    """``lm_loss``: the mean next-token loss over 256-token chunks of :func:`generic_text` (its first
    ``max_tokens`` tokens), with mean ± 1.96 standard errors; ``chance`` is the loss of a uniform guess
    (ln of the vocabulary size), the level at which the skill is gone."""
    losses = lm_losses(model, tok, generic_text(), max_tokens=max_tokens)
    mean, lo, hi = mean_interval(losses)
    return {
        "metric": "nats/token (mean over chunks)",
        "value": mean,
        "n": len(losses),
        "ci": [lo, hi],
        "items": losses,
        "chance": math.log(model.get_output_embeddings().weight.shape[0]),
    }


def completion_nll(model, tok, items: list[tuple[str, str]]) -> dict:
    """Mean negative log-likelihood (nats per answer token) of ``" " + answer`` after each prompt."""
    lp, n = continuation_logprobs(model, tok, [p for p, _ in items], [" " + a for _, a in items], batch_size=64)
    per = [-x / k for x, k in zip(lp, n)]
    return {"metric": "nats/answer token", "value": sum(per) / len(per), "n": len(per), "ci": None, "items": per}


def validation_measures(model, tok, data_seed: int = 0) -> dict:
    """Model selection only, never a Table 1 result: exact match on two-digit and single-digit items of
    the validation forms and pairs (:mod:`arithmech.data.splits`: no operand pair or phrasing shared
    with the test items), ``math_nll`` (:func:`completion_nll` of those items) and ``lm_loss`` on
    :data:`VALIDATION_TOPICS`."""
    two, single = splits.two_digit_items("val", data_seed), single_digit_items("val", 4, data_seed)
    acc = lambda its: {"metric": "accuracy", "value": sum(its) / len(its), "n": len(its), "ci": None, "items": its}
    out = {
        "two_digit": acc([int(x) for x in greedy_exact(model, tok, two)]),
        "heldout_phrasings": acc([int(x) for x in greedy_exact(model, tok, single)]),
        "math_nll": completion_nll(model, tok, two + single),
    }
    losses = lm_losses(model, tok, generic_text(VALIDATION_TOPICS))
    out["lm_loss"] = loss_measure(losses)
    return out
