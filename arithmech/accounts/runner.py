"""Forward passes over grid prompts at the last position: the clean pass with neuron attribution, and edited passes.

The measure throughout is the **last-digit logit difference** ``LD = logit(answer digit) - mean(logit(other nine
digits))`` at the last position (END): it scores the answer against every other digit, on any model's logit scale.

:class:`Runner` batches prompts by length (no padding) and runs a few-shot prompt's shared examples once
(:class:`arithmech.core.prefix.SharedPrefix`, cached before any hook is set, so an edit at END never reaches them).

* :meth:`Runner.clean` — one pass with gradients: at END, each flagged MLP's neuron activations (the input of its
  ``down_proj``: ``act(gate) * up``) and ``dLD/d activation`` (a zero leaf added at END, so the gradient takes
  every downstream path), every layer's residual stream at END and at the operand ``a``'s token, and the summed
  MLP and attention writes at END;
* :meth:`Runner.ld` — LD per prompt under edits: ``edit_in`` / ``edit_out`` map a module path to
  ``fn(x_end, rows) -> x_end``, applied to the END row of the module's input / output (``rows``: the batch's prompt
  indices), the rest of the sequence untouched.

Attribution of neuron ``i`` on a prompt: ``(mu_i - act_i) * dLD/dact_i``, the first-order change of LD when the
neuron is set to its grid mean ``mu_i`` (mean ablation), which :func:`exact_neuron_effects` measures exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from arithmech.core.models import arch_for, geometry, input_device
from arithmech.core.prefix import MIN_PREFIX, SharedPrefix, expanded, layers_of, shared_length
from arithmech.core.trace import TraceDict
from arithmech.data.batches import group_by_length

Edit = Callable[[torch.Tensor, list[int]], torch.Tensor]


def logit_difference(logits: torch.Tensor, digits: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    """``(b,)`` LD from END logits ``(b, vocab)``: the answer digit's logit minus the mean of the other nine's.
    ``digits``: the 10 digit ids; ``answer``: ``(b,)`` the answer digit's index in ``digits`` (0-9)."""
    z = logits[:, digits]
    own = z.gather(1, answer[:, None])[:, 0]
    return own - (z.sum(1) - own) / 9


@dataclass
class Clean:
    """What the clean pass holds, rows in prompt order: ``ld`` (n,); ``acts`` / ``grads`` {layer: (n, width)};
    ``resid_end`` / ``resid_a`` (n, L, d) the residual stream after each layer at END / at ``a``; ``mlp_sum`` /
    ``attn_sum`` (n, d) the MLPs' / heads' summed writes at END; ``logits`` (n, 10) the digit logits at END."""

    ld: torch.Tensor
    acts: dict[int, torch.Tensor]
    grads: dict[int, torch.Tensor]
    resid_end: torch.Tensor
    resid_a: torch.Tensor
    mlp_sum: torch.Tensor
    attn_sum: torch.Tensor
    logits: torch.Tensor


class Runner:
    """Batched passes over ``samples`` (grid prompts: ``clean``, ``answer``, ``positions``)."""

    def __init__(self, model, tok, samples: Sequence, digits: list[int], batch_size: int = 64):
        self.model, self.arch, self.geo = model, arch_for(model), geometry(model)
        dev = input_device(model)
        self.digits = torch.tensor(digits, device=dev)
        self.answer = torch.tensor([int(s.answer) for s in samples])  # the answer digit is its index in ``digits``
        self.a_pos = torch.tensor([s.positions["A"][-1] for s in samples])
        self.batches = [(idx, ids.to(dev)) for idx, ids in group_by_length(tok, [s.clean for s in samples], batch_size)]
        self.shared = SharedPrefix(model, [ids for _, ids in self.batches])
        self.n = len(samples)

    def path(self, name: str, layer: int) -> str:
        return self.arch.path(name, layer)

    def _forward(self, ids: torch.Tensor, **kw):
        key = self.shared.key(ids)
        p = len(key) if key is not None and key in self.shared.kv else 0
        return self.shared.forward(ids, logits_to_keep=1, use_cache=False, **kw), p

    def _prefix(self, ids: torch.Tensor, idx: list[int]) -> tuple[int, tuple | None]:
        """The shared tokens of a batch run once for the clean pass, ending before every row's operand ``a`` (its
        residual stream is read there): ``(length, keys and values)``, or ``(0, None)`` when too short."""
        n = min(shared_length(ids), int(self.a_pos[idx].min()))
        if n < MIN_PREFIX:
            return 0, None
        with torch.no_grad():
            return n, layers_of(self.model(ids[:1, :n], logits_to_keep=1, use_cache=True).cache)

    def ld(self, edit_in: dict[str, Edit] | None = None, edit_out: dict[str, Edit] | None = None) -> torch.Tensor:
        """``(n,)`` LD per prompt with the END edits applied (none: the clean LD)."""
        edit_in, edit_out = edit_in or {}, edit_out or {}
        out = torch.empty(self.n)
        rows: list[int] = []

        def on(edits: dict[str, Edit]):
            def fn(x, name):
                t = x[0] if isinstance(x, tuple) else x
                t = t.clone()
                t[:, -1] = edits[name](t[:, -1], rows)
                return (t, *x[1:]) if isinstance(x, tuple) else t

            return fn

        with (
            torch.no_grad(),
            TraceDict(self.model, list(edit_in), retain_output=False, edit_input=on(edit_in)),
            TraceDict(self.model, list(edit_out), retain_output=False, edit_output=on(edit_out)),
        ):
            for idx, ids in self.batches:
                rows[:] = idx
                res, _ = self._forward(ids)
                out[idx] = logit_difference(
                    res.logits[:, -1].float(), self.digits, self.answer[idx].to(ids.device)
                ).cpu()
        return out

    def clean(self, layers: Sequence[int]) -> Clean:
        """The clean pass with gradients (class docstring); ``layers``: the flagged MLPs."""
        L, d = self.geo.n_layers, self.geo.d_model
        width = self.model.config.intermediate_size
        acts = {l: torch.empty(self.n, width) for l in layers}
        grads = {l: torch.empty(self.n, width) for l in layers}
        resid_end, resid_a = torch.empty(self.n, L, d), torch.empty(self.n, L, d)
        mlp_sum, attn_sum = torch.zeros(self.n, d), torch.zeros(self.n, d)
        logits_out, ld_out = torch.empty(self.n, 10), torch.empty(self.n)
        down = {self.path("mlp", l) + ".down_proj": l for l in layers}
        writes = {self.path("mlp", l): "mlp" for l in range(L)} | {self.path("attn", l): "attn" for l in range(L)}
        deltas: dict[int, torch.Tensor] = {}
        got: dict[str, list[torch.Tensor]] = {"mlp": [], "attn": []}
        prefixes = [self._prefix(ids, idx) for idx, ids in self.batches]  # before any hook: the prefix stays clean

        def add_delta(x, name):
            x = x.clone()
            x[:, -1] = x[:, -1] + deltas[down[name]]
            return x

        def keep(y, name):
            got[writes[name]].append((y[0] if isinstance(y, tuple) else y)[:, -1].detach())
            return y

        with (
            torch.enable_grad(),
            TraceDict(self.model, list(down), retain_input=True, retain_output=False, edit_input=add_delta) as td,
            TraceDict(self.model, list(writes), retain_output=False, edit_output=keep),
        ):
            for (idx, ids), (p, kv) in zip(self.batches, prefixes):
                deltas.clear()
                deltas.update({l: torch.zeros(len(idx), width, requires_grad=True) for l in layers})
                got["mlp"].clear()
                got["attn"].clear()
                if kv is None:
                    res = self.model(ids, logits_to_keep=1, use_cache=False, output_hidden_states=True)
                else:
                    res = self.model(
                        ids[:, p:],
                        cache=expanded(self.model, kv, len(idx)),
                        use_cache=True,
                        logits_to_keep=1,
                        output_hidden_states=True,
                    )
                logits = res.logits[:, -1].float()
                ld = logit_difference(logits, self.digits, self.answer[idx].to(ids.device))
                ld.sum().backward()
                for name, l in down.items():
                    acts[l][idx] = td[name].input[:, -1].detach().float().cpu()
                    grads[l][idx] = torch.as_tensor(deltas[l].grad).float().cpu()
                hs = torch.stack(res.hidden_states[1:], 1).detach().float().cpu()  # (b, L, seq - p, d)
                resid_end[idx] = hs[:, :, -1]
                resid_a[idx] = hs[torch.arange(len(idx)), :, self.a_pos[idx] - p]
                mlp_sum[idx] = torch.stack(got["mlp"]).sum(0).float().cpu()
                attn_sum[idx] = torch.stack(got["attn"]).sum(0).float().cpu()
                logits_out[idx] = logits[:, self.digits].detach().cpu()
                ld_out[idx] = ld.detach().cpu()
        return Clean(ld_out, acts, grads, resid_end, resid_a, mlp_sum, attn_sum, logits_out)


def set_neurons(values: torch.Tensor, mask: torch.Tensor | None = None) -> Edit:
    """An ``edit_in`` of a ``down_proj``: the neurons of ``mask`` (``(width,)`` or ``(n, width)`` per prompt, bool)
    take ``values`` ``(width,)``; every neuron when ``mask`` is None."""

    def fn(x, rows):
        v = values.to(x.dtype).to(x.device).expand_as(x)
        if mask is None:
            return v.clone()
        m = (mask[rows] if mask.dim() == 2 else mask.expand(len(rows), -1)).to(x.device)
        return torch.where(m, v, x)

    return fn


def exact_neuron_effects(runner: Runner, layer: int, neurons: Sequence[int], mean: torch.Tensor) -> torch.Tensor:
    """``(len(neurons), n)`` exact change of LD when each neuron alone is set to its mean at END (one pass each)."""
    base = runner.ld()
    path = runner.path("mlp", layer) + ".down_proj"
    out = []
    for i in neurons:
        mask = torch.zeros(mean.shape[0], dtype=torch.bool)
        mask[i] = True
        out.append(runner.ld(edit_in={path: set_neurons(mean, mask)}) - base)
    return torch.stack(out)
