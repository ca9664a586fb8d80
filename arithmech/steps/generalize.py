"""Generalize (paper App. D, E): the identify pipeline on other pairs, and how two runs' key heads overlap.

* App. D — another operation: ``identify(model, tok, ["exponentiation"])`` or one template at a time
  (``templates.EXPONENTIATION``), as in Table 3.
* App. E — GSM8K: :func:`gsm8k_samples` turns GSM8K questions into (X_r, X_c) pairs by replacing the
  phrase that asks for a calculation ("Calculate the number" → "Describe the location");
  :func:`compare_runs` identifies on two datasets and reports Table 4: the shared key heads and the
  accuracy after knocking out the shared or the run-specific ones.

A model whose tokenizer lacks GSM8K's words (the embedded model's word-level vocabulary) gets no
GSM8K pairs; :func:`gsm8k_samples` says how many questions were skipped and why, and user template
pairs (``data.load_template_pairs``, ``templates.parse_pair``) take their place.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pandas as pd

from arithmech.circuits.config import Generalize as Config
from arithmech.core.models import geometry
from arithmech.data import pairs
from arithmech.data import templates as templates_module
from arithmech.evals.benchmarks import read_math
from arithmech.identify.pipeline import identify
from arithmech.methods.ablation.intervention import Forwards
from arithmech.methods.ablation.knockout import Ablation, accuracy
from arithmech.methods.ablation.overlap import overlap, overlap_knockout
from arithmech.methods.ablation.transfer import unknown_words
from arithmech.methods.effects import ranking
from arithmech.steps.control import evidence_status

DEFAULTS = Config()  # the step's defaults (arithmech.identify.config), written once

# ------------------------------------------------------------------------- custom pairs (App. D, E)
# App. E: "Calculate the number of gigabytes still available" → "Describe the location of ...".
# The paper shows one edit; these are more in the same spirit (the question's calculation phrase
# becomes a non-numerical one). The first phrase found in a question is replaced.
GSM8K_EDITS = (
    ("Calculate the number", "Describe the location"),
    ("How many", "How come"),
    ("How much", "How come"),
    ("What is the total", "What is the colour"),
    ("Find the total", "Find the colour"),
)


def gsm8k_samples(
    tok,
    n: int = DEFAULTS.n_samples,
    seed: int = DEFAULTS.seed,
    split: str = "test",
    root: str | None = None,
    edits: Sequence[tuple[str, str]] = GSM8K_EDITS,
    cue: str = "The answer is",
) -> tuple[list, dict]:
    """App. E: (X_r, X_c) pairs from GSM8K questions (``<question> The answer is`` → first answer token).

    Questions are taken in a seeded order; a question is skipped (and counted in the returned stats)
    when its answer is not a non-negative integer, none of ``edits`` occurs, the tokenizer does not
    know some of its words, or the edit changes the token length. ``root``: the data folder
    (default ``$ARITHMECH_DATA`` or ``../shared/data``, see :func:`arithmech.evals.benchmarks.data_dir`).
    """
    problems = read_math("gsm8k", root, split)
    random.Random(seed).shuffle(problems)
    stats = {
        "questions": len(problems),
        "non_integer": 0,
        "no_phrase": 0,
        "unknown_words": 0,
        "no_answer_token": 0,
        "length_mismatch": 0,
    }
    out: list[pairs.Sample] = []
    for p in problems:
        if len(out) == n:
            break
        made = _gsm8k_pair(tok, p, edits, cue)
        if isinstance(made, str):  # the reason it was skipped
            stats[made] += 1
            continue
        out.append(made)
    stats["made"] = len(out)
    return out, stats


def _gsm8k_pair(tok, p, edits: Sequence[tuple[str, str]], cue: str) -> pairs.Sample | str:
    """One GSM8K question as an (X_r, X_c) pair (the first of ``edits`` that occurs, applied once), or the reason
    it is skipped: ``non_integer`` (the answer is no non-negative integer), ``no_phrase`` (no edit occurs),
    ``unknown_words`` (the tokenizer does not know some of its words), ``no_answer_token``, ``length_mismatch``
    (the edit changes the token length)."""
    if p.answer < 0 or p.answer != int(p.answer):
        return "non_integer"
    edit = next(((a, b) for a, b in edits if a in p.question), None)
    if edit is None:
        return "no_phrase"
    clean = f"{p.question.strip()} {cue}"
    corrupt = clean.replace(edit[0], edit[1], 1)
    if unknown_words(tok, clean) or unknown_words(tok, corrupt):
        return "unknown_words"
    target = str(int(p.answer))
    split_ = pairs.answer_split(tok, clean, target)
    if split_ is None:
        return "no_answer_token"
    clean_p, ans = split_
    corrupt_p = corrupt + clean_p[len(clean) :]
    n_tok = len(tok(clean_p)["input_ids"])
    if n_tok != len(tok(corrupt_p)["input_ids"]):
        return "length_mismatch"
    return pairs.Sample(
        clean_p,
        corrupt_p,
        tok.decode([ans]).strip(),
        target,
        0,
        0,
        "gsm8k",
        "gsm8k",
        "gsm8k",
        {"A": [], "B": [], "operator": [], "end": n_tok - 1},
        answer_token="first",  # pairs.answer_split: the answer's first token, the paper's {C}
    )


def compare_runs(model, tok, a, b, config: Config, names: tuple[str, str] = ("a", "b")) -> dict:
    """Table 4: identify on two datasets ``a`` and ``b`` (tasks, template lists or sample lists), named ``names``,
    then the overlap of their ``config.top`` heads by effect rank ("top-10 key heads") and the knockout of shared
    vs run-specific heads on each dataset (each with its own X_c means), beside ``config.n_random`` sets of as many
    random heads outside both top lists. ``config``: the pairs drawn, the seed, the key threshold, ``top``,
    ``n_random`` and the batch size (:class:`arithmech.circuits.config.Generalize`).

    Returns ``{"runs": {name: IdentifyResult}, "overlap": dict, "knockout": DataFrame, "top": DataFrame}``;
    ``top`` lists each run's top heads with their effects and whether they pass ``config.threshold``.
    """
    n_samples, seed, threshold, top, batch_size = (
        config.n_samples,
        config.seed,
        config.threshold,
        config.top,
        config.batch_size,
    )
    runs = {}
    for name, spec in zip(names, (a, b)):
        runs[name] = identify(
            model,
            tok,
            [spec],
            n_samples=n_samples,
            seed=seed,
            threshold=threshold,
            knockout=False,
            transfer=False,
            batch_size=batch_size,
        )
    heads, rows = _top_heads(runs, top, threshold)
    geo = geometry(model)
    ov = overlap(heads[names[0]], heads[names[1]], top)
    ko = overlap_knockout(
        model,
        tok,
        ov,
        {k: (next(iter(r.tasks.values())), r.means) for k, r in runs.items()},
        Forwards(batch_size=batch_size),
        universe=[(l, h) for l in range(geo.n_layers) for h in range(geo.n_heads)],
        n_random=config.n_random,
        seed=seed,
    )
    ko["knocked_out"] = ko["knocked_out"].map(
        {
            "shared": "shared",
            "only_a": f"only {names[0]}",
            "only_b": f"only {names[1]}",
            "top_a": f"top {names[0]}",
            "top_b": f"top {names[1]}",
        }
    )
    return {"runs": runs, "overlap": ov, "knockout": ko, "top": pd.DataFrame(rows)}


def _top_heads(runs: dict, top: int, threshold: float) -> tuple[dict, list[dict]]:
    """Each run's ``top`` heads by effect rank, and their rows for the ``top`` table: rank, effect and whether the
    effect passes the key threshold."""
    heads, rows = {}, []
    for k, r in runs.items():
        task = next(iter(r.tasks))
        heads[k] = ranking(r.effects, task)[0][:top]
        eff = r.effects[r.effects.task == task].set_index(["layer", "head"])["effect"]
        rows += [
            {
                "dataset": k,
                "rank": i + 1,
                "head": f"{l}.{h}",
                "effect": float(eff[(l, str(h))]),
                "key head": bool(eff[(l, str(h))] < threshold),
            }
            for i, (l, h) in enumerate(heads[k])
        ]
    return heads, rows


# ------------------------------------------------------------------------------------- Table 3
def table3(
    model,
    tok,
    templates: Sequence | None = None,
    n_samples: int = DEFAULTS.n_samples,
    seed: int = DEFAULTS.seed,
    threshold: float = DEFAULTS.threshold,
    batch_size: int = DEFAULTS.batch_size,
) -> tuple[list[dict], dict]:
    """App. D, Table 3: for each exponentiation template (default ``templates.EXPONENTIATION``), the key
    heads and the relative accuracy change on its X_r after knocking them out (per-template X_c means).

    Returns ``(rows, runs)``; a template the model answers no prompt of gets a row with ``status``
    saying so instead of heads.
    """
    rows, runs = [], {}
    for t in templates if templates is not None else templates_module.EXPONENTIATION:
        row = {"template": t.id, "X_r": t.clean, "X_c": t.corrupt}
        try:
            r = identify(
                model,
                tok,
                [[t]],
                n_samples=n_samples,
                seed=seed,
                threshold=threshold,
                knockout=False,
                transfer=False,
                batch_size=batch_size,
            )
        except ValueError as e:
            rows.append({**row, "status": str(e)})
            continue
        runs[t.id] = r
        info = next(iter(r.info.values()))
        heads = [(h["layer"], h["head"]) for h in r.key_heads["heads"]]
        samples = next(iter(r.tasks.values()))
        acc = accuracy(
            model, tok, samples, r.means, [Ablation(), Ablation.of(heads=heads)], Forwards(batch_size=batch_size)
        )
        rows.append(
            {
                **row,
                "status": evidence_status(samples),
                "example": f"{samples[0].clean} {samples[0].target}  |  {samples[0].corrupt}",
                "accuracy": info["accuracy"],
                "n_kept": info["n_kept"],
                "key_heads": [f"{l}.{h}" for l, h in heads],
                "knockout_change": float((acc[1] - acc[0]) / acc[0]),
            }
        )
    return rows, runs


# ------------------------------------------------------------------------------ App. E stand-ins
# App. E's edit ("Calculate the number" → "Describe the location") applied to word problems written
# in words a small vocabulary has: the accumulation sentences of Fig. 10 keep their story and lose the
# question's calculation phrase ("total number of" → "colour of the"), same token count.
WORD_PROBLEM_PAIRS = [
    templates_module.parse_pair(
        t.clean,
        t.clean.replace("What's the total number of {OBJECT}", "What's the colour of the {OBJECT}"),
        id=f"word-{t.id}",
        op="addition",
        op_word=t.op_word,
    )
    for t in templates_module.FIG10
    if t.family == "accumulation"
]


def app_e_dataset(
    tok, n: int = DEFAULTS.n_samples, seed: int = DEFAULTS.seed, min_samples: int = 16, root: str | None = None
) -> dict:
    """The second dataset of Table 4: GSM8K pairs when the tokenizer covers enough GSM8K questions
    (at least ``min_samples``), else the word problems of Fig. 10 (time spans and accumulating
    objects, with their Fig. 9 counterfactuals) — sentences that need reading, not only an equation.
    Says which and why."""
    try:
        samples, stats = gsm8k_samples(tok, n=n, seed=seed, root=root)
    except FileNotFoundError as e:
        samples, stats = [], {"error": str(e)}
    if len(samples) >= min_samples:
        return {"name": "GSM8K", "spec": samples, "gsm8k_stats": stats, "reason": f"{len(samples)} GSM8K pairs"}
    return {
        "name": "Fig. 10 word problems",
        "spec": "fig10",
        "gsm8k_stats": stats,
        "reason": f"only {len(samples)} GSM8K questions fit this tokenizer (need {min_samples}); using the "
        "word problems of Fig. 10 instead",
    }
