"""Rule D1 on a model: the two-digit grid of one template, the helix fits of the operand, and the patches.

The accounts step's ``--two-digit <id>-2d`` option (:mod:`arithmech.accounts.config`) runs :func:`run` on the
two-digit twin of one addition template (operands 10..99, :func:`arithmech.data.templates.two_digit`; the answer
token is still the answer's last digit, its leading digits carried in the prompt):

1. **the grid**: the cells of :func:`arithmech.accounts.helix.stratified_cells` (all 8,100, or a seeded subsample
   with as many cells for every ``a``), one prompt each (:func:`arithmech.accounts.grid.cell_prompt`); one plain
   pass reads whether the model answers (the answer digit its top token over the whole vocabulary at END) and
   the residual stream after each studied layer at the operand's last token (its ones digit under a digit
   tokenizer);
2. **answered?** the share of cells answered, with its Wilson interval: where its lower end is at or below
   chance for a last digit (:data:`arithmech.accounts.rules.HELIX_CHANCE`) or fewer than ``MIN_CLUSTERS``
   answered cells have a counterfactual, no patch runs and D1 is not testable;
3. **the patches**: up to ``n_intervene`` answered cells, each run with another operand ``a'``
   (:func:`arithmech.accounts.helix.partner`: the same carried digits, another last digit), the residual stream
   at ``a'``'s last token after a studied layer replaced by what each method reconstructs for ``a``
   (:func:`arithmech.accounts.helix.reconstructions`, fitted on every cell of the grid), the clean answer
   digit's logit difference read at END (:func:`arithmech.accounts.helix.patch_numbers`).
"""

from __future__ import annotations

import numpy as np
import torch

from arithmech.accounts import grid, helix
from arithmech.accounts.rules import EFFECT_FLOOR, HELIX_CHANCE
from arithmech.accounts.runner import logit_difference
from arithmech.core.models import arch_for, geometry, input_device
from arithmech.core.trace import TraceDict
from arithmech.data import templates as templates_module
from arithmech.data.answers import MIN_CLUSTERS
from arithmech.data.batches import group_by_length

ADDITION_TWINS = tuple(t.id for t in templates_module.TWO_DIGIT if t.op == "addition")


def studied_layers(n_layers: int, k: int) -> list[int]:
    """``k`` layers evenly spaced over ``0 .. n_layers - 2`` (the last layer's output is never read by a later
    position, so a patch there cannot move the answer), both ends included."""
    top = n_layers - 2
    if k > top:
        return list(range(top + 1))
    return sorted({int(round(x)) for x in np.linspace(0, top, k)})


def _forward(model, tok, texts: list[str], pos: list[int], c, digits: list[int], patch: dict | None = None):
    """One pass over ``texts``: the top token at END ``(n,)``, the digits' END logits ``(n, 10)`` and the residual
    stream after each studied layer (``c.helix_layers``) at ``pos`` ``(n, layers, d)``; ``patch`` (``{"layer": l,
    "vectors": (n, d)}``) replaces the output of layer ``l`` at ``pos`` (then no residual is read)."""
    arch, dev = arch_for(model), input_device(model)
    layers = studied_layers(geometry(model).n_layers, c.helix_layers)
    n = len(texts)
    top, z = torch.empty(n, dtype=torch.long), torch.empty(n, 10)
    resid = torch.empty(n if patch is None else 0, len(layers), geometry(model).d_model)
    rows: list[int] = []
    names = [] if patch is None else [f"{arch.path('layers')}.{patch['layer']}"]

    def edit(y, name):
        t = (y[0] if isinstance(y, tuple) else y).clone()
        for j, r in enumerate(rows):
            t[j, pos[r]] = patch["vectors"][r].to(t.dtype).to(t.device)
        return (t, *y[1:]) if isinstance(y, tuple) else t

    with torch.no_grad(), TraceDict(model, names, retain_output=False, edit_output=edit):
        for idx, ids in group_by_length(tok, texts, c.batch_size):
            rows[:] = idx
            res = model(ids.to(dev), logits_to_keep=1, use_cache=False, output_hidden_states=patch is None)
            end = res.logits[:, -1].float()
            top[idx], z[idx] = end.argmax(-1).cpu(), end[:, digits].cpu()
            if patch is None:
                hs = torch.stack([res.hidden_states[l + 1] for l in layers], 1).float().cpu()
                resid[idx] = hs[torch.arange(len(idx)), :, torch.tensor([pos[r] for r in idx])]
    return top, z, resid


def run(model, tok, c, shots: int, digits: list[int]) -> dict:
    """Rule D1's numbers on ``c.two_digit``'s grid (module docstring): the grid, the answered share and, where
    it is testable, the patches."""
    t = templates_module.TEMPLATES[c.two_digit]
    cells = helix.stratified_cells(c.two_digit_cells, c.seed)
    samples = [s for s in (grid.cell_prompt(tok, t, a, b, shots, c.seed) for a, b in cells) if s is not None]
    layers = studied_layers(geometry(model).n_layers, c.helix_layers)
    pos = [s.positions["A"][-1] for s in samples]
    top, _, resid = _forward(model, tok, [s.clean for s in samples], pos, c, digits)
    correct = (top == torch.tensor([digits[int(s.answer)] for s in samples])).numpy()
    a = np.array([s.a for s in samples])
    out = {
        "template": t.id,
        "values": int(len(np.unique(a))),
        "layers": layers,
        **helix.answered_numbers(correct),
    }
    rng = np.random.default_rng(c.seed + 29)
    pairs = []
    for i in rng.permutation(np.flatnonzero(correct)).tolist():
        s = samples[i]
        a2 = helix.partner(s.a, s.b, rng)
        corrupt = None if a2 is None else grid._with_operands(tok, s, a2, s.b, "other", c.seed)
        if corrupt is not None:
            pairs.append((i, corrupt))
        if len(pairs) == c.n_intervene:
            break
    out["patch_prompts"] = len(pairs)
    if out["share"][1] <= HELIX_CHANCE or len(pairs) < MIN_CLUSTERS:  # D1 not testable: no patch runs
        return out
    out.update(_patches(model, tok, c, samples, pairs, resid.numpy(), a, digits))
    return out


def _patches(model, tok, c, samples, pairs, x, a, digits) -> dict:
    """The patched runs of ``pairs`` (``(cell row, counterfactual prompt)``) at every studied layer and method,
    then :func:`arithmech.accounts.helix.patch_numbers`; ``x`` ``(cells, layers, d)`` the grid's residuals."""
    layers = studied_layers(geometry(model).n_layers, c.helix_layers)
    rows = np.array([i for i, _ in pairs])
    texts = [p for _, p in pairs]
    pos = [samples[i].positions["A"][-1] for i in rows]
    ten, ans = torch.arange(10), torch.tensor([int(samples[i].answer) for i in rows])

    def ld(patch=None, prompts=texts) -> torch.Tensor:
        return logit_difference(_forward(model, tok, prompts, pos, c, digits, patch)[1], ten, ans)

    out = {"clean": ld(None, [samples[i].clean for i in rows]), "corrupt": ld()}
    per = {m: torch.empty(len(rows), len(layers)) for m in helix.METHODS}
    explained = {}
    for j, layer in enumerate(layers):
        rec = helix.reconstructions(x[:, j], a, rows, c.seed)
        explained[layer] = {m: helix.explained(x[rows, j], rec[m]) for m in helix.METHODS if m != "full"}
        for m in helix.METHODS:
            per[m][:, j] = ld({"layer": layer, "vectors": torch.as_tensor(rec[m], dtype=torch.float32)})
    out.update(per)
    clusters = [(samples[i].a, samples[i].b) for i in rows]
    return {**helix.patch_numbers(out, clusters, EFFECT_FLOOR, c.n_boot, c.seed), "explained": explained}
