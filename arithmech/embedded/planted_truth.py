"""Checking the planted model's ground truth on its weights, and scoring a method's heads against it.

:mod:`arithmech.embedded.planted` declares the circuit and writes it into the weights; this module measures, on a
loaded model, each statement of that declaration:

* :func:`fixed_deviation`: the entries the construction fixes still hold their values (0 on the shipped file);
* :func:`forbidden_attention`: the largest attention weight a blind or off head (or the composer from a non-slot
  query) puts on a key it may not read (0 by construction);
* :func:`slot_invariance`: per head, the largest change of its output, at any non-slot position, between two
  prompts that differ only in slot tokens (a Fig. 8 X_r and an X_c with the operator replaced by a neutral word
  and other operands of the same digit counts): 0 for every non-planted head by construction, > 0 for movers;
* :func:`mean_ablation`: first-answer-token accuracy when heads' outputs at the last position are replaced by their
  mean over prompts of the same template whose non-slot tokens stand at the same positions: for the movers it
  cannot exceed the groups' majority share (the prediction is constant within a group); for every non-planted head
  it changes no answer;
* :func:`score_heads`: precision and recall of a found set of heads against the planted set, with Wilson
  intervals.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

import torch

from arithmech.core.stats import wilson_interval
from arithmech.data import templates
from arithmech.embedded import planted as planted_model


def heads(model) -> list[tuple[int, int]]:
    cfg = model.config
    return [(i, h) for i in range(cfg.num_hidden_layers) for h in range(cfg.num_attention_heads)]


def nonplanted(model) -> list[tuple[int, int]]:
    return [x for x in heads(model) if x not in planted_model.PLANTED]


@torch.no_grad()
def fixed_deviation(model, tok) -> float:
    """Largest ``|weight - declared value|`` over the entries :func:`arithmech.embedded.planted.construction` fixes."""
    params = dict(model.named_parameters())
    worst = 0.0
    for name, (m, v) in planted_model.construction(model, tok).items():
        p = params[name].detach().float().cpu()
        if m.any():
            worst = max(worst, (p[m] - v[m]).abs().max().item())
    return worst


def _ids(tok, prompts: Sequence[str]) -> dict[int, list[list[int]]]:
    by: dict[int, list[list[int]]] = {}
    for p in prompts:
        ids = tok(p)["input_ids"]
        by.setdefault(len(ids), []).append(ids)
    return by


@torch.no_grad()
def forbidden_attention(model, tok, prompts: Sequence[str]) -> dict[str, float]:
    """Per role, the largest attention weight on a forbidden key over every prompt, query and head of that role
    (the model must run with ``attn_implementation="eager"``, which returns the weights)."""
    slots = torch.tensor(planted_model.slot_ids(tok))
    worst = {"blind": 0.0, "off": 0.0, "composer": 0.0}
    for _, rows in _ids(tok, prompts).items():
        ids = torch.tensor(rows)
        is_slot = torch.isin(ids, slots)  # (b, s)
        att = model(input_ids=ids, output_attentions=True).attentions
        for layer, a in enumerate(att):  # (b, H, q, k)
            for h in range(a.shape[1]):
                kind = planted_model.role(layer, h)
                w = a[:, h]
                if kind == "blind":
                    bad = w.masked_select(is_slot[:, None, :].expand_as(w))
                elif kind == "off":
                    bad = w[:, :, 1:]
                elif kind == "composer":
                    bad = w[:, :, 1:].masked_select((~is_slot)[:, :, None].expand_as(w)[:, :, 1:])
                else:
                    continue
                if bad.numel():
                    worst[kind] = max(worst[kind], bad.max().item())
    return worst


def slot_pairs(seed: int = 0, n_per_template: int = 4, small: bool | None = None) -> list[tuple[str, str]]:
    """``(X_r, X_c)`` prompt pairs that differ only in slot tokens: each Fig. 8 template, X_c its counterfactual (the
    operator replaced by a neutral word or symbol) with other operands of the same digit counts."""
    rng = random.Random(f"slot-pairs-{seed}")
    out = []
    for t in templates.FIG8:
        for k in range(n_per_template):
            sm = (k % 2 == 0) if small is None else small
            a, b = planted_model.draw_pair(t.op, rng, small=sm, heldout=None)
            for _ in range(1000):
                a2, b2 = planted_model.draw_pair(t.op, rng, small=sm, heldout=None)
                if (len(str(a2)), len(str(b2))) == (len(str(a)), len(str(b))) and (a2, b2) != (a, b):
                    break
            state = rng.random()
            out.append(
                (
                    planted_model.fill(t, a, b, random.Random(state)),
                    planted_model.fill(t, a2, b2, random.Random(state), corrupt=True),
                )
            )
    return out


class _Capture:
    """Forward-pre hooks on every ``o_proj``: its input ``(b, s, H*dh)`` holds each head's output side by side."""

    def __init__(self, model, replace: dict | None = None):
        self.model, self.replace = model, replace or {}
        self.out: dict[int, torch.Tensor] = {}
        self.hooks: list = []

    def __enter__(self):
        for i, layer in enumerate(self.model.model.layers):
            self.hooks.append(layer.self_attn.o_proj.register_forward_pre_hook(self._hook(i)))
        return self

    def _hook(self, i):
        def hook(mod, args):
            x = args[0]
            self.out[i] = x.detach().clone()
            if i in self.replace:
                x = x.clone()
                for h, value in self.replace[i].items():  # value: (b, dh) at the last position
                    dh = x.shape[-1] // self.model.config.num_attention_heads
                    x[:, -1, h * dh : (h + 1) * dh] = value
                return (x,)
            return None

        return hook

    def __exit__(self, *exc):
        for h in self.hooks:
            h.remove()


def _head(x: torch.Tensor, h: int, n_heads: int) -> torch.Tensor:
    dh = x.shape[-1] // n_heads
    return x[..., h * dh : (h + 1) * dh]


@torch.no_grad()
def slot_invariance(model, tok, pairs: Sequence[tuple[str, str]]) -> dict[tuple[int, int], float]:
    """Per head, the largest ``|output(X_r) - output(X_c)|`` at any non-slot position over ``pairs`` (prompts of one
    token length each, differing only in slot tokens; checked). At a slot position a non-planted head's *query* is
    the slot token, so its output there may differ; only planted heads ever read those positions."""
    slots = set(planted_model.slot_ids(tok))
    H = model.config.num_attention_heads
    worst = {x: 0.0 for x in heads(model)}
    for r, c in pairs:
        ir, ic = tok(r)["input_ids"], tok(c)["input_ids"]
        if len(ir) != len(ic) or any(a != b and not (a in slots and b in slots) for a, b in zip(ir, ic)):
            raise ValueError(f"not a slot-only pair: {r!r} / {c!r}")
        outs = []
        for ids in (ir, ic):
            with _Capture(model) as cap:
                model(input_ids=torch.tensor([ids]))
            outs.append(cap.out)
        keep = torch.tensor([a not in slots for a in ir])  # non-slot positions (the same token in both)
        for layer, h in worst:
            d = (_head(outs[0][layer], h, H) - _head(outs[1][layer], h, H))[0, keep].abs().max().item()
            worst[(layer, h)] = max(worst[(layer, h)], d)
    return worst


@torch.no_grad()
def mean_ablation(
    model, tok, items: Sequence[dict], ablate: Iterable[tuple[int, int]], global_mean: bool = False
) -> dict:
    """First-answer-token accuracy before and after replacing the ``ablate`` heads' outputs at the last position
    by their mean over the prompts of one group: the same template with the same non-slot tokens at the same
    positions (``global_mean``: all prompts of the same token length), the share of answers changed, and the
    groups' majority share (the most frequent first answer token in each group: the best a prediction blind to
    the slot tokens can do, so the bound on the movers' ablation)."""
    ablate = list(ablate)
    H = model.config.num_attention_heads
    slots = set(planted_model.slot_ids(tok))
    groups: dict[tuple, list[int]] = {}
    for k, it in enumerate(items):
        ids = tok(it["prompt"])["input_ids"]
        pattern = tuple(-1 if t in slots else t for t in ids)  # the prompt with its slot tokens masked
        groups.setdefault((len(ids),) if global_mean else (it["template"], pattern), []).append(k)
    before, after = [False] * len(items), [False] * len(items)
    changed = 0
    gold = [tok(" " + it["target"], add_special_tokens=False)["input_ids"][0] for it in items]
    majority = 0
    for idx in groups.values():
        ids = torch.tensor([tok(items[k]["prompt"])["input_ids"] for k in idx])
        with _Capture(model) as cap:
            logits = model(input_ids=ids).logits[:, -1]
        pred = logits.argmax(-1).tolist()
        replace: dict[int, dict[int, torch.Tensor]] = {}
        for layer, h in ablate:
            replace.setdefault(layer, {})[h] = _head(cap.out[layer][:, -1], h, H).mean(0)
        with _Capture(model, replace):
            pred2 = model(input_ids=ids).logits[:, -1].argmax(-1).tolist()
        for j, k in enumerate(idx):
            before[k], after[k] = pred[j] == gold[k], pred2[j] == gold[k]
        firsts = [items[k]["target"][0] for k in idx]
        if not global_mean:
            majority += max(firsts.count(c) for c in set(firsts))
        changed += sum(a != b for a, b in zip(pred, pred2))
    n = len(items)
    return {
        "n": n,
        "accuracy": round(sum(before) / n, 4),
        "ablated_accuracy": round(sum(after) / n, 4),
        "answers_changed": round(changed / n, 4),
        "majority_share": None if global_mean else round(majority / n, 4),
    }


def score_heads(
    found: Iterable[tuple[int, int]], truth: Iterable[tuple[int, int]] = planted_model.MOVERS, z: float = 1.959964
) -> dict:
    """Precision (planted among ``found``) and recall (``found`` among planted) of a method's heads, each
    ``{k, n, value, lo, hi}`` with a Wilson interval (``value`` None when ``n`` is 0). ``truth`` defaults to the
    movers (the heads with a direct path to the last position under the paper's first answer token); pass
    :data:`arithmech.embedded.planted.PLANTED` under identify's ``last-digit`` answer token."""
    f = {(int(a), int(b)) for a, b in found}
    t = {(int(a), int(b)) for a, b in truth}
    hit = len(f & t)

    def part(k: int, n: int) -> dict:
        lo, hi = wilson_interval(k, n, z) if n else (0.0, 1.0)
        return {"k": k, "n": n, "value": round(k / n, 4) if n else None, "lo": round(lo, 4), "hi": round(hi, 4)}

    return {
        "precision": part(hit, len(f)),
        "recall": part(hit, len(t)),
        "false_positives": sorted(f - t),
        "missed": sorted(t - f),
    }


def report(model, tok, seed: int = 3, n: int = 10) -> dict:
    """Every check above on ``model`` (eager attention), as written into the planted model's ``accuracy.json``."""
    small = planted_model.split_items("in_distribution_small", seed, n)
    wide = planted_model.split_items("in_distribution_wide", seed, n)
    pairs = slot_pairs(seed)
    inv = slot_invariance(model, tok, pairs)
    prompts = [it["prompt"] for it in small + wide] + [c for _, c in pairs]
    return {
        "fixed_entries_max_deviation": fixed_deviation(model, tok),
        "forbidden_attention_max": forbidden_attention(model, tok, prompts),
        "slot_invariance_pairs": len(pairs),
        "nonplanted_output_change_max": max(v for k, v in inv.items() if k not in planted_model.PLANTED),
        "planted_output_change": {f"{a}.{b}": round(inv[(a, b)], 4) for a, b in planted_model.PLANTED},
        "movers_ablated_small": mean_ablation(model, tok, small, planted_model.MOVERS),
        "movers_ablated_wide": mean_ablation(model, tok, wide, planted_model.MOVERS),
        "nonplanted_ablated_small": mean_ablation(model, tok, small, nonplanted(model)),
        "nonplanted_ablated_small_global_means": mean_ablation(model, tok, small, nonplanted(model), True),
    }
