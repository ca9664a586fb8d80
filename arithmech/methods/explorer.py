"""One prompt at a time (§5.2, Fig. 7, 16) and the prompt explorer's logic: type a prompt, optionally
its counterfactual, and see the top-5 next tokens, one head's END-row attention over the tokens
(an attention strip) and the per-layer number tokens closest to each MLP's write, with or without
the key heads knocked out.

Pure functions returning DataFrames; :mod:`arithmech.report.views.widgets` puts ipywidgets around them and
the book shows precomputed altair views of the same tables. A knockout is a context-manager
factory (``knockout() -> context``) active during a forward pass: :func:`mean_ablation`, here with
position-pooled means of identify samples' counterfactual prompts (:func:`knockout_means`; not identify's
reference pool, which the book's live explorer uses: :mod:`arithmech.report.views.live_explorer`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from arithmech.core import results
from arithmech.core.models import BATCH_SIZE, arch_for, geometry, input_device
from arithmech.core.trace import TraceDict
from arithmech.data import pairs
from arithmech.data import templates as templates_module
from arithmech.data.batches import answer_ids, group_by_length
from arithmech.data.draw import Draw
from arithmech.data.pairs import reference_samples
from arithmech.data.splits import n_problems
from arithmech.methods.ablation.intervention import MeanAblation, MeanSource, check_positions
from arithmech.methods.ablation.knockout import Means, group_key, mean_activations
from arithmech.methods.attention import Head, end_rows, role_labels
from arithmech.methods.explorer_tables import (
    STEP_COLUMNS,
    TOP_COLUMNS,
    attention_frame,
    mlp_frame,
    prompts_frame,
    step_rows,
)
from arithmech.methods.mlp import layer_top_numbers, mlp_vectors, number_tokens, unembedding

# ------------------------------------------------------------------------------ one prompt's views
TOP_K = 5  # next tokens the page lists per prompt and slider step
OPERATOR_WORDS = frozenset(w for ws in templates_module.OPS.values() for w in ws)


def guess_positions(tokens: Sequence[str]) -> dict:
    """Roles for a free prompt (explorer, Fig. 7): first run of digit tokens → A, second → B,
    a token that is an operator symbol or word of the templates (``+``, ``plus``, ``sum`` ...) → operator."""
    pos: dict = {"A": [], "B": [], "operator": []}
    runs, prev = 0, False
    for i, t in enumerate(tokens):
        s = t.replace("▁", "").replace("Ġ", "").strip()
        digit = s.isdigit()
        if digit and not prev:
            runs += 1
        if digit and runs <= 2:
            pos["A" if runs == 1 else "B"].append(i)
        elif s.lower() in OPERATOR_WORDS:
            pos["operator"].append(i)
        prev = digit
    pos["end"] = len(tokens) - 1
    return pos


def attention_strip(model, tok, prompt: str, heads: Sequence[Head], positions: dict | None = None) -> pd.DataFrame:
    """Fig. 7 / 16: one prompt's END-row attention of ``heads`` over its tokens.

    Returns ``head, layer, position, token, role, score``; roles from ``positions`` (a Sample's)
    or guessed from the tokens (:func:`guess_positions`).
    """
    ids = torch.tensor([tok(prompt)["input_ids"]])
    toks = tok.convert_ids_to_tokens(ids[0].tolist())
    positions = positions or guess_positions(toks)
    roles = role_labels(positions, len(toks), int(ids[0, 0]) == tok.bos_token_id)
    rows = end_rows(model, ids, [l for l, _ in heads])
    return pd.DataFrame(
        [(f"{l}.{h}", l, p, toks[p], roles[p], float(rows[l][0, h, p])) for l, h in heads for p in range(len(toks))],
        columns=["head", "layer", "position", "token", "role", "score"],
    )


def strips(
    model,
    tok,
    heads: Sequence[Head],
    samples: Sequence[pairs.Sample] = (),
    templates: Sequence[str] | None = None,
    prompts: Sequence[str] = (),
) -> pd.DataFrame:
    """Attention strips of ``heads`` on the first sample of each template (or of each of ``templates``;
    roles from the dataset) and on free ``prompts`` (roles guessed), with a ``sample`` label column."""
    first: dict[str, pairs.Sample] = {}
    for s in samples:
        if templates is None or s.template in templates:
            first.setdefault(s.template, s)
    items: list[tuple[str, str, dict | None]] = [
        (f"{s.template}: {s.clean}", s.clean, s.positions) for s in first.values()
    ]
    items += [(f"unseen: {p}", p, None) for p in prompts]
    if not items:
        raise ValueError("no strips to draw: pass samples (of the given templates) or prompts")
    return pd.concat(
        [attention_strip(model, tok, p, heads, pos).assign(sample=label) for label, p, pos in items], ignore_index=True
    )


# ---------------------------------------------------------------------------------------- knockout


def knockout_means(model, tok, samples: Sequence[pairs.Sample], batch_size: int = BATCH_SIZE) -> Means:
    """Position-pooled mean head outputs over the samples' counterfactuals ``X_c`` (the identify step's
    :func:`~arithmech.methods.ablation.knockout.mean_activations`, then
    :meth:`~arithmech.methods.ablation.knockout.Means.pooled`): a free prompt has no ``X_c`` of its own, so position 0
    gets the BOS mean and every later position the mean over all later positions."""
    return mean_activations(
        model, tok, [s.corrupt for s in samples], [group_key(s) for s in samples], batch_size
    ).pooled()


def mean_ablation(model, heads: Sequence[Head], means: MeanSource, positions: str = "end") -> Callable[[], TraceDict]:
    """A context-manager factory that knocks ``heads`` out (§4.1): inside it, each head's slice of the
    o_proj input ``(batch, seq, H*dh)`` is replaced by its mean for a free prompt (``means.lookup(None,
    seq)``: pooled ``X_c``) at the last position (``positions="end"``) or at every position (``"all"``):
    the :class:`~arithmech.methods.ablation.intervention.MeanAblation` that
    :func:`~arithmech.methods.ablation.knockout.knockout_topk` uses, for any forward pass (strips, projections)."""
    check_positions(positions)
    arch = arch_for(model)
    n_heads = geometry(model).n_heads
    masks: dict[int, torch.Tensor] = {}  # layer -> (1, H): the heads knocked out
    for l, h in heads:
        masks.setdefault(l, torch.zeros(1, n_heads, dtype=torch.bool))[0, h] = True
    layer_of = arch.head_sites(masks)

    def edit(z, name):  # z: (batch, seq, H*dh)
        l = layer_of[name]
        return MeanAblation(masks[l], means.lookup(None, z.shape[1])[0][l][None], positions)(z)

    return lambda: TraceDict(model, list(layer_of), retain_output=False, edit_input=edit)


@torch.no_grad()
def top_next(model, tok, prompt: str, k: int = 5, edit: Callable | None = None) -> pd.DataFrame:
    """The ``k`` most likely next tokens: ``rank, token, prob``."""
    ids = torch.tensor([tok(prompt)["input_ids"]]).to(input_device(model))
    with edit() if edit else nullcontext():
        p = model(ids).logits[0, -1].float().softmax(-1).cpu()
    top = p.topk(k)
    return pd.DataFrame(
        {"rank": range(1, k + 1), "token": tok.convert_ids_to_tokens(top.indices.tolist()), "prob": top.values.tolist()}
    )


def explore(
    model,
    tok,
    prompt: str,
    counterfactual: str | None = None,
    head: Head | None = None,
    knockout: Callable | None = None,
    k: int = 5,
) -> dict[str, pd.DataFrame]:
    """Everything the prompt explorer shows, as DataFrames (no widgets, no plotting).

    ``knockout``: a context-manager factory (e.g. :func:`mean_ablation`); when given, every
    table has an ``intact`` and a ``knockout`` condition. ``head``: ``(layer, head)`` whose
    END-row attention to show. Returns ``{"top", "numbers", "attention"}``, each with columns
    ``input`` (prompt / counterfactual) and ``condition`` in front.
    """
    inputs = {"prompt": prompt, **({"counterfactual": counterfactual} if counterfactual else {})}
    conds = {"intact": None, **({"knockout": knockout} if knockout else {})}
    out: dict[str, list] = {"top": [], "numbers": [], "attention": []}
    for (name, text), (cond, edit) in itertools.product(inputs.items(), conds.items()):
        tag = dict(input=name, condition=cond)
        out["top"].append(top_next(model, tok, text, k, edit).assign(**tag))
        out["numbers"].append(layer_top_numbers(model, tok, text, k=3, edit=edit).assign(**tag))
        if head is not None:
            with edit() if edit else nullcontext():
                out["attention"].append(attention_strip(model, tok, text, [head]).assign(**tag))
    return {key: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for key, v in out.items()}


def top_table(top: pd.DataFrame) -> pd.DataFrame:
    """:func:`explore`'s ``top`` as one column per (input, condition), cells like ``7 93.1%``."""
    cell = top.token + " " + (100 * top.prob).round(1).astype(str) + "%"
    return top.assign(cell=cell).pivot_table(
        index="rank", columns=["input", "condition"], values="cell", aggfunc="first"
    )


# ------------------------------------------------------------------------ the static page's explorer
def head_steps(effects: pd.DataFrame, thresholds: Sequence[float], task: str = "all") -> pd.DataFrame:
    """Every head of ``task`` with the slider step from which it counts as a key head.

    ``thresholds``: the slider's key-head thresholds, strict to loose (increasing, all negative, e.g.
    ``[-0.1, -0.05, -0.02]``); at step ``s`` a head is key when its effect's 95% interval lies below
    ``thresholds[s]`` (identify's rule, :func:`arithmech.methods.effects.key_heads`). Returns one row per head, ranked
    by effect (most negative first; ties by layer, head): ``rank, layer, head, name, effect, key_at`` where
    ``key_at`` is the first such step (``len(thresholds)``: never a key head).
    """
    t = [float(x) for x in thresholds]
    if not t or any(x >= 0 for x in t) or any(a >= b for a, b in zip(t, t[1:])):
        raise ValueError(
            f"thresholds {list(thresholds)}: give negative relative changes from strict to loose, "
            "strictly increasing, e.g. [-0.1, -0.05, -0.02]"
        )
    df = effects[(effects["task"] == task) & (effects["head"].astype(str) != "mlp")]
    if df.empty:
        raise ValueError(f"effects hold no head rows of task {task!r}; tasks: {sorted(effects['task'].unique())}")
    df = df.assign(layer=df["layer"].astype(int), head=df["head"].astype(int)).sort_values(
        ["effect", "layer", "head"], kind="stable"
    )
    key_at = [next((s for s, x in enumerate(t) if e < x), len(t)) for e in df["effect_hi"]]  # identify's rule
    return pd.DataFrame(
        {
            "rank": range(1, len(df) + 1),
            "layer": df["layer"].to_numpy(),
            "head": df["head"].to_numpy(),
            "name": [f"{l}.{h}" for l, h in zip(df["layer"], df["head"])],
            "effect": df["effect"].to_numpy(),
            "key_at": key_at,
        }
    )


def step_heads(heads: pd.DataFrame, n_steps: int) -> list[list[Head]]:
    """The key heads ``(layer, head)`` at each slider step, ranked (``heads``: :func:`head_steps`)."""
    return [
        [(int(l), int(h)) for l, h, k in zip(heads["layer"], heads["head"], heads["key_at"]) if k <= s]
        for s in range(n_steps)
    ]


def attention_heads(heads: pd.DataFrame, n_steps: int, max_heads: int) -> list[Head]:
    """The heads whose END-row attention the page stores, ranked (``heads``: :func:`head_steps`): every head
    that some of the ``n_steps`` slider steps knocks out, so that each row the attention view lists at a step
    has its data (a head past the loosest threshold but beyond the first ``max_heads`` used to have none, and
    its row was missing), and at least the ``max_heads`` heads of most negative effect, so a click on a strong
    head that no step reaches still shows its attention."""
    keep = (heads["rank"] <= max_heads) | (heads["key_at"] < n_steps)
    return [(int(l), int(h)) for l, h in zip(heads["layer"][keep], heads["head"][keep])]


@torch.no_grad()
def precompute(
    model,
    tok,
    samples: Sequence[pairs.Sample],
    heads: pd.DataFrame,
    thresholds: Sequence[float],
    means: MeanSource,
    max_heads: int = 12,
    batch_size: int = BATCH_SIZE,
) -> dict[str, pd.DataFrame]:
    """Everything the static page's explorer draws, for every prompt of ``samples`` (no kernel needed later).

    Per prompt, in batches of equal-length prompts: the top-``k`` (:data:`TOP_K`) next tokens intact and with the key
    heads of each slider step mean-ablated at END (:func:`mean_ablation` with ``means``; one forward per
    distinct head set), the END-row attention of the heads :func:`attention_heads` picks (every head some
    step knocks out, and the ``max_heads`` of most negative effect; needs eager attention), and per layer the number
    token closest (cosine) to the MLP's write at END (:func:`~arithmech.methods.mlp.layer_top_numbers`' rank 1).
    ``heads``: :func:`head_steps`.

    Returns DataFrames (lists in a cell are per-position or per-rank arrays):

    * ``prompts``: ``id, prompt, op, template, answer, answer_token`` (the rule each prompt was drawn with,
      :data:`arithmech.core.inputs.ANSWER_TOKENS`: under ``"last-digit"`` ``prompt`` carries the answer's
      leading digits and ``answer`` is its last digit);
    * ``tokens``: ``key ("id:pos"), id, pos, token, role``;
    * ``top``: ``id, step (-1 = intact), tokens [k], probs [k], correct`` (top-1 is the answer token),
      ``answer_rank`` (1..k, 0 when the answer token is not among them);
    * ``attention``: ``id, name, key_at, scores [seq]``;
    * ``mlp``: ``id, tokens [L], cosines [L]``;
    * ``steps``: ``step, threshold, heads, n_heads, correct, n, problems, ci_low, ci_high`` (step -1: intact): the
      prompts whose top-1 is the answer of ``n``, and the 95% Wilson interval of that rate with the ``problems``
      (distinct operation and operands, :func:`arithmech.data.splits.n_problems`) as its trials — the prompts share
      problems across templates, so an interval over prompts would count a problem's copies as independent.
    """
    if not samples:
        raise ValueError("precompute needs at least one prompt")
    sets = step_heads(heads, len(thresholds))
    distinct = list(dict.fromkeys(tuple(s) for s in sets if s))
    shown = attention_heads(heads, len(thresholds), max_heads)
    key_at = dict(zip(heads["name"], heads["key_at"]))
    prompts = [s.clean for s in samples]
    answers = answer_ids(tok, samples)
    m = n_problems(list(samples))
    top_ids, top_p, att, tok_rows = _forward(model, tok, samples, distinct, shown, means, batch_size)
    best, labels = _closest_numbers(model, tok, prompts, batch_size)
    top_rows, steps = step_rows(tok, top_ids, top_p, answers, sets, thresholds, m)
    return {
        "prompts": prompts_frame(samples),
        "tokens": pd.DataFrame(tok_rows, columns=["key", "id", "pos", "token", "role"]).sort_values(
            ["id", "pos"], ignore_index=True
        ),
        "top": pd.DataFrame(top_rows, columns=TOP_COLUMNS),
        "attention": attention_frame(att, shown, key_at),
        "mlp": mlp_frame(best, labels),
        "steps": pd.DataFrame(steps, columns=STEP_COLUMNS),
    }


def _forward(model, tok, samples: Sequence[pairs.Sample], distinct: list, shown: list[Head], means, batch_size: int):
    """The explorer's forward passes, in batches of equal-length prompts: the top-:data:`TOP_K` next tokens
    intact and with each distinct head set mean-ablated at END (one forward per set), the END-row attention of
    the ``shown`` heads, and every prompt's tokens with their roles.

    Returns ``(top_ids, top_p, att, tok_rows)``: by head set (``()``: intact) the (n, k) token ids and
    probabilities; by prompt and head the attention row; the rows of the ``tokens`` table.
    """
    k, n = TOP_K, len(samples)
    top_ids = {c: torch.zeros(n, k, dtype=torch.long) for c in [()] + distinct}
    top_p = {c: torch.zeros(n, k) for c in [()] + distinct}
    att: dict[int, dict[Head, list[float]]] = {}
    tok_rows = []
    dev = input_device(model)
    ablate = {c: mean_ablation(model, list(c), means) for c in distinct}
    for idx, ids in group_by_length(tok, [s.clean for s in samples], batch_size):
        rows = end_rows(model, ids, [l for l, _ in shown])
        for c in [()] + distinct:
            with ablate[c]() if c else nullcontext():
                p = model(ids.to(dev), use_cache=False, logits_to_keep=1).logits[:, -1].float().softmax(-1).cpu()
            top = p.topk(k)
            top_ids[c][idx], top_p[c][idx] = top.indices, top.values
        bos = tok.bos_token_id is not None and int(ids[0, 0]) == tok.bos_token_id
        for j, i in enumerate(idx):
            att[i] = {(l, h): rows[l][j, h].tolist() for l, h in shown}
            roles = role_labels(samples[i].positions, ids.shape[1], bos)
            toks = tok.convert_ids_to_tokens(ids[j].tolist())
            tok_rows += [(f"{i}:{q}", i, q, toks[q], roles[q]) for q in range(ids.shape[1])]
    return top_ids, top_p, att, tok_rows


def _closest_numbers(model, tok, prompts: list[str], batch_size: int) -> tuple:
    """Per prompt and layer, the number token whose unembedding is closest (cosine) to the MLP's write at END
    (:func:`~arithmech.methods.mlp.layer_top_numbers`' rank 1): ``(best, labels)``, a ``max`` over the number
    tokens ((n, L) values and indices) and the number tokens' labels."""
    num_ids, labels = number_tokens(tok)
    _, vdiff = mlp_vectors(model, tok, prompts, final_norm=True, batch_size=batch_size)  # (n, L, d)
    unit = torch.nn.functional.normalize
    best = (unit(vdiff, dim=-1) @ unit(unembedding(model, num_ids), dim=-1).T).max(-1)  # (n, L) cosines
    return best, labels


@dataclass(frozen=True)
class PageSettings:
    """What one model's explorer page shows (:func:`page_data`; the chapter's parameters,
    :class:`arithmech.report.build.chapters.Explorer`). Checked when made.

    Attributes:
        thresholds: the slider's key-head thresholds, strict to loose (:func:`head_steps`).
        n_prompts: fresh pairs drawn round-robin over every template (Fig. 8 and Fig. 10, all four operations).
        n_reference: identify samples whose counterfactuals give the knockout means.
        max_heads: heads of most negative effect whose attention is precomputed beside every head a step knocks
            out (:func:`attention_heads`).
        seed: the draw of the prompts and of the reference samples.
        draw: the answer-token rule and the solved examples of every prompt (:class:`~arithmech.data.draw.Draw`).
    """

    thresholds: tuple[float, ...]
    n_prompts: int
    n_reference: int
    max_heads: int
    seed: int
    draw: Draw

    def __post_init__(self) -> None:
        if self.n_prompts < 1 or self.n_reference < 1 or self.max_heads < 1:
            raise ValueError(
                f"n_prompts={self.n_prompts}, n_reference={self.n_reference}, "
                f"max_heads={self.max_heads}: each must be >= 1"
            )


def page_data(
    model, tok, folder, settings: PageSettings, task: str = "all"
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The explorer page's data for one model: identify's ``effects.csv`` (of ``task``) and ``prompts.jsonl`` read
    from the results ``folder`` (:mod:`arithmech.core.results`), ``settings.n_prompts`` fresh pairs drawn
    round-robin over every template (Fig. 8 and Fig. 10, all four operations; unfiltered, so wrong answers show too)
    under ``settings.draw`` (the answer-token rule — the chapter passes identify's, so the page scores the token
    identify measured; the ``prompts`` table records it — and the solved examples before each), knockout means from
    the counterfactuals of ``settings.n_reference`` identify samples. Returns ``(head_steps, precompute)``.
    """
    s = settings
    heads = head_steps(results.read(folder, "effects.csv"), s.thresholds, task)
    means = knockout_means(model, tok, reference_samples(Path(folder), s.n_reference, s.seed))
    samples, _ = pairs.make_pairs(tok, "all", n=s.n_prompts, seed=s.seed, draw=s.draw)
    return heads, precompute(model, tok, samples, heads, s.thresholds, means, max_heads=s.max_heads)
