"""Cloze multiple choice: each choice's own text scored after a context, the context run once.

A cloze item is a context and two to five continuations (the choices); the model "answers" with the
choice whose text it finds most likely after the context. That is how a small model's general skills
are usually measured (lm-evaluation-harness, lighteval), and unlike answer-letter scoring it does not
first ask the model to map letters to options, which a 135M model cannot do (it sits at chance there).

**Scores** (:func:`choice_logprobs`): per choice, ``log P(choice tokens | context)`` summed over the
choice's tokens, and its length in characters. ``acc`` takes the highest sum; ``acc_norm`` (the
headline, as the harness reports HellaSwag, PIQA and ARC) divides each sum by the length first.

**Tokens.** A choice is tokenized inside the whole text ``context + choice`` (word pieces merge as in
running text). The context's tokens are the tokens every choice's text starts with; where a choice's
text re-tokenizes the context's last token (a merge across the boundary), that token is fed with the
choice but not scored, exactly as :func:`arithmech.evals.scoring.split_continuation` splits it.

**The context runs once** (the point of this module): an item is packed into one row — its context,
then every choice — and an attention mask lets each choice see the context and itself only, at the
positions it would have after the context alone::

    row:  c1 c2 ... cP | a1 a2 a3 | b1 b2 | ...        positions 0..P-1 | P, P+1, P+2 | P, P+1 | ...
    mask: a choice token sees the context and the earlier tokens of its own choice, nothing else

A 4-choice item with a context of ``P`` tokens and choices of ``T`` costs ``P + 4T`` token positions
instead of ``4(P + T)``, with no key/value copies. The scores equal one full forward per choice to float
rounding (``tests/parity/evals/test_cloze.py`` keeps them within 1e-4; ``benchmarks/bench_cloze.py``
measures the speed against the per-choice forwards).

**Sets** (:func:`read`): ``hellaswag``, ``piqa``, ``arc_easy``, ``mmlu`` and ``csqa``, from the files and
with the prompts that ``../shared/data/README.md`` describes (the harness's zero-shot cloze forms).
:data:`CHANCE` is each set's chance accuracy.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from arithmech.core.inputs import quoted
from arithmech.core.stats import wilson_interval
from arithmech.evals.benchmarks import MissingDataError, data_dir

SETS = ("hellaswag", "piqa", "arc_easy", "mmlu", "csqa")
FILES = {
    "hellaswag": "hellaswag/hellaswag_val_full.txt",
    "piqa": "piqa/valid.jsonl",
    "arc_easy": "arc/ARC-Easy-Test.jsonl",
    "mmlu": "mmlu/test",
    "csqa": "csqa/dev_rand_split.jsonl",
}


@dataclass(frozen=True)
class Item:
    """One cloze item: ``context``, the ``choices`` (each starts with its separating space) and the gold index."""

    context: str
    choices: tuple[str, ...]
    gold: int


# ------------------------------------------------------------------------------------ readers
def _path(name: str, root) -> Path:
    p = data_dir(root) / FILES[name]
    if not p.exists():
        raise MissingDataError(
            f"{name}: {quoted(p)} does not exist; put the benchmark files in the layout of ../shared/data "
            f"(its README lists them) or point ARITHMECH_DATA at that folder"
        )
    return p


def _pre(text: str) -> str:
    """The harness's HellaSwag ``preprocess``: strip, `` [title]`` → ``. ``, drop ``[...]``, single spaces."""
    text = text.strip().replace(" [title]", ". ")
    return re.sub(r"\[.*?\]", "", text).replace("  ", " ")


def _capitalise_last(ctx: str) -> str:
    """The data README's rule for the lost ``ctx_b.capitalize()``: the fragment after the last ``.``, ``!``
    or ``?`` starts upper-case when it starts lower-case and does not itself end a sentence."""
    m = re.search(r"([.!?]\s+)([a-z])([^.!?]*)$", ctx)
    return ctx[: m.start(2)] + m.group(2).upper() + ctx[m.end(2) :] if m else ctx


def _hellaswag(root) -> list[Item]:
    lines = _path("hellaswag", root).read_text(encoding="utf-8").split("\n")
    out = []
    for i in range(0, len(lines) - 5, 6):
        ctx, gold, endings = lines[i], lines[i + 1], lines[i + 2 : i + 6]
        out.append(Item(_capitalise_last(_pre(ctx)), tuple(" " + _pre(e) for e in endings), int(gold)))
    return out


def _piqa(root) -> list[Item]:
    p = _path("piqa", root)
    rows = [json.loads(l) for l in p.read_text(encoding="utf-8").splitlines() if l.strip()]
    labels = (p.parent / "valid-labels.lst").read_text().split()
    return [
        Item(f"Question: {r['goal']}\nAnswer:", (" " + r["sol1"], " " + r["sol2"]), int(g))
        for r, g in zip(rows, labels)
    ]


def _qa(stem: str, choices: Sequence[str], gold: int) -> Item:
    return Item(f"Question: {stem}\nAnswer:", tuple(" " + c for c in choices), gold)


def _arc_easy(root) -> list[Item]:
    out = []
    for l in _path("arc_easy", root).read_text(encoding="utf-8").splitlines():
        if l.strip():
            r = json.loads(l)
            ch = r["question"]["choices"]
            out.append(
                _qa(r["question"]["stem"], [c["text"] for c in ch], [c["label"] for c in ch].index(r["answerKey"]))
            )
    return out


def _mmlu(root) -> list[Item]:
    """MMLU test rows in the cloze form of SmolLM2's own evaluation (lighteval's ``mmlu_cloze_prompt``): a
    subject line, then ``Question: ...\nAnswer:``; the choices are the answer texts."""
    out = []
    for f in sorted(_path("mmlu", root).glob("*_test.csv")):
        head = f"The following are questions about {f.name[: -len('_test.csv')].replace('_', ' ')}.\n"
        with open(f, newline="", encoding="utf-8") as fh:
            out += [
                Item(head + f"Question: {r[0]}\nAnswer:", tuple(" " + c for c in r[1:5]), "ABCD".index(r[5].strip()))
                for r in csv.reader(fh)
            ]
    return out


def _csqa(root) -> list[Item]:
    """CommonsenseQA dev rows (the test labels are hidden), as lighteval scores it: the bare question, the
    answer texts as choices."""
    out = []
    for l in _path("csqa", root).read_text(encoding="utf-8").splitlines():
        if l.strip():
            r = json.loads(l)
            ch = r["question"]["choices"]
            out.append(
                Item(
                    r["question"]["stem"],
                    tuple(" " + c["text"] for c in ch),
                    [c["label"] for c in ch].index(r["answerKey"]),
                )
            )
    return out


READERS = {"hellaswag": _hellaswag, "piqa": _piqa, "arc_easy": _arc_easy, "mmlu": _mmlu, "csqa": _csqa}


def read(name: str, root=None) -> list[Item]:
    """Every item of cloze set ``name`` (:data:`SETS`) from the data folder (``root``, else the default)."""
    if name not in READERS:
        raise ValueError(f"cloze set {name!r}: use one of {', '.join(SETS)}")
    return READERS[name](root)


def sample(name: str, n: int, seed: int = 0, root=None) -> list[Item]:
    """``n`` items of set ``name`` drawn without replacement with ``seed`` (every item when ``n`` exceeds the set)."""
    rows = read(name, root)
    return rows if n >= len(rows) else random.Random(f"cloze:{name}:{seed}").sample(rows, n)


def chance(items: Sequence[Item]) -> float:
    """Chance accuracy of ``items``: the mean of 1 / (number of choices)."""
    return sum(1 / len(it.choices) for it in items) / len(items)


# ------------------------------------------------------------------------------------ scoring
def _tokens(tok, it: Item) -> tuple[list[int], list[list[int]], list[int]]:
    """``(shared context ids, per-choice tail ids, per-choice tokens of the tail that are not scored)``."""
    p = tok(it.context)["input_ids"]
    fulls = [tok(it.context + c)["input_ids"] for c in it.choices]
    starts = [len(p) if f[: len(p)] == p else len(p) - 1 for f in fulls]  # split_continuation's rule
    m = min(starts)
    while m > 0 and any(f[:m] != p[:m] for f in fulls):
        m -= 1
    if m == 0:
        raise ValueError(f"cloze item: no context token is shared by every choice: {it.context[:60]!r}")
    if any(len(f) <= s for f, s in zip(fulls, starts)):
        raise ValueError(f"cloze item: a choice adds no token after the context: {it.context[:60]!r}")
    return p[:m], [f[m:] for f in fulls], [s - m for s in starts]


def _pad_id(tok) -> int:
    return tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)


def budget_batches(lengths: Sequence[int], order: Sequence[int], most: int, tokens: int) -> list[list[int]]:
    """``order`` (indices sorted by ``lengths``) cut into batches of at most ``most`` rows whose padded size
    (rows × the longest row) stays within ``tokens`` — long rows go in small batches, short rows in large
    ones, so padding stays small whatever the spread of lengths."""
    out: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        if cur and (len(cur) >= most or (len(cur) + 1) * max(lengths[i], max(lengths[c] for c in cur)) > tokens):
            out.append(cur)
            cur = []
        cur.append(i)
    return out + [cur] if cur else out


def _packed(toks) -> tuple[list[int], list[int], list[int], list[tuple[int, int, int]]]:
    """One item as one row: ``(ids, positions, segment, spans)`` — the context (segment -1) then each choice's
    tail (segment k) at positions counting on from the context's end; ``spans[k] = (start, length, skip)``."""
    ctx, tails, skips = toks
    ids, pos, seg, spans = list(ctx), list(range(len(ctx))), [-1] * len(ctx), []
    for k, t in enumerate(tails):
        spans.append((len(ids), len(t), skips[k]))
        ids += t
        pos += range(len(ctx), len(ctx) + len(t))
        seg += [k] * len(t)
    return ids, pos, seg, spans


@torch.no_grad()
def choice_logprobs(
    model, tok, items: Sequence[Item], batch_size: int = 16, max_tokens: int = 4096
) -> list[list[float]]:
    """Per item, per choice: ``log P(choice | context)`` summed over the choice's scored tokens (module
    docstring), the context run once per item.

    Each item is **one row**: its context, then every choice, each choice at the positions that follow the
    context, with an attention mask that lets a choice's tokens see the context and the earlier tokens of
    their own choice, never another choice (a ``(b, 1, L, L)`` additive mask, 0 or the dtype's minimum; the model sees
    exactly the attention of ``context + choice`` run alone). Rows are sorted by length and batched (at most
    ``batch_size`` items, at most ``max_tokens`` padded tokens: :func:`budget_batches`); ``W_U`` runs only from the
    first context's last position on."""
    rows = [_packed(_tokens(tok, it)) for it in items]
    dev, pad = model.get_input_embeddings().weight.device, _pad_id(tok)
    out: list[list[float]] = [[0.0] * len(it.choices) for it in items]
    lens = [len(r[0]) for r in rows]
    for idx in budget_batches(lens, sorted(range(len(items)), key=lens.__getitem__), batch_size, max_tokens):
        L = max(lens[i] for i in idx)
        ids = torch.full((len(idx), L), pad, dtype=torch.long)
        pos = torch.zeros((len(idx), L), dtype=torch.long)
        mask = torch.zeros((len(idx), 1, L, L), dtype=torch.bool)
        mask[:, 0, :, 0] = True  # padding rows see one key (no empty softmax)
        for b, i in enumerate(idx):
            r_ids, r_pos, r_seg, _ = rows[i]
            n = len(r_ids)
            ids[b, :n], pos[b, :n] = torch.tensor(r_ids), torch.tensor(r_pos)
            seg, q = torch.tensor(r_seg), torch.arange(n)
            mask[b, 0, :n, :n] = (q[:, None] >= q[None, :]) & ((seg[None, :] == -1) | (seg[:, None] == seg[None, :]))
        first = min(rows[i][3][0][0] for i in idx) - 1  # the earliest position whose logits are read
        dtype = model.get_input_embeddings().weight.dtype  # additive: eager attention adds the mask as is
        bias = torch.zeros(mask.shape, dtype=dtype).masked_fill_(~mask, torch.finfo(dtype).min)
        logits = model(
            input_ids=ids.to(dev),
            attention_mask=bias.to(dev),
            position_ids=pos.to(dev),
            logits_to_keep=torch.arange(first, L, device=dev),
        ).logits  # (b, L - first, V)
        logp = (logits.float() - logits.float().logsumexp(-1, keepdim=True)).cpu()
        for b, i in enumerate(idx):
            r_ids, _, _, spans = rows[i]
            ctx_end = spans[0][0]
            for k, (start, n, skip) in enumerate(spans):
                # the choice's first token is read after the context's last token; token j after token j - 1
                at = [ctx_end - 1] + list(range(start, start + n - 1))
                lp = [float(logp[b, a - first, r_ids[start + j]]) for j, a in enumerate(at)]
                out[i][k] = sum(lp[skip:])
    return out


def accuracy(items: Sequence[Item], logprobs: Sequence[Sequence[float]], norm: bool = True) -> list[int]:
    """1 per item whose gold choice scores highest: by summed log-probability per character (``norm``, the
    harness's ``acc_norm``) or summed (``acc``); the first choice wins a tie."""
    out = []
    for it, lp in zip(items, logprobs):
        s = [x / len(c) if norm else x for x, c in zip(lp, it.choices)]
        out.append(int(max(range(len(s)), key=lambda k: (s[k], -k)) == it.gold))
    return out


def fresh(name: str, n: int, seed: int = 0, used: int = 100, root=None) -> list[Item]:
    """``n`` items of set ``name`` that :func:`sample` with ``used`` items and ``seed`` does not hold (drawn without
    replacement by their own seed): items no earlier run at that size was scored on."""
    rows = read(name, root)
    key = lambda it: (it.context, tuple(it.choices), it.gold)
    taken = {key(r) for r in sample(name, used, seed, root)}
    rest = [r for r in rows if key(r) not in taken]
    if n > len(rest):
        raise ValueError(f"cloze set {name}: {n} fresh items asked, {len(rest)} left after {used}")
    return random.Random(f"cloze-fresh:{name}:{seed}:{used}").sample(rest, n)


def measure(model, tok, name: str, n: int, seed: int = 0, root=None, batch_size: int = 16) -> dict:
    """Set ``name``'s ``acc_norm`` on ``n`` sampled items: a measure dict (value, n, Wilson 95% interval,
    the 0/1 items for paired intervals) with its ``chance`` accuracy."""
    return score(model, tok, sample(name, n, seed, root), batch_size)


def score(model, tok, items: list[Item], batch_size: int = 16) -> dict:
    """:func:`measure` on given ``items``."""
    acc = accuracy(items, choice_logprobs(model, tok, items, batch_size))
    lo, hi = wilson_interval(sum(acc), len(acc))
    return {
        "metric": "accuracy (acc_norm, cloze)",
        "value": sum(acc) / len(acc),
        "n": len(acc),
        "ci": [lo, hi],
        "items": acc,
        "chance": chance(items),
    }
