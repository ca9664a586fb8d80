"""The six benchmarks of Table 1 (GSM8K, AddSub, SingleEq, SVAMP; MMLU, CSQA) and the toy ones.

**Files.** Read from a folder in the layout of ``../shared/data`` (see its README):
``gsm8k/{train,test}.jsonl``, ``addsub/AddSub.json``, ``singleeq/questions.json``,
``svamp/SVAMP.json``, ``mmlu/{dev,test}/*.csv``, ``csqa/{train,dev}_rand_split.jsonl``. The folder is
``data_dir=`` if given, else ``$ARITHMECH_DATA``, else ``<repo>/../shared/data``. ``source="hf"``
reads the Hugging Face copies instead (needs ``pip install datasets`` and network; see ``HF_NAMES``).

**Math splits.** Only GSM8K has an official train split. AddSub, SingleEq and SVAMP are split by a
seeded hash of the *normalized* question (lower case, letters and digits only, single spaces):
``test_frac`` (0.3) of the questions go to test. Hashing the text, not shuffling rows, puts a question
shared by two sets (AddSub and SingleEq both come from MAWPS) on the same side in both. Then every
training question whose normalized text occurs in any test set is dropped, as are repeats across the
training sets (first kept, in the order gsm8k, addsub, singleeq, svamp).

**Math prompt** (few-shot chain of thought, ``n_shot`` exemplars drawn with ``seed`` from the GSM8K
training split, calculator annotations ``<<..>>`` removed, ``#### N`` rewritten)::

    Question: {question}
    Answer: {worked solution} The answer is {N}.

    ...
    Question: {question}
    Answer:

Generation is greedy (:func:`arithmech.evals.scoring.greedy_decode`: batched with left padding, an
attention mask and the KV cache) and stops at the next ``Question:``. **Answer extraction**
(:func:`arithmech.evals.scoring.extract_answer`): commas removed; the first number after "The answer
is", else the last number in the output; compared numerically (``|pred - gold| < 1e-4``).

**Multiple choice** (MMLU 5-shot from ``dev`` per subject, Hendrycks' format; CSQA dev, 5-shot from
``train``, same layout with choices A-E)::

    The following are multiple choice questions (with answers) about {subject}.

    {question}
    A. {choice}
    ...
    Answer: {letter}

The prediction is the argmax over the next-token logits of the answer letters after ``Answer:``
(:func:`arithmech.evals.scoring.choice_logits`).

**Toy benchmarks** of the embedded model (:func:`arithmech.evals.toy.toy_items`): held-out two-digit problems
(exact greedy answer), held-out negative differences ("3 minus 7" → ``-4``, never trained), answer-token
accuracy on fresh single-digit template draws, and the generic facts (the toy "MMLU").
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arithmech.core.inputs import quoted
from arithmech.evals.scoring import choice_logits, extract_answer, greedy_decode, is_correct
from arithmech.evals.toy import TOY, toy_items

MATH = ("gsm8k", "addsub", "singleeq", "svamp")
CHOICE = ("mmlu", "csqa")
BENCHMARKS = MATH + CHOICE
HF_NAMES = {
    "gsm8k": ("openai/gsm8k", "main"),
    "svamp": ("ChilleD/SVAMP", None),
    "mmlu": ("cais/mmlu", "all"),
    "csqa": ("tau/commonsense_qa", None),
}
FILES = {
    "gsm8k": "gsm8k/{split}.jsonl",
    "addsub": "addsub/AddSub.json",
    "singleeq": "singleeq/questions.json",
    "svamp": "svamp/SVAMP.json",
    "mmlu": "mmlu/{split}",
    "csqa": "csqa/{split}_rand_split.jsonl",
}


class MissingDataError(FileNotFoundError):
    """A benchmark file is not where the data folder says it should be."""


def data_dir(path: str | Path | None = None) -> Path:
    """The benchmark folder: ``path``, else ``$ARITHMECH_DATA``, else ``<repo>/../shared/data``."""
    if path is not None:
        return Path(path)
    if os.environ.get("ARITHMECH_DATA"):
        return Path(os.environ["ARITHMECH_DATA"])
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def _file(name: str, root: str | Path | None, split: str = "") -> Path:
    p = data_dir(root) / FILES[name].format(split=split)
    if not p.exists():
        raise MissingDataError(
            f"{name}: {quoted(p)} does not exist. Put the benchmark files in the layout of ../shared/data (its "
            f"README lists them), point ARITHMECH_DATA or data_dir= at that folder, or use source='hf' "
            f"(pip install datasets; needs network)."
        )
    return p


# ------------------------------------------------------------------------------------ math readers
@dataclass(frozen=True)
class Problem:
    """A math word problem with a numeric answer (``solution``: GSM8K's worked text, if any)."""

    source: str
    id: str
    question: str
    answer: float
    solution: str = ""


def _clean_solution(text: str) -> str:
    body = re.sub(r"<<[^>]*>>", "", text.split("####")[0]).strip()
    return " ".join(body.split())


def read_math(name: str, root: str | Path | None = None, split: str = "test", source: str = "local") -> list[Problem]:
    """All rows of one math set (GSM8K: the official ``split``; the others are single files)."""
    if source == "hf":
        return _read_hf(name, split)
    if name == "gsm8k":
        rows = [json.loads(l) for l in _file(name, root, split).read_text().splitlines() if l.strip()]
        return [
            Problem(
                name,
                f"{split}-{i}",
                r["question"],
                float(r["answer"].split("####")[-1].replace(",", "")),
                _clean_solution(r["answer"]),
            )
            for i, r in enumerate(rows)
        ]
    rows = json.loads(_file(name, root).read_text())
    if name == "svamp":
        return [
            Problem(name, r["ID"], f"{r['Body'].strip()} {r['Question'].strip()}", float(r["Answer"])) for r in rows
        ]
    if name in ("addsub", "singleeq"):
        return [
            Problem(name, str(r["iIndex"]), " ".join(r["sQuestion"].split()), float(r["lSolutions"][0])) for r in rows
        ]
    raise ValueError(f"unknown math benchmark {name!r}; use one of {MATH}")


def _hf(name: str):
    try:
        import datasets  # lazy: optional, hub datasets only
    except ImportError:
        raise ImportError(
            f"source='hf' for {name} needs the `datasets` package (pip install datasets) and network "
            "access; offline, use the local files (data_dir=, ARITHMECH_DATA)."
        ) from None
    if name not in HF_NAMES:
        raise ValueError(f"{name} has no Hugging Face source here; use the local files (data_dir=)")
    return datasets.load_dataset(*[x for x in HF_NAMES[name] if x])


def _read_hf(name: str, split: str) -> list[Problem]:
    ds = _hf(name)[split]
    if name == "gsm8k":
        return [
            Problem(
                name,
                f"{split}-{i}",
                r["question"],
                float(r["answer"].split("####")[-1].replace(",", "")),
                _clean_solution(r["answer"]),
            )
            for i, r in enumerate(ds)
        ]
    return [Problem(name, r["ID"], f"{r['Body'].strip()} {r['Question'].strip()}", float(r["Answer"])) for r in ds]


def normalize_question(text: str) -> str:
    """The dedup key: lower case, only letters and digits, single spaces."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def _is_test(key: str, seed: int, test_frac: float) -> bool:
    h = int.from_bytes(hashlib.sha256(f"{seed}:{key}".encode()).digest()[:8], "big")
    return h / 2**64 < test_frac


def math_splits(
    root: str | Path | None = None, seed: int = 0, test_frac: float = 0.3
) -> dict[str, dict[str, list[Problem]]]:
    """``{set: {"train": [...], "test": [...]}}`` for the four math sets, deduplicated (module docstring)."""
    out: dict[str, dict[str, list[Problem]]] = {}
    for name in MATH:
        if name == "gsm8k":
            parts = {"train": read_math(name, root, "train"), "test": read_math(name, root, "test")}
        else:
            rows = read_math(name, root)
            parts = {
                "train": [p for p in rows if not _is_test(normalize_question(p.question), seed, test_frac)],
                "test": [p for p in rows if _is_test(normalize_question(p.question), seed, test_frac)],
            }
        for side, rows in parts.items():
            seen, kept = set(), []
            for p in rows:
                k = normalize_question(p.question)
                if k not in seen:
                    seen.add(k)
                    kept.append(p)
            parts[side] = kept
        out[name] = parts
    test_keys = {normalize_question(p.question) for s in out.values() for p in s["test"]}
    seen = set(test_keys)
    for name in MATH:
        kept = []
        for p in out[name]["train"]:
            k = normalize_question(p.question)
            if k not in seen:
                seen.add(k)
                kept.append(p)
        out[name]["train"] = kept
    return out


def format_number(x: float) -> str:
    """An answer as a prompt writes it: ``12.0`` → ``"12"``, ``2.5`` → ``"2.5"``."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def math_example(p: Problem) -> tuple[str, str]:
    """``(prompt, completion)`` of one problem in the few-shot format (also the SFT format)."""
    body = f" {p.solution}" if p.solution else ""
    return f"Question: {p.question}\nAnswer:", f"{body} The answer is {format_number(p.answer)}."


def fewshot_prefix(exemplars: Sequence[Problem]) -> str:
    return "".join(q + a + "\n\n" for q, a in map(math_example, exemplars))


def math_prompt(p: Problem, exemplars: Sequence[Problem]) -> str:
    return fewshot_prefix(exemplars) + math_example(p)[0]


# ------------------------------------------------------------------------------ multiple choice
@dataclass(frozen=True)
class Choice:
    subject: str
    question: str
    choices: tuple[str, ...]
    answer: str


def read_mmlu(split: str = "test", root: str | Path | None = None, source: str = "local") -> list[Choice]:
    """MMLU rows (CSV without header: question, A, B, C, D, answer), subject from the file name."""
    if source == "hf":
        ds = _hf("mmlu")[split]
        return [Choice(r["subject"], r["question"], tuple(r["choices"]), "ABCD"[r["answer"]]) for r in ds]
    folder = _file("mmlu", root, split)
    rows = []
    for f in sorted(folder.glob(f"*_{split}.csv")):
        subject = f.name[: -len(f"_{split}.csv")]
        with open(f, newline="", encoding="utf-8") as fh:
            rows += [Choice(subject, r[0], tuple(r[1:5]), r[5].strip()) for r in csv.reader(fh)]
    return rows


def read_csqa(split: str = "dev", root: str | Path | None = None, source: str = "local") -> list[Choice]:
    """CommonsenseQA rows; the dev split is the test set (test labels are hidden)."""
    if source == "hf":
        ds = _hf("csqa")["validation" if split == "dev" else split]
        return [Choice("commonsense", r["question"], tuple(r["choices"]["text"]), r["answerKey"]) for r in ds]
    rows = [json.loads(l) for l in _file("csqa", root, split).read_text().splitlines() if l.strip()]
    return [
        Choice(
            "commonsense",
            r["question"]["stem"],
            tuple(c["text"] for c in r["question"]["choices"]),
            r.get("answerKey", ""),
        )
        for r in rows
    ]


def choice_example(c: Choice, with_answer: bool) -> str:
    opts = "".join(f"\n{L}. {t}" for L, t in zip("ABCDE", c.choices))
    return f"{c.question}{opts}\nAnswer:" + (f" {c.answer}\n\n" if with_answer else "")


def choice_prompt(c: Choice, shots: Sequence[Choice]) -> str:
    head = f"The following are multiple choice questions (with answers) about {c.subject.replace('_', ' ')}.\n\n"
    return head + "".join(choice_example(s, True) for s in shots) + choice_example(c, False)


# ---------------------------------------------------------------------------------- evaluation
def _limit(rows: list, limit: int | None, seed: int) -> list:
    if limit is None or limit >= len(rows):
        return rows
    return random.Random(seed).sample(rows, limit)


def score_items(  # noqa: PLR0913 (one scorer for every benchmark format)
    model,
    tok,
    benchmarks: Sequence[str] = BENCHMARKS,
    root: str | Path | None = None,
    limit: int | None = None,
    n_shot: int = 4,
    seed: int = 0,
    batch_size: int = 8,
    max_new_tokens: int = 256,
    source: str = "local",
    test_frac: float = 0.3,
) -> dict[str, list[int]]:
    """Per benchmark, each item's score (1 right, 0 wrong), in an order fixed by ``seed``: two models scored with
    the same arguments are paired item by item. ``limit`` scores a seeded sample of that many rows per benchmark."""
    unknown = set(benchmarks) - set(BENCHMARKS) - set(TOY)
    if unknown:
        raise ValueError(f"unknown benchmarks {sorted(unknown)}; choose from {BENCHMARKS + TOY}")
    res: dict[str, list[int]] = {}
    if set(benchmarks) & set(TOY):
        res.update(toy_items(model, tok, seed=seed, which=[b for b in benchmarks if b in TOY]))
    math = [b for b in benchmarks if b in MATH]
    if math:
        splits = math_splits(root, seed, test_frac) if source == "local" else None
        shots_pool = splits["gsm8k"]["train"] if splits else read_math("gsm8k", root, "train", source)
        shots = random.Random(seed).sample(shots_pool, n_shot)
        for b in math:
            rows = _limit(splits[b]["test"] if splits else read_math(b, root, "test", source), limit, seed)
            outs = greedy_decode(
                model,
                tok,
                [math_prompt(p, shots) for p in rows],
                max_new_tokens,
                stop="Question:",
                batch_size=batch_size,
            )
            res[b] = [int(is_correct(extract_answer(o), p.answer)) for o, p in zip(outs, rows)]
    if "mmlu" in benchmarks:
        dev: dict[str, list] = {}
        for c in read_mmlu("dev", root, source):
            dev.setdefault(c.subject, []).append(c)
        rows = _limit(read_mmlu("test", root, source), limit, seed)
        pred = choice_logits(model, tok, [choice_prompt(c, dev[c.subject][:5]) for c in rows], "ABCD", batch_size)
        res["mmlu"] = [int("ABCD"[i] == c.answer) for i, c in zip(pred.argmax(1).tolist(), rows)]
    if "csqa" in benchmarks:
        examples = random.Random(seed).sample(read_csqa("train", root, source), 5)
        rows = _limit(read_csqa("dev", root, source), limit, seed)
        pred = choice_logits(model, tok, [choice_prompt(c, examples) for c in rows], "ABCDE", batch_size)
        res["csqa"] = [int("ABCDE"[i] == c.answer) for i, c in zip(pred.argmax(1).tolist(), rows)]
    return res


def evaluate(model, tok, benchmarks: Sequence[str] = BENCHMARKS, **kw) -> dict[str, float]:
    """Accuracy per benchmark (4 decimals) of :func:`score_items` (same keywords)."""
    return {k: round(sum(v) / len(v), 4) for k, v in score_items(model, tok, benchmarks, **kw).items()}
