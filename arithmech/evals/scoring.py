"""Scoring a causal LM on prompts: greedy decoding, answer-letter logits, answer extraction.

Every evaluation of the project goes through these functions (the toy benchmarks of the embedded
model, the six benchmarks of Table 1, the CPU Table 1 of :mod:`arithmech.table1.run`).

**Batching: left padding, attention mask, position ids from the mask.** Prompts are sorted by token
length (equal lengths share a batch and then need no padding at all) and cut into batches of
``batch_size``; a shorter prompt in a batch gets pad tokens on the *left* so that every row's last
token sits at the last position, where the next token is read. The attention mask hides the pads
(their keys get zero weight) and the position ids count only real tokens (``cumsum(mask) - 1``), so
each row sees the positions a lone prompt sees, whatever the model's position scheme (RoPE or
absolute). Why not group by length without padding: benchmark prompts (few-shot word problems,
MMLU) have nearly all-distinct lengths, so grouping would run them one at a time. The price is that
padded rows are equal to a lone forward only up to float rounding of the reductions; the tests
check token-for-token equality with a one-prompt-at-a-time loop.

**Greedy decoding** (:func:`greedy_decode`): the prompt batch goes through the model once (only the
last position through ``W_U``), then one token per step with the KV cache. A row stops at an EOS
token (not kept), once its new text contains ``stop`` (the text is cut before it), or after
``max_new_tokens`` tokens. The tokens are exactly those of the literal loop "append the argmax of
the last position's logits, rerun the whole sequence".

**Choice scoring** (:func:`choice_logits`): next-token logits of the answer letters after each
prompt (``" A"`` after ``Answer:``, :func:`letter_ids`); the prediction is their argmax. **Cloze**
(:func:`cloze_choice`): the log-likelihood of each answer's own text after the prompt
(:func:`continuation_logprobs`), divided by its length in characters.

**Answer extraction**: :func:`extract_answer` (a number from free text) with :func:`is_correct`
(numeric equality), and :func:`completes` / :func:`greedy_exact` (short exact answers: "greedy decoding
writes the answer, then no digit").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import torch

from arithmech.core.prefix import SharedPrefix
from arithmech.data.batches import answer_ids, group_by_length
from arithmech.data.pairs import Sample

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


# ------------------------------------------------------------------------------------ batching
def length_batches(lengths: Sequence[int], batch_size: int) -> Iterable[list[int]]:
    """Indices ``0..n-1`` sorted by ``lengths`` (stable), in chunks of ``batch_size``."""
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}: need at least 1")
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for j in range(0, len(order), batch_size):
        yield order[j : j + batch_size]


def left_padded(
    rows: Sequence[Sequence[int]], pad_id: int = 0, device=None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(ids, mask, positions)``, each ``(batch, max_len)``: token rows padded on the left with
    ``pad_id`` (any id: the mask hides it), mask 1 on real tokens, positions ``0..len-1`` of each row's
    real tokens (0 under the pads)."""
    L = max(map(len, rows))
    ids = torch.full((len(rows), L), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), L), dtype=torch.long)
    for r, row in enumerate(rows):
        if row:
            ids[r, L - len(row) :] = torch.tensor(list(row))
            mask[r, L - len(row) :] = 1
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), pos.to(device)


def _device(model) -> torch.device:
    return model.get_input_embeddings().weight.device


def _pad_id(tok) -> int:
    return next((i for i in (tok.pad_token_id, tok.eos_token_id) if i is not None), 0)


def eos_ids(model, tok) -> set[int]:
    """The tokens that end a generation: the tokenizer's EOS and the model's ``generation_config`` EOS."""
    out = {tok.eos_token_id} if tok.eos_token_id is not None else set()
    cfg = getattr(model, "generation_config", None)
    extra = getattr(cfg, "eos_token_id", None) if cfg is not None else None
    out |= set(extra) if isinstance(extra, (list, tuple)) else ({extra} if extra is not None else set())
    return out


# ------------------------------------------------------------------------------ greedy decoding
@torch.no_grad()
def greedy_tokens(
    model,
    tok,
    prompts: Sequence[str],
    max_new_tokens: int,
    stop: str | None = None,
    batch_size: int = 8,
    eos: Iterable[int] | None = None,
) -> list[list[int]]:
    """New token ids of greedy decoding after each prompt (module docstring: batching, stop rules).

    ``prompts`` are tokenized as a lone prompt is (``tok(p)["input_ids"]``, special tokens included).
    A row's list ends at the token that completed ``stop`` (kept), before an EOS token (dropped), or
    after ``max_new_tokens`` tokens. ``eos`` defaults to :func:`eos_ids`.
    """
    eos = eos_ids(model, tok) if eos is None else set(eos)
    enc = [tok(p)["input_ids"] for p in prompts]
    out: list[list[int]] = [[] for _ in prompts]
    if max_new_tokens < 1:
        return out
    dev = _device(model)
    for idx in length_batches([len(e) for e in enc], batch_size):
        ids, mask, pos = left_padded([enc[i] for i in idx], _pad_id(tok), dev)
        res = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1)
        pos = pos[:, -1:]
        done = [False] * len(idx)
        for step in range(max_new_tokens):
            nxt = res.logits[:, -1].argmax(-1)  # (batch,)
            for r, t in enumerate(nxt.tolist()):
                if done[r]:
                    continue
                if t in eos:
                    done[r] = True
                    continue
                out[idx[r]].append(t)
                if stop is not None and stop in tok.decode(out[idx[r]], skip_special_tokens=True):
                    done[r] = True
            if all(done) or step == max_new_tokens - 1:
                break
            mask = torch.cat([mask, mask.new_ones(len(idx), 1)], 1)
            pos = pos + 1
            res = model(input_ids=nxt[:, None], attention_mask=mask, position_ids=pos, cache=res.cache, use_cache=True)
    return out


def decode_new(tok, tokens: Sequence[int], stop: str | None = None) -> str:
    """The text of generated ``tokens`` (special tokens skipped), cut before ``stop``."""
    text = tok.decode(list(tokens), skip_special_tokens=True)
    return text.split(stop)[0] if stop else text


def greedy_decode(
    model,
    tok,
    prompts: Sequence[str],
    max_new_tokens: int = 256,
    stop: str | None = None,
    batch_size: int = 8,
    eos: Iterable[int] | None = None,
) -> list[str]:
    """Greedy continuation text of each prompt (:func:`greedy_tokens`, then :func:`decode_new`)."""
    toks = greedy_tokens(model, tok, prompts, max_new_tokens, stop, batch_size, eos)
    return [decode_new(tok, t, stop) for t in toks]


# ------------------------------------------------------------------------------- choice scoring
def letter_ids(tok, letters: str, cue: str = "Answer:") -> list[int]:
    """Token id of each answer letter as it follows ``cue`` (``" A"`` after ``Answer:``)."""
    base = tok(cue, add_special_tokens=False)["input_ids"]
    ids = []
    for L in letters:
        full = tok(f"{cue} {L}", add_special_tokens=False)["input_ids"]
        if full[: len(base)] != base or len(full) != len(base) + 1:
            raise ValueError(f"the tokenizer does not write {cue!r} + ' {L}' as the cue plus one letter token")
        ids.append(full[len(base)])
    if len(set(ids)) != len(ids) or tok.unk_token_id in ids:
        raise ValueError(f"the tokenizer cannot tell the answer letters {letters} apart (unknown or shared tokens)")
    return ids


@torch.no_grad()
def next_token_logits(
    model, tok, prompts: Sequence[str], token_ids: Sequence[int], batch_size: int = 8
) -> torch.Tensor:
    """``(n, len(token_ids))`` float32 logits (CPU) of ``token_ids`` as the next token after each prompt.
    Left padding: only the last position goes through ``W_U`` (``logits_to_keep=1``)."""
    enc = [tok(p)["input_ids"] for p in prompts]
    out = torch.empty(len(prompts), len(token_ids))
    dev = _device(model)
    cols = torch.tensor(list(token_ids), device=dev)
    for idx in length_batches([len(e) for e in enc], batch_size):
        ids, mask, pos = left_padded([enc[i] for i in idx], _pad_id(tok), dev)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=1).logits
        out[idx] = logits[:, -1, cols].float().cpu()
    return out


def choice_logits(
    model, tok, prompts: Sequence[str], letters: str, batch_size: int = 8, cue: str = "Answer:"
) -> torch.Tensor:
    """``(n, len(letters))`` next-token logits of the answer letters after each prompt (prompts end with ``cue``)."""
    return next_token_logits(model, tok, prompts, letter_ids(tok, letters, cue), batch_size)


def split_continuation(tok, prompt: str, continuation: str) -> tuple[list[int], list[int]]:
    """``(prompt ids, continuation ids)`` with the continuation tokenized inside the full text (word
    pieces merge as they would in running text); where the full text's tokens do not start with the
    prompt's, the prompt's last token is re-read as part of the continuation."""
    p = tok(prompt)["input_ids"]
    full = tok(prompt + continuation)["input_ids"]
    n = len(p) if full[: len(p)] == p else len(p) - 1
    return full[:n], full[n:]


@torch.no_grad()
def continuation_logprobs(
    model, tok, prompts: Sequence[str], continuations: Sequence[str], batch_size: int = 16
) -> tuple[list[float], list[int]]:
    """``(log P(continuation | prompt) summed over its tokens, its number of tokens)`` per pair; batched
    with left padding as :func:`greedy_tokens` (positions from the mask)."""
    rows = [split_continuation(tok, p, c) for p, c in zip(prompts, continuations)]
    if any(not c for _, c in rows):
        raise ValueError("continuation_logprobs: an empty continuation has no likelihood to score")
    lp, dev = [0.0] * len(rows), _device(model)
    for idx in length_batches([len(p) + len(c) for p, c in rows], batch_size):
        ids, mask, pos = left_padded([rows[i][0] + rows[i][1] for i in idx], _pad_id(tok), dev)
        logp = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits.float().log_softmax(-1)
        for r, i in enumerate(idx):
            n = len(rows[i][1])
            tgt = ids[r, -n:]
            lp[i] = float(logp[r, -n - 1 : -1].gather(1, tgt[:, None]).sum())
    return lp, [len(c) for _, c in rows]


def cloze_choice(
    model, tok, prompts: Sequence[str], options: Sequence[Sequence[str]], batch_size: int = 16
) -> list[int]:
    """Index of the most likely answer text per prompt, **normalised by its length in characters**
    (lm-eval's ``acc_norm`` divides by the byte length; the same for ASCII): ``argmax_j log P(" " +
    option_j | prompt) / len(" " + option_j)``. Unlike letter scoring, a small model that cannot map
    letters to options can still show what it knows."""
    flat = [(i, " " + o) for i, opts in enumerate(options) for o in opts]
    lp, _ = continuation_logprobs(model, tok, [prompts[i] for i, _ in flat], [o for _, o in flat], batch_size)
    best: dict[int, int] = {}
    j = 0
    for i, opts in enumerate(options):
        scores = [lp[j + k] / len(" " + o) for k, o in enumerate(opts)]
        best[i] = max(range(len(opts)), key=lambda k: scores[k])
        j += len(opts)
    return [best[i] for i in range(len(options))]


# ---------------------------------------------------------------------------- answer extraction
def extract_answer(text: str) -> float | None:
    """The number after "The answer is", else the last number; commas removed; None if no number.

    A prompt that itself ends with "The answer is" is scored with ``extract_answer("The answer is" + out)``:
    the first number of the continuation."""
    text = text.replace(",", "")
    m = re.search(r"the answer is", text, flags=re.I)
    if m:
        after = NUMBER.search(text, m.end())
        if after:
            return float(after.group())
    nums = NUMBER.findall(text)
    return float(nums[-1]) if nums else None


def is_correct(pred: float | None, gold: float) -> bool:
    """Numeric exact match: ``|pred - gold| < 1e-4``; ``None`` (no number) is wrong."""
    return pred is not None and abs(pred - gold) < 1e-4


def greedy_exact(model, tok, items: Sequence[tuple[str, str]], batch_size: int = 32) -> list[bool]:
    """Per ``(prompt, answer)`` item: does greedy decoding after ``prompt`` write ``answer`` and then no
    digit (:func:`completes`)? Decodes as many tokens as the longest answer takes after a space, plus one."""
    if not items:
        return []
    n = max(len(tok(" " + a, add_special_tokens=False)["input_ids"]) for _, a in items) + 1
    outs = greedy_decode(model, tok, [p for p, _ in items], n, batch_size=batch_size)
    return [completes(o, a) for o, (_, a) in zip(outs, items)]


def completes(text: str, answer: str) -> bool:
    """Short exact answers: ``text`` without whitespace starts with ``answer`` without whitespace, and no
    digit follows (``"4 7"`` from a word-level tokenizer and ``" 47."`` both complete ``"47"``;
    ``" 475"`` does not)."""
    t, a = "".join(text.split()), "".join(answer.split())
    return t.startswith(a) and not t[len(a) :][:1].isdigit()


@torch.no_grad()
def predict(model, tok, prompts: Sequence[str], batch_size: int = 64, top_k: int = 1) -> torch.Tensor:
    """``(n, top_k)`` ids of the most likely next tokens after each prompt (a shared few-shot prefix runs
    once per batch, :class:`arithmech.core.prefix.SharedPrefix`)."""
    dev = model.get_input_embeddings().weight.device
    out = torch.empty(len(prompts), top_k, dtype=torch.long)
    batches = [(idx, ids.to(dev)) for idx, ids in group_by_length(tok, prompts, batch_size)]
    shared = SharedPrefix(model, [ids for _, ids in batches])
    for idx, ids in batches:
        logits = shared.forward(ids, logits_to_keep=1, use_cache=False).logits[:, -1]  # END row only
        out[idx] = logits.topk(top_k, dim=-1).indices.cpu()
    return out


def filter_correct(model, tok, samples: Sequence[Sample], batch_size: int = 64) -> tuple[list[Sample], dict]:
    """Keep the samples whose top-1 next token is the answer token (the paper's X_r).

    Returns ``(kept, accuracy)``, ``accuracy[template_id] = fraction correct``.
    """
    pred = predict(model, tok, [s.clean for s in samples], batch_size)[:, 0]
    gold = answer_ids(tok, samples)
    ok = (pred == gold).tolist()
    acc: dict[str, list] = {}
    for s, o in zip(samples, ok):
        acc.setdefault(s.template, []).append(o)
    return [s for s, o in zip(samples, ok) if o], {k: sum(v) / len(v) for k, v in acc.items()}


def check_counterfactuals(
    model, tok, samples: Sequence[Sample], batch_size: int = 64
) -> tuple[list[Sample], list[bool]]:
    """Keep the pairs whose X_c changes the model's answer: top-1 next token after ``s.corrupt`` differs
    from the X_r answer token (:func:`~arithmech.data.batches.answer_ids`).

    Returns ``(kept, passed)``; ``passed[i]`` is True when sample ``i`` passes. Call it on samples the
    model answers right (X_r), so "differs" means X_c moved the answer away."""
    if not samples:
        return [], []
    pred = predict(model, tok, [s.corrupt for s in samples], batch_size)[:, 0]  # (n,)
    passed = (pred != answer_ids(tok, samples)).tolist()
    return [s for s, p in zip(samples, passed) if p], passed
