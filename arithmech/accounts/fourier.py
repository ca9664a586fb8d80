"""The Fourier tests on the ten digit logits: the periodic filter, its random control, the spectrum and the probe.

**The digit-logit subspace.** A residual write ``x`` changes the digit logits by ``B x`` with ``B = W_U[digits] *
g`` (the unembedding's ten digit rows times the final norm's gain, the norm's scale aside). A logit pattern over
the digits ``j = 0..9`` with period ``T`` is a Fourier vector ``cos / sin(2 pi k j / 10)``, ``k = 10 / T``: periods
10 and 5 have a cosine and a sine each, period 2 a cosine only (5 vectors, the columns of ``F``).

**The filter** (Zhou et al. 2024, restricted to the ten digits): project a write onto the null space of
``M = F^T B``, ``x' = x - M^+ M x``, so that its digit logits lose exactly those frequencies (``M x' = 0``).
:func:`remove` does it with an orthonormal basis of ``M``'s row space; :func:`literal_filter` is the formula
itself (a test keeps them equal). The control removes as many **random** directions of the centred digit-logit
space (orthogonal to the all-ones pattern, which no logit difference sees): :func:`random_patterns`.

**The spectrum** (:func:`periodic_share`): the share of a centred ten-vector's power at periods 10, 5, 2 (an
isotropic vector has 5/9 of it there). **The probe** (:func:`residue_probe`): ridge classification of ``x mod T``
from a layer's residual stream, trained on some values of ``x`` and tested on others, Cohen's kappa against a
null that permutes the residues over the values (Fu et al. 2026's selective test).
"""

from __future__ import annotations

import numpy as np
import torch

from arithmech.core.models import module, weight

PERIODS = (10, 5, 2)
ISOTROPIC_SHARE = 5 / 9  # periodic power share of a random centred ten-vector: (2 + 2 + 1) of 9 dimensions


def digit_basis(model, arch, digits: list[int]) -> torch.Tensor:
    """``(10, d)`` ``B``: the digit rows of ``W_U`` times the final norm's gain."""
    w_u = weight(module(model, arch, "unembed"))[digits].float()
    gain = getattr(module(model, arch, "final_norm"), "weight", None)
    return w_u * (gain.float() if isinstance(gain, torch.Tensor) else 1.0)


def fourier_patterns(periods=PERIODS) -> torch.Tensor:
    """``(10, m)`` the digit patterns of ``periods``: cosine and sine of ``2 pi k j / 10`` (cosine only at period 2),
    unit length."""
    j = torch.arange(10, dtype=torch.float64)
    cols = []
    for T in periods:
        k = 10 // T
        cols.append(torch.cos(2 * torch.pi * k * j / 10))
        if T != 2:
            cols.append(torch.sin(2 * torch.pi * k * j / 10))
    f = torch.stack(cols, 1)
    return (f / f.norm(dim=0)).float()


def centred_basis() -> torch.Tensor:
    """``(10, 9)`` an orthonormal basis of the digit patterns orthogonal to all-ones (what a logit difference sees)."""
    q, _ = torch.linalg.qr(torch.eye(10, dtype=torch.float64) - 0.1)
    return q[:, :9].float()


def random_patterns(m: int, generator: torch.Generator) -> torch.Tensor:
    """``(10, m)`` ``m`` random orthonormal patterns of the centred digit space."""
    c = centred_basis()
    q, _ = torch.linalg.qr(c @ torch.randn(9, m, generator=generator))
    return q


def removal_basis(b: torch.Tensor, patterns: torch.Tensor) -> torch.Tensor:
    """``(d, r)`` an orthonormal basis of the row space of ``M = patterns^T B``: the residual directions that
    write those digit patterns."""
    u, s, _ = torch.linalg.svd((patterns.T.double() @ b.double()).T, full_matrices=False)
    return u[:, s > s.max() * 1e-6].float()


def remove(x: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``x`` (``(..., d)``) without its component in the span of ``q``'s columns (orthonormal)."""
    q = q.to(x.dtype).to(x.device)
    return x - (x @ q) @ q.T


def literal_filter(x: torch.Tensor, b: torch.Tensor, patterns: torch.Tensor) -> torch.Tensor:
    """Zhou's filter written out: ``x - pinv(M) M x`` with ``M = patterns^T B`` (float64)."""
    m = patterns.T.double() @ b.double()
    return (x.double() - (torch.linalg.pinv(m) @ m @ x.double().T).T).to(x.dtype)


def periodic_share(z: np.ndarray) -> float:
    """The share of power at periods 10, 5 and 2 in the rows of ``z`` ``(n, 10)`` (each centred), pooled."""
    z = np.atleast_2d(np.asarray(z, dtype=float))
    p = np.abs(np.fft.rfft(z - z.mean(1, keepdims=True), axis=1)) ** 2  # k = 0..5
    power = p * np.array([0, 2, 2, 2, 2, 1.0])  # Parseval: k = 1..4 stand for two real dimensions, k = 5 for one
    return float(power[:, [1, 2, 5]].sum() / max(power.sum(), 1e-30))


def kappa(y: np.ndarray, pred: np.ndarray, n_classes: int) -> float:
    """Cohen's kappa of predictions ``pred`` against labels ``y`` (0..n_classes-1)."""
    if len(y) == 0:
        return float("nan")
    po = float((y == pred).mean())
    pe = float(sum((y == c).mean() * (pred == c).mean() for c in range(n_classes)))
    return 0.0 if pe >= 1 else (po - pe) / (1 - pe)


def value_folds(values: np.ndarray, T: int, seed: int, k: int = 3) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train values, test values)`` per fold: the distinct values dealt round-robin after a seeded shuffle; a
    test value whose residue no training value has is dropped (its class was never seen)."""
    v = np.random.default_rng(seed).permutation(np.unique(values))
    out = []
    for f in range(k):
        test, train = v[f::k], np.setdiff1d(v, v[f::k])
        test = test[np.isin(test % T, train % T)]
        if len(test):
            out.append((train, test))
    return out


def residue_probe(x: np.ndarray, values: np.ndarray, T: int, seed: int, n_perm: int, lam: float = 0.1) -> dict:
    """Ridge probe of ``values mod T`` from ``x`` ``(n, L, d)`` at every layer, tested on held-out values
    (:func:`value_folds`). Returns ``kappa`` (L,), ``null`` (n_perm,) the maximum over layers of each permutation's
    kappa (the residues permuted over the distinct values), ``testable`` and the held-out values."""
    folds = value_folds(values, T, seed)
    if not folds:
        return {"testable": False, "kappa": [], "null": [], "heldout_values": []}
    uniq = np.unique(values)
    rng = np.random.default_rng(seed + 7)
    maps = [dict(zip(uniq, uniq % T))] + [dict(zip(uniq, rng.permutation(uniq % T))) for _ in range(n_perm)]
    labels = np.stack([np.array([m[v] for v in values]) for m in maps])  # (1 + n_perm, n)
    n, L, _ = x.shape
    scores = np.zeros((1 + n_perm, L))
    for layer in range(L):
        preds = np.full((1 + n_perm, n), -1)
        for train_v, test_v in folds:
            tr, te = np.isin(values, train_v), np.isin(values, test_v)
            xt = x[tr, layer]
            mu, sd = xt.mean(0), xt.std(0) + 1e-6
            xt, xe = (xt - mu) / sd, (x[te, layer] - mu) / sd
            a = np.linalg.solve(xt.T @ xt + lam * tr.sum() * np.eye(xt.shape[1]), xt.T)  # (d, n_train)
            onehot = np.eye(T)[labels[:, tr]]  # (1 + n_perm, n_train, T)
            preds[:, te] = np.matmul(xe @ a, onehot).argmax(-1)  # the hat matrix once, every labelling through it
        held = preds[0] >= 0
        scores[:, layer] = [kappa(labels[p, held], preds[p, held], T) for p in range(1 + n_perm)]
    return {
        "testable": True,
        "kappa": scores[0].tolist(),
        "null": scores[1:].max(1).tolist(),
        "heldout_values": sorted({int(v) for _, t in folds for v in t}),
    }


def digit_frequencies(tokens: list[int], digits: list[int]) -> np.ndarray:
    """``(10,)`` how often each digit token occurs in ``tokens`` (counts)."""
    where = {d: i for i, d in enumerate(digits)}
    out = np.zeros(10)
    for t in tokens:
        if t in where:
            out[where[t]] += 1
    return out
