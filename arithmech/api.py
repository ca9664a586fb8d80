"""The package's front door: the paper's four methods as plain functions over a loaded model.

Each function takes what a user has at hand (a model and its tokenizer from :func:`load_model`, lists of prompts,
heads as ``(layer, head)`` pairs) and returns a pandas frame, a number or the model, doing the setup the library's
own functions leave to their callers (caches, means, trainers). They are thin: each calls the function a step of the
book calls, and ``tests/unit/test_api.py`` checks each against it on the embedded model.

>>> from arithmech import load_model, pairs, keep_correct, sft_pairs, path_patch, knockout, attention_roles, precise_sft
>>> model, tok, geo = load_model("embedded")                       # or "smollm2-135m", a folder, a .gguf
>>> xs = keep_correct(model, tok, pairs(tok, "addition", n=64))     # X_r the model gets right, X_c moving it
>>> fx = path_patch(model, tok, [s.clean for s in xs], [s.corrupt for s in xs], [s.answer for s in xs])
>>> top = fx[fx.kind == "head"].nsmallest(3, "effect")             # the heads whose patch lowers the logit most
>>> heads = list(zip(top["layer"], top["head"]))   # ("head" is also DataFrame.head)
>>> knockout(model, tok, [s.clean for s in xs], heads, answers=[s.answer for s in xs],
...          means_from=[s.corrupt for s in xs])                    # accuracy with those heads mean-ablated
>>> attention_roles(model, tok, xs, heads)                          # where they look from the last token
>>> precise_sft(model, tok, sft_pairs(xs), heads, lr=1e-3, steps=10)   # tune only their slices

Hooks on any module: :class:`~arithmech.core.trace.Trace` and :class:`~arithmech.core.trace.TraceDict` (baukit's
semantics), also exported by the package.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence

import pandas as pd
import torch

from arithmech.core.inputs import ANSWER_TOKENS
from arithmech.core.models import BATCH_SIZE, geometry, input_device
from arithmech.core.names import component
from arithmech.data.batches import token_ids
from arithmech.data.draw import Draw
from arithmech.data.pairs import Sample, make_pairs
from arithmech.data.templates import TEMPLATES
from arithmech.evals.scoring import check_counterfactuals, filter_correct
from arithmech.finetune import adapter
from arithmech.finetune.data import Collator, tokenize_pairs
from arithmech.finetune.runner import make_trainer, training_args
from arithmech.methods import attention, patching
from arithmech.methods.ablation.intervention import Forwards
from arithmech.methods.ablation.knockout import Ablation, mean_activations
from arithmech.methods.ablation.knockout import knockout_topk as _topk

Head = tuple[int, int]
Answers = Sequence[str] | Sequence[int] | torch.Tensor
ROLE_COLUMNS = ("A", "B", "operator", "operand", "bos", "first", "other")


def pairs(
    tok, task: str = "addition", n: int = 32, seed: int = 0, answer_token: str = "last-digit", shots: int = 0
) -> list[Sample]:
    """Draw ``n`` reference / counterfactual pairs (X_r, X_c) from the paper's templates, under ``tok``.

    Each :class:`~arithmech.data.pairs.Sample` has ``clean`` (X_r, e.g. "The sum of 3 and 5 is"), ``corrupt``
    (X_c, the same sentence with the operator's words replaced: same token length, so the last position means the
    same in both), ``answer`` (the answer token's text) and ``positions`` (where the operands and the operator
    sit, for :func:`attention_roles`).

    Args:
        task: ``addition``, ``subtraction``, ``multiplication``, ``division``, ``all``, ``fig8``, ``fig10`` or
            ``exponentiation``.
        answer_token: which token of the answer is measured: ``last-digit`` (identify's default: the prompt
            carries the answer's leading digits), ``single-token`` or ``first`` (the paper's).
        shots: solved examples before every prompt (0, the paper's zero-shot prompts).

    >>> xs = pairs(tok, "addition", n=8, seed=0)
    >>> xs[0].clean, xs[0].corrupt, xs[0].answer
    """
    if answer_token not in ANSWER_TOKENS:
        raise ValueError(f"answer_token={answer_token!r}: use one of {ANSWER_TOKENS}")
    samples, _ = make_pairs(tok, task, n, seed, draw=Draw(answer_token, shots, 16 if shots else 1))
    return samples


def keep_correct(model, tok, samples: Sequence[Sample], batch_size: int = 64) -> list[Sample]:
    """The pairs a mechanism can be read on: X_r's top-1 next token is the answer token, and X_c moves it away.

    The paper keeps only the prompts the model answers right (its X_r); a counterfactual that leaves the answer in
    place removes nothing to measure, so those pairs go too (identify does both, and more:
    :func:`arithmech.methods.prepare.prepare`).

    >>> xs = keep_correct(model, tok, pairs(tok, "addition", n=64))
    """
    right, _ = filter_correct(model, tok, samples, batch_size)
    kept, _ = check_counterfactuals(model, tok, right, batch_size)
    return kept


def sft_pairs(samples: Sequence[Sample]) -> list[tuple[str, str]]:
    """``(prompt, completion)`` training pairs from samples: the prompt before the whole answer (``Sample.bare``:
    without the leading digits a ``last-digit`` prompt carries) and the whole answer, joined as its template joins
    them, for :func:`precise_sft`.

    >>> sft_pairs(xs)[0]                     # e.g. ("7 + 7 =", " 14")
    """
    out = []
    for s in samples:
        t = TEMPLATES.get(s.template)
        joiner = t.joiner if t is not None else " "
        out.append((s.bare, s.target if (s.bare.endswith(" ") or not joiner) else joiner + s.target))
    return out


def answer_ids(tok, prompts: Sequence[str], answers: Answers) -> torch.Tensor:
    """``(n,)`` token ids of the answers: ids as given, or for text the first token ``answers[i]`` adds after
    ``prompts[i]`` (tokenized together, so a leading space or a carried digit tokenizes as the model sees it).

    >>> answer_ids(tok, ["3 plus 4 is"], [" 7"])
    """
    if len(prompts) != len(answers):
        raise ValueError(f"{len(prompts)} prompts but {len(answers)} answers")
    if isinstance(answers, torch.Tensor):
        return answers.long()
    out: list[int] = []
    for p, a in zip(prompts, answers):
        if not isinstance(a, str):
            out.append(int(a))  # type: ignore[call-overload]  # an id: int, or a 0-d tensor or numpy integer
            continue
        pre, full = token_ids(tok, p, False), token_ids(tok, p + a, False)
        if full[: len(pre)] != pre or len(full) == len(pre):
            raise ValueError(f"the answer {a!r} of {p!r} does not start on a token boundary")
        out.append(full[len(pre)])
    return torch.tensor(out)


def path_patch(
    model,
    tok,
    clean_prompts: Sequence[str],
    corrupt_prompts: Sequence[str],
    answers: Answers,
    method: str = "fast",
    batch_size: int = BATCH_SIZE,
) -> pd.DataFrame:
    """Path-patch every head and MLP (the paper's Algorithm 1): one row per component, its mean effect on the
    answer's logit.

    For each component, the reference run takes that component's output at the last position (END) from the
    counterfactual run, every later head frozen at its reference value, the MLPs recomputing. ``effect`` is
    the mean relative change of the answer token's logit, ``(patched - clean) / clean`` (−0.14: the patch
    lowers it by 14 %; the paper calls a head *key* below −0.05).

    Args:
        clean_prompts: X_r, each ending where the answer starts.
        corrupt_prompts: X_c, one per X_r with the same number of tokens.
        answers: the answer token of each X_r: text (``"7"``, ``" 7"``; see :func:`answer_ids`) or ids.
        method: ``"fast"`` (exact, every component at once) or ``"reference"`` (one hooked forward per
            component; the same numbers, slower).

    Returns:
        One row per component, in model order: ``component`` ("head 3.1", "MLP 4"), ``kind`` (``head`` or
        ``mlp``), ``layer``, ``head`` (−1 for an MLP), ``effect``, ``logit_diff`` (mean change of the logit) and
        ``share`` (the component's share of the counterfactual's whole effect on ``logit(answer) −
        logit(X_c's answer)``: −1 carries all of it).

    >>> clean, corrupt = [s.clean for s in xs], [s.corrupt for s in xs]
    >>> fx = path_patch(model, tok, clean, corrupt, [s.answer for s in xs])
    >>> fx[fx.kind == "head"].nsmallest(5, "effect")
    """
    ids = answer_ids(tok, clean_prompts, answers)
    p = patching.path_patch(model, tok, clean_prompts, corrupt_prompts, ids, method=method, batch_size=batch_size)
    effect, diff = p.relative_change().mean(0), p.logit_diff().mean(0)
    share = p.share() if p.counter_p is not None else torch.full_like(effect, float("nan"))
    L, H1 = effect.shape
    rows = [
        {
            "component": component(l, None if h == H1 - 1 else h),
            "kind": "mlp" if h == H1 - 1 else "head",
            "layer": l,
            "head": -1 if h == H1 - 1 else h,
            "effect": float(effect[l, h]),
            "logit_diff": float(diff[l, h]),
            "share": float(share[l, h]),
        }
        for l in range(L)
        for h in range(H1)
    ]
    return pd.DataFrame(rows)


def knockout(
    model,
    tok,
    prompts: Sequence[str],
    heads: Sequence[Head],
    *,
    answers: Answers,
    means_from: Sequence[str],
    mlps: Sequence[int] = (),
    positions: str = "end",
) -> float:
    """Top-1 accuracy on ``prompts`` with ``heads`` (and ``mlps``) mean-ablated: the paper's knockout (§4.2, Fig. 3).

    A knocked-out head's output (before W_O) is replaced by its mean over the ``means_from`` prompts (the X_c,
    the paper's choice), taken per token length: a prompt reads the mean of the ``means_from`` prompts of its own
    length, position by position. Where some prompt's length has none, every prompt reads the position-pooled mean
    instead (position 0 apart, every later position averaged): prompts without counterfactuals of their own.

    Args:
        heads: ``(layer, head)`` pairs; ``[]`` with ``mlps=()`` is the intact model.
        answers: the answer token of each prompt (text or ids, :func:`answer_ids`).
        positions: ``"end"`` ablates at the last position only (identify's default), ``"all"`` at every one.

    >>> knockout(model, tok, [s.clean for s in xs], [(3, 1), (4, 0)],
    ...          answers=[s.answer for s in xs],
    ...          means_from=[s.corrupt for s in xs])  # e.g. 0.31
    """
    gold = answer_ids(tok, prompts, answers)
    means = mean_activations(model, tok, means_from, [0] * len(means_from))
    lengths = {len(tok(p)["input_ids"]) for p in prompts}
    grouped = lengths <= {seq for _, seq in means.z}
    means = means if grouped else means.pooled()
    keys = [0] * len(prompts) if grouped else None
    ablation = Ablation.of(heads, mlps)
    ids, _ = _topk(model, tok, prompts, keys, means, [ablation], k=1, forwards=Forwards(positions=positions))
    return int((ids[0, :, 0] == gold).sum()) / len(prompts)


def attention_roles(model, tok, samples: Sequence[Sample], heads: Sequence[Head] | None = None) -> pd.DataFrame:
    """Where each head looks from the last token (§4.2, Fig. 5): its attention mass on each role, mean over
    ``samples``.

    Roles: the operands ``A`` and ``B`` (``operand`` = both), the ``operator``, ``bos`` (a beginning-of-sequence
    token), ``first`` (position 0, whatever it holds: where many heads park attention) and ``other``; ``A + B +
    operator + bos + other = 1``. ``reads`` names the largest of operand, operator and the rest.

    Args:
        samples: pairs from :func:`pairs` (they know where their operands and operator sit).
        heads: ``(layer, head)`` pairs; ``None``: every head.

    >>> roles = attention_roles(model, tok, xs, [(3, 1)])
    >>> roles[["component", "operand", "operator", "reads"]]
    """
    layers = None if heads is None else sorted({l for l, _ in heads})
    long = attention.attention_by_role(model, tok, samples, layers)
    wide = long[long.task == "all"].pivot_table(index=["layer", "head"], columns="role", values="mean_score")
    wide = wide.reset_index()[["layer", "head", *ROLE_COLUMNS]]
    wide.columns.name = None
    if heads is not None:
        want = {(int(l), int(h)) for l, h in heads}
        wide = wide[[(int(l), int(h)) in want for l, h in zip(wide["layer"], wide["head"])]]
    rest = wide.bos + wide.other
    wide.insert(0, "component", [component(l, h) for l, h in zip(wide["layer"], wide["head"])])
    best = pd.concat([wide.operand, wide.operator, rest], axis=1).to_numpy().argmax(1)
    wide["reads"] = [("operand", "operator", "rest")[i] for i in best]
    return wide.reset_index(drop=True)


def completion_loss(model, tok, pairs: Sequence[tuple[str, str]], batch_size: int = 16) -> float:
    """The mean cross-entropy of the completions' tokens (and EOS) given their prompts: the loss
    :func:`precise_sft` lowers, over every completion token of ``pairs`` at once.

    >>> completion_loss(model, tok, sft_pairs(xs))      # e.g. 0.41
    """
    rows, total, count = tokenize_pairs(tok, pairs), 0.0, 0
    collate = Collator(tok.pad_token_id)
    with torch.no_grad():
        for i in range(0, len(rows), batch_size):
            batch = {k: v.to(input_device(model)) for k, v in collate(rows[i : i + batch_size]).items()}
            n = int((batch["labels"][:, 1:] != -100).sum())
            total += float(model(**batch).loss) * n
            count += n
    return total / count


def precise_sft(  # noqa: PLR0913 (the data, the heads and the optimizer's settings)
    model,
    tok,
    pairs: Sequence[tuple[str, str]],
    heads: Sequence[Head],
    lr: float = 1e-3,
    steps: int = 10,
    *,
    mlps: Sequence[int] = (),
    batch_size: int = 8,
    seed: int = 0,
):
    """Fine-tune only ``heads`` (the paper's precise SFT, §4.3, Algorithm 2) on ``(prompt, completion)`` pairs;
    returns ``model``, trained in place.

    For every head ``(i, j)`` the rows of W_Q, W_K, W_V that make head ``j`` of layer ``i`` and the columns of W_O
    that read it are trained (and whole MLP layers ``mlps``); every other weight stays as loaded, byte for byte.
    The loss is the completion's (and EOS's) only; AdamW, a cosine schedule, gradients of a layer's slices scaled
    by H / h (as the paper, after Yu et al.). Copy the model first (``copy.deepcopy``) to keep the original.

    Args:
        pairs: ``(prompt, completion)`` text, e.g. ``("3 plus 4 is", " 7")``.
        heads: ``(layer, head)`` pairs to train.
        lr, steps, batch_size, seed: the optimizer's learning rate, its steps, rows per step, the data order.

    >>> before = knockout(...)                        # or any score
    >>> data = [("3 plus 4 is", " 7"), ("9 minus 2 is", " 7")]
    >>> precise_sft(model, tok, data, [(3, 1), (4, 0)], steps=20)
    """
    spec = adapter.HeadSpec(heads=tuple((int(l), int(h)) for l, h in heads), mlps=tuple(mlps))
    spec.validate(geometry(model))
    rows = tokenize_pairs(tok, pairs)
    batch = min(batch_size, len(rows))
    with tempfile.TemporaryDirectory(prefix="arithmech-sft-") as out:
        args = training_args(out, lr=lr, batch_size=batch, micro_batch_size=batch, max_steps=steps, seed=seed)
        model.train()
        trainer = make_trainer(model, "precise", args, rows, tok, spec=spec)
        trainer.train()
    adapter.merge(model)
    return model.eval()
