"""Transfer (paper Fig. 4) and a template family the heads were not found on (§4.1's SVAMP test).

* :func:`transfer_table`: Fig. 4's free-text prompts, top-``k`` next tokens before and after knocking the
  studied heads out (mean ablation, :mod:`arithmech.methods.ablation.knockout`);
* :func:`heldout_drop`: accuracy on a held-out family before and after knocking out heads found without it,
  against as many random heads;
* :func:`run_transfer`: identify's transfer phase, both of the above on an identify result.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pandas as pd
import torch

from arithmech.core.models import BATCH_SIZE, geometry
from arithmech.data import pairs, splits
from arithmech.data.draw import Draw
from arithmech.data.pairs import Sample
from arithmech.evals.scoring import check_counterfactuals
from arithmech.methods.ablation.curves import random_orders, with_interval
from arithmech.methods.ablation.intervention import Forwards, MeanSource
from arithmech.methods.ablation.knockout import (
    Ablation,
    Head,
    Means,
    correct,
    group_key,
    knockout_topk,
    mean_activations,
    mean_sources,
)
from arithmech.methods.ablation.settings import split_positions
from arithmech.methods.effects import concat_patched, effects_frame, studied_heads
from arithmech.paper import FIG4_CASES


def unknown_words(tok, prompt: str) -> list[str]:
    """Pieces of ``prompt`` the tokenizer maps to its unknown token (empty for byte-level tokenizers)."""
    if tok.unk_token_id is None:
        return []
    enc = tok(prompt, return_offsets_mapping=True, add_special_tokens=False)
    words = [prompt[s:e] for i, (s, e) in zip(enc["input_ids"], enc["offset_mapping"]) if i == tok.unk_token_id]
    return list(dict.fromkeys(words))


def transfer_table(
    model,
    tok,
    heads: Sequence[Head],
    means: MeanSource,
    cases: Sequence[tuple[str, str]] = FIG4_CASES,
    k: int = 5,
    positions: str = "end",
) -> pd.DataFrame:
    """Fig. 4: top-``k`` next tokens before and after knocking out ``heads``.

    The cases are free text with no template family: a :class:`Means` is position-pooled, a
    :class:`~arithmech.methods.ablation.pool.PoolMeans` gives every family's mean right-aligned at
    each position (``mean_source`` says which). Cases with words the tokenizer does not know are kept
    as rows with ``status`` saying so and no predictions.
    Rows: ``case, prompt, expected, status, when, rank, token, prob, mean_source``.
    """
    pooled = means.for_unseen()
    ok = [(c, p, e) for c, (p, e) in enumerate(cases) if not unknown_words(tok, p)]
    rows = _skipped_rows(tok, cases)
    if ok:
        ids, probs = knockout_topk(
            model,
            tok,
            [p for _, p, _ in ok],
            None,
            pooled,
            [Ablation(), Ablation.of(heads=heads)],
            k=k,
            forwards=Forwards(positions=positions),
        )
        rows += _prediction_rows(tok, ok, ids, probs, k)
    return (
        pd.DataFrame(rows)
        .assign(mean_source=pooled.source(None, 0))
        .sort_values(
            ["case", "when", "rank"],
            na_position="first",
            key=lambda s: s.map({"before": 0, "after": 1}) if s.name == "when" else s,
            ignore_index=True,
        )
    )


def _skipped_rows(tok, cases: Sequence[tuple[str, str]]) -> list[dict]:
    """The rows of the cases with words the tokenizer does not know: kept, with no predictions, ``status`` naming
    the words."""
    return [
        {
            "case": c,
            "prompt": p,
            "expected": e,
            "when": None,
            "rank": None,
            "token": None,
            "prob": None,
            "status": "skipped: unknown to the tokenizer: " + ", ".join(map(repr, unknown_words(tok, p))),
        }
        for c, (p, e) in enumerate(cases)
        if unknown_words(tok, p)
    ]


def _prediction_rows(tok, ok: list, ids, probs, k: int) -> list[dict]:
    """The rows of the cases that ran: each case's top-``k`` tokens and probabilities (``ids``, ``probs``:
    (2, cases, k), before then after the knockout)."""
    rows = []
    for a, when in enumerate(("before", "after")):
        for r, (c, p, e) in enumerate(ok):
            for j in range(k):
                rows.append(
                    {
                        "case": c,
                        "prompt": p,
                        "expected": e,
                        "status": "ok",
                        "when": when,
                        "rank": j + 1,
                        "token": tok.decode([int(ids[a, r, j])]).strip(),
                        "prob": float(probs[a, r, j]),
                    }
                )
    return rows


def random_heads(heads: Sequence[Head], universe: Sequence[Head], n_random: int, seed: int) -> list[list[Head]]:
    """``n_random`` seeded sets of as many heads as ``heads``, drawn from ``universe`` minus ``heads`` (the first
    ``len(heads)`` of each of :func:`~arithmech.methods.ablation.curves.random_orders`), for :func:`heldout_drop`."""
    return [p[: len(heads)] for p in random_orders(universe, heads, n_random, seed)]


def heldout_drop(
    model,
    tok,
    heads: Sequence[Head],
    means: MeanSource,
    samples: Sequence[Sample],
    random_sets: Sequence[Sequence[Head]],
    forwards: Forwards,
) -> dict:
    """Accuracy on ``samples`` (a family not used to find ``heads``) before and after knocking out
    ``heads``, and after knocking out each of ``random_sets`` (as many random heads *other than* ``heads``,
    :func:`random_heads`; ``random_orders`` in the record counts them).

    ``means``: a :class:`~arithmech.methods.ablation.pool.PoolMeans` (the family's own pool where it
    has one; ``mean_source`` says which) or a :class:`Means` (position-pooled). ``forwards``:
    :func:`~arithmech.methods.ablation.knockout.knockout_topk`'s batching and positions.
    ``relative_drop = (knocked - base) / base``, the paper's −22.9% / 34.7% = −66% on SVAMP; accuracies
    with Wilson 95% intervals, the random ones as mean and 5–95% quantiles over the sets.

    >>> r = heldout_drop(model, tok, [(3, 2)], pool, test, random_heads([(3, 2)], universe, 20, 0), Forwards())
    >>> r["relative_drop"], r["random_accuracy_q05"], r["random_accuracy_q95"]
    """
    means = means.for_unseen()
    n_random = len(random_sets)
    rand = [Ablation.of(heads=h) for h in random_sets]
    ok = correct(model, tok, samples, means, [Ablation(), Ablation.of(heads=heads)] + rand, forwards=forwards).sum(-1)
    n = len(samples)
    base, ko = with_interval({}, int(ok[0]), n), with_interval({}, int(ok[1]), n)
    r = ok[2:].double() / n
    q = torch.quantile(r, torch.tensor([0.05, 0.95], dtype=torch.float64)).tolist() if n_random else [float("nan")] * 2
    return {
        "n": n,
        "n_heads": len(heads),
        "base_accuracy": base["accuracy"],
        "base_ci": [base["ci_low"], base["ci_high"]],
        "knockout_accuracy": ko["accuracy"],
        "knockout_ci": [ko["ci_low"], ko["ci_high"]],
        "relative_drop": (ko["accuracy"] - base["accuracy"]) / base["accuracy"] if base["accuracy"] else float("nan"),
        "random_orders": n_random,
        "random_accuracy_mean": float(r.mean()) if n_random else float("nan"),
        "random_accuracy_std": float(r.std(unbiased=False)) if n_random else float("nan"),
        "random_accuracy_q05": q[0],
        "random_accuracy_q95": q[1],
        "mean_source": mean_sources(tok, samples, means),
    }


def heldout_heads(res, heldout: str = "fig10") -> tuple[list[tuple[int, int]], str]:
    """The studied heads (:func:`~arithmech.methods.effects.studied_heads`: key heads, else the top ones)
    recomputed from the samples outside the ``heldout`` family (for the transfer test), and their source."""
    held_ids = {t.id for t in pairs.select_templates(heldout)}
    tasks = res.key_heads.get("control", {}).get("pooled") or list(res.tasks)  # the tasks "all" pools
    use = torch.tensor([s.template not in held_ids for t in tasks for s in res.tasks[t]])
    if not use.any():
        return [], "no sample outside the held-out family"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eff = effects_frame(
            concat_patched([res.patched[t] for t in tasks]).select(use),
            "id",
            False,
            res.params["n_boot"],
            res.params["seed"],
        )
    return studied_heads(eff, "id", res.params["threshold"])


def run_transfer(
    res,
    model,
    tok,
    id_heads: tuple[Sequence, str],
    heldout: str,
    draw: Draw,
    batch_size: int = BATCH_SIZE,
    cases: Sequence[tuple[str, str]] = FIG4_CASES,
) -> None:
    """Fig. 4 and the held-out family: fills ``res.transfer`` and ``res.heldout`` (``res`` an
    :class:`~arithmech.identify.run.IdentifyResult`; ``id_heads``: key heads found without the
    ``heldout`` templates and where they come from, :func:`arithmech.identify.run.heldout_heads`).
    Fig. 4 knocks out the studied heads of the primary task (:func:`arithmech.methods.effects.studied_heads`:
    the key heads, or the top ones where none is key), its prompts cut where this tokenizer's answer token
    starts (:func:`tokenizer_cases`). ``res.means`` is a reference pool that covers the held-out family,
    so its prompts get their own family's per-position means. The held-out family's pairs are drawn with
    ``draw`` (identify's :class:`~arithmech.data.draw.Draw`), ``res.params["n_samples"]`` of them (X_r's),
    seeded by ``res.params["seed"] + 1``."""
    heads_found, id_source = id_heads  # found without the held-out family: the ones knocked out
    held_ids = {t.id for t in pairs.select_templates(heldout)}
    every = [s for ss in res.tasks.values() for s in ss]
    keep = [s for s in every if s.template not in held_ids]
    primary = res.key_heads["task"]
    heads, _ = studied_heads(res.effects, primary, res.params["threshold"])
    positions = split_positions(res.params["knockout_positions"])[0]
    res.transfer = transfer_table(
        model, tok, heads, res.means, tokenizer_cases(tok, cases), positions=positions
    ).assign(split="the paper's prompts")  # drawn from neither side
    geo = geometry(model)
    universe = [(l, h) for l in range(geo.n_layers) for h in range(geo.n_heads)]
    if not keep:
        res.heldout = {"family": heldout, "status": "skipped: every identification sample is from this family"}
        return
    n_samples, seed = res.params["n_samples"], res.params["seed"]
    held_out = res.params["knockout_split"] == "held-out"
    drawn = n_samples * (2 * splits.EVAL_SHARE if held_out else 1)
    test, checked = _heldout_pairs(model, tok, heldout, drawn, res.params, draw, batch_size)
    means = res.means
    if isinstance(means, Means):  # no pool (user samples): the other templates' X_c, pooled
        means = mean_activations(model, tok, [s.corrupt for s in keep], [group_key(s) for s in keep], batch_size)
    randoms = random_heads(heads_found, universe, res.params["n_random"], seed)
    r = heldout_drop(
        model, tok, heads_found, means, test, randoms, Forwards(batch_size=batch_size, positions=positions)
    )
    res.heldout = {
        "family": heldout,
        "identified_on": len(keep),
        "heads": [f"{l}.{h}" for l, h in heads_found],
        "heads_from": id_source,
        "test_prompts": _test_prompts(heldout, drawn, seed, draw, n_samples, held_out),
        "n_test": len(test),
        "n_clusters": splits.n_problems(test),
        **({"n_eval_side": checked} if checked is not None else {}),
        "split": "held-out" if held_out else "in-sample",
        "positions": positions,
        **r,
    }


def _heldout_pairs(model, tok, heldout: str, drawn: int, params: dict, draw: Draw, batch_size: int) -> tuple:
    """The held-out family's test pairs: ``drawn`` of them (seeded by identify's seed + 1); held out (identify's
    split), only the problems never ranked on (the evaluation side's clusters) whose X_c's top-1 is not the right
    answer, the first ``n_samples``: the family's accuracy is measured on all of them, right or wrong, but a prompt
    whose answer survives removing the operator cannot test the operator's heads.

    Returns ``(test, checked)``: the pairs, and how many evaluation-side pairs were checked (``None`` in-sample).
    """
    test, _ = pairs.make_pairs(tok, heldout, n=drawn, seed=params["seed"] + 1, draw=draw)
    checked = None
    if params["knockout_split"] == "held-out":
        test = [s for s in test if splits.side(splits.cluster(s)) == "eval"]
        checked = len(test)
        test = check_counterfactuals(model, tok, test, batch_size)[0][: params["n_samples"]]
    return test, checked


def _test_prompts(heldout: str, drawn: int, seed: int, draw: Draw, n_samples: int, held_out: bool) -> str:
    """How the held-out family's test prompts were made, as recorded: the call that drew them and the filter."""
    return (
        f"data.make_pairs(tok, {heldout!r}, n={drawn}, seed={seed + 1}, "
        f"answer_token={draw.answer_token!r}{f', shots={draw.shots}' if draw.shots else ''})"
        + (
            f", the first {n_samples} of the evaluation side's problem clusters whose X_c "
            "moves the answer (scoring.check_counterfactuals)"
            if held_out
            else ", unfiltered"
        )
    )


def tokenizer_cases(tok, cases: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Fig. 4's ``(prompt, answer)`` cases with each prompt ending where this tokenizer's answer token
    starts (SmolLM2: "281 + 135 =" → "281 + 135 = ", its space is a token of its own; a prompt ending in a
    digit gets no joiner); a case whose answer starts inside a token is kept as written."""
    out = []
    for p, e in cases:
        split = pairs.answer_split(tok, p, e, "" if p[-1:].isdigit() else " ")
        out.append((split[0] if split else p, e))
    return out
