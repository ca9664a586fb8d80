"""What path patching measured: :class:`Patched`, one tensor per quantity, per sample and component.

:func:`arithmech.methods.patching.path_patch` (fast or reference) returns a :class:`Patched`: the answer's logit
on X_r and with each head and MLP patched from X_c, the logit difference, the counterfactual's answer; its
methods turn them into the paper's relative change and the calibrated share. :data:`FIELDS` names its tensors in
order (checkpoints, concatenation); :func:`check_logit_o` warns where the relative change is unstable
(:data:`REL_TOL`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch

REL_TOL = 1e-2  # |logit_o| below this x the sample's logit scale: the relative change is unstable


@dataclass
class Patched:
    """Answer logits of every patched run.

    logit_p: ``(n, L, H+1)`` patched logit of {C} (index ``H`` = MLP of the layer);
    logit_o: ``(n, L)`` the unpatched logit, computed the same way as ``logit_p`` (fast: the same
    chain with a zero change; reference: the hooked model with no change), so that clean → clean
    gives exactly 0; model_logit: ``(n,)`` the model's own clean END logit; logit_std: ``(n,)``
    spread of the clean END logits over the vocabulary (the logit scale); lse_p / lse_o: the
    full-vocabulary logsumexp of the same runs when the probability was asked for.
    X_c's own answer (``None`` where not computed): counter ``(n,)`` its ids ``answer_c``; counter_p ``(n, L,
    H+1)`` / counter_o ``(n, L)`` its logit in the runs of logit_p / logit_o; ld_r / ld_c ``(n,)``: ``LD =
    logit({C}) - logit(answer_c)`` on X_r and X_c (:func:`counter_fields`).
    """

    logit_p: torch.Tensor
    logit_o: torch.Tensor
    model_logit: torch.Tensor
    logit_std: torch.Tensor
    lse_p: torch.Tensor | None = None
    lse_o: torch.Tensor | None = None
    counter: torch.Tensor | None = None
    counter_p: torch.Tensor | None = None
    counter_o: torch.Tensor | None = None
    ld_r: torch.Tensor | None = None
    ld_c: torch.Tensor | None = None

    def _o(self) -> torch.Tensor:
        return self.logit_o[..., None]

    def relative_change(self, warn: bool = True, rel_tol: float = REL_TOL) -> torch.Tensor:
        """``(n, L, H+1)``: ``(logit_p - logit_o) / logit_o`` (Algorithm 1), per sample."""
        if warn:
            check_logit_o(self.model_logit, self.logit_std, rel_tol)
        return (self.logit_p - self._o()) / self._o()

    def logit_diff(self) -> torch.Tensor:
        """``(n, L, H+1)``: ``logit_p - logit_o`` (stable where logit_o is near 0)."""
        return self.logit_p - self._o()

    def prob(self) -> torch.Tensor:
        """``(n, L, H+1)``: patched probability of {C} (needs ``prob=True`` when patching)."""
        if self.lse_p is None:
            raise ValueError("the probability of {C} was not computed: patch with prob=True")
        return (self.logit_p - self.lse_p).exp()

    def prob_o(self) -> torch.Tensor:
        """``(n, L)``: unpatched probability of {C}."""
        if self.lse_o is None:
            raise ValueError("the probability of {C} was not computed: patch with prob=True")
        return (self.logit_o - self.lse_o).exp()

    def ld_effect(self) -> torch.Tensor:
        """``(n, L, H+1)`` float64: ``LD(patched) - LD(X_r)``, each sender's change of the logit difference
        (``LD(X_r)`` computed as ``logit_o``, so clean → clean gives exactly 0)."""
        d = lambda a, c: self._need(a).double() - self._need(c).double()
        return d(self.logit_p, self.counter_p) - d(self.logit_o, self.counter_o)[..., None]

    def ld_total(self) -> torch.Tensor:
        """``(n,)`` float64: ``LD(X_r) - LD(X_c)``, the whole counterfactual's effect on the logit difference."""
        return self._need(self.ld_r).double() - self._need(self.ld_c).double()

    def share(self) -> torch.Tensor:
        """``(L, H+1)`` float64: ``mean(ld_effect) / mean(ld_total)`` over samples, each sender's share of the
        counterfactual's effect (a ratio of means; negative: the sender carries that share)."""
        return self.ld_effect().mean(0) / self.ld_total().mean()

    @staticmethod
    def _need(t: torch.Tensor | None) -> torch.Tensor:
        if t is None:
            raise ValueError("X_c's answer logits were not computed (made before the share was measured): re-run")
        return t

    def select(self, rows) -> Patched:
        """The same result restricted to some samples (``rows``: indices or a bool mask)."""
        pick = lambda t: None if t is None else t[rows]
        kept: dict[str, Any] = {f: pick(getattr(self, f)) for f in FIELDS}  # the optional fields stay None
        return Patched(**kept)


FIELDS = tuple(Patched.__dataclass_fields__)  # every tensor of a Patched, in order (checkpoints, concat)


def check_logit_o(logit_o: torch.Tensor, scale: torch.Tensor, rel_tol: float = REL_TOL) -> int:
    """Warn when the relative change is unstable: ``|logit_o|`` below ``rel_tol`` × the sample's
    logit scale, or ``logit_o <= 0`` (the ratio's sign flips). Returns the number of such samples."""
    near = logit_o.abs() < rel_tol * scale
    neg = (logit_o <= 0) & ~near
    bad = int((near | neg).sum())
    if bad:
        warnings.warn(
            f"relative logit change is unstable for {bad} of {logit_o.numel()} samples: "
            f"{int(near.sum())} have |logit_o| < {rel_tol:g} x their logit scale and {int(neg.sum())} "
            "have logit_o <= 0 (sign flip); prefer the logit_diff or prob metric for them",
            stacklevel=3,
        )
    return bad
