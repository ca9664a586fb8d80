"""The helix account's fits (Kantamneni & Tegmark 2025): the operand's representation fitted with a helix in ``a``,
and the controls it is patched in against.

A layer's residual stream at the operand's last token over the two-digit grid (``X``, one row a cell) is fitted
with a basis in ``a`` (:func:`helix_basis`: ``a`` and ``cos / sin(2 pi a / T)`` for ``T`` in 2, 5, 10, 100; the
sine of period 2 is zero on integers, so 8 columns and an intercept, 9 parameters), by least squares after
projecting ``X`` on its first :data:`PCA_DIMS` principal components, as the paper does. Each fit gives a
reconstruction of a cell's representation from its ``a`` alone (:class:`Fit`), which is patched in its place.
The controls (:func:`reconstructions`), each of the same dimension:

* **PCA**: the cell's own representation projected on the first 8 principal components (plus the mean);
* **shuffled helix**: the helix fitted on ``a`` permuted over its distinct values, evaluated at the true ``a``;
* **polynomial**: a degree-8 polynomial in ``a`` (Legendre, rescaled to [-1, 1]), the non-periodic fit of as many
  parameters (a line inside the helix fits a linear representation as well as the helix does);
* **ones digit** (the digit lookup, rules version 3): the mean representation of the cells with the same last digit
  of ``a`` (10 values): under a digit tokenizer the operand's last token *is* its ones digit, so a period-10 pattern
  comes with the token, as the digit-token frequencies carry one (Fu et al. 2026). D1 scores the answer's last digit
  with ``a'`` keeping the carried digits, so what it sees of ``a`` is mostly ``a mod 10``, which this lookup holds
  in full; the helix passes only where it also beats the lookup, i.e. where its ``a`` and period-100 terms carry
  something the last-digit logit difference reads.

:func:`patch_numbers` turns the patched runs' logit differences into the numbers rule D1 reads: per method, the
share of the full patch's effect it recovers, and the paired differences helix minus each control averaged over
the layers where the full patch moves the logit difference, with cluster-bootstrap intervals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arithmech.core.stats import bootstrap_mean_intervals, wilson_interval

HELIX_PERIODS = (2, 5, 10, 100)
PCA_DIMS = 100  # principal components the fit is made in (the paper's)
LO, HI = 10, 99  # the two-digit operands
CONTROLS = ("pca", "shuffled", "poly", "digit")  # rule D1's controls, in its order (digit: rules version 3)
METHODS = ("full", "helix", *CONTROLS)  # what is patched in


def helix_basis(a, periods=HELIX_PERIODS) -> np.ndarray:
    """``(n, m)`` the helix's columns at ``a``: ``a / 100``, then ``cos`` and ``sin`` of ``2 pi a / T`` for each
    period (the sine left out at ``T = 2``, where it is zero on integers)."""
    a = np.asarray(a, dtype=float)
    cols = [a / 100]
    for T in periods:
        cols.append(np.cos(2 * np.pi * a / T))
        if T != 2:
            cols.append(np.sin(2 * np.pi * a / T))
    return np.stack(cols, 1)


def poly_basis(a, degree: int) -> np.ndarray:
    """``(n, degree)`` Legendre polynomials 1..degree of ``a`` rescaled from 10..99 to [-1, 1]."""
    x = 2 * (np.asarray(a, dtype=float) - LO) / (HI - LO) - 1
    return np.polynomial.legendre.legvander(x, degree)[:, 1:]


@dataclass(frozen=True)
class Fit:
    """A least-squares fit ``X ~ mean + (B - b_mean) @ coef``: ``coef`` ``(m, d)`` lies in the span of ``X``'s
    first principal components; :meth:`predict` evaluates it at a basis ``B`` ``(n, m)``."""

    mean: np.ndarray
    b_mean: np.ndarray
    coef: np.ndarray

    def predict(self, b: np.ndarray) -> np.ndarray:
        return self.mean + (b - self.b_mean) @ self.coef


def principal(x: np.ndarray, k: int) -> np.ndarray:
    """``(k', d)`` the first ``k`` principal directions of the rows of ``x`` (fewer when ``x`` has lower rank)."""
    _, s, vt = np.linalg.svd(x - x.mean(0), full_matrices=False)
    return vt[: min(k, int((s > s.max() * 1e-9).sum()) if s.size and s.max() > 0 else 0)]


def fit_basis(x: np.ndarray, b: np.ndarray, pca_dims: int = PCA_DIMS) -> Fit:
    """The fit of the rows of ``x`` ``(n, d)`` on the basis ``b`` ``(n, m)`` made in ``x``'s first ``pca_dims``
    principal components."""
    mean, b_mean = x.mean(0), b.mean(0)
    comps = principal(x, pca_dims)
    coef, *_ = np.linalg.lstsq(b - b_mean, (x - mean) @ comps.T, rcond=None)
    return Fit(mean, b_mean, coef @ comps)


def shuffled(a: np.ndarray, seed: int) -> np.ndarray:
    """``a`` with its distinct values permuted (every cell of one value gets the same other value)."""
    uniq = np.unique(a)
    perm = dict(zip(uniq.tolist(), np.random.default_rng(seed).permutation(uniq).tolist()))
    return np.array([perm[int(v)] for v in a])


def pca_patch(x: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """The representations of ``rows`` projected on the first ``k`` principal components of ``x``, mean added."""
    mean, comps = x.mean(0), principal(x, k)
    return mean + (x[rows] - mean) @ comps.T @ comps


def digit_patch(x: np.ndarray, a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The mean representation of the cells whose ``a`` has the same last digit, for each of ``rows``."""
    means = {d: x[a % 10 == d].mean(0) for d in np.unique(a % 10)}
    return np.stack([means[int(a[r] % 10)] for r in rows])


def reconstructions(x: np.ndarray, a: np.ndarray, rows: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """What each method patches in at ``rows`` (:data:`METHODS`), from the fits on every row of ``x``: ``full``
    (the row itself), ``helix``, ``pca``, ``shuffled``, ``poly`` and ``digit`` (module docstring)."""
    hb = helix_basis(a)
    m = hb.shape[1]
    helix = fit_basis(x, hb)
    shuf = fit_basis(x, helix_basis(shuffled(a, seed)))
    poly = fit_basis(x, poly_basis(a, m))
    return {
        "full": x[rows],
        "helix": helix.predict(hb[rows]),
        "pca": pca_patch(x, rows, m),
        "shuffled": shuf.predict(hb[rows]),
        "poly": poly.predict(poly_basis(a[rows], m)),
        "digit": digit_patch(x, a, rows),
    }


def explained(x: np.ndarray, recon: np.ndarray) -> float:
    """The share of ``x``'s variance around its mean that ``recon`` (one row each) reproduces: 1 - SSE / SST."""
    sst = float(((x - x.mean(0)) ** 2).sum())
    return 1.0 - float(((x - recon) ** 2).sum()) / max(sst, 1e-30)


def stratified_cells(n_cells: int, seed: int) -> list[tuple[int, int]]:
    """The two-digit cells ``(a, b)``: all 8,100 when ``n_cells`` is 0 or at least 8,100; else as equal a number
    of cells for every ``a`` as ``n_cells`` allows (the remainder to the first values of a seeded order), each
    ``a``'s ``b`` drawn without replacement from a seeded stream. Rows sorted."""
    values = list(range(LO, HI + 1))
    if n_cells <= 0 or n_cells >= len(values) ** 2:
        return [(a, b) for a in values for b in values]
    rng = np.random.default_rng(seed)
    per, extra = divmod(n_cells, len(values))
    bonus = set(rng.permutation(values)[:extra].tolist())
    out = []
    for a in values:
        k = per + (a in bonus)
        out += [(a, int(b)) for b in rng.permutation(values)[:k]]
    return sorted(out)


def partner(a: int, b: int, rng: np.random.Generator) -> int | None:
    """The counterfactual operand ``a'``: another two-digit value with ``a' + b`` keeping ``a + b``'s leading
    digits (the carried ones) and changing its last digit; one drawn by ``rng``, None where there is none."""
    lead = (a + b) // 10
    cands = [x for x in range(LO, HI + 1) if x != a and (x + b) // 10 == lead and (x + b) % 10 != (a + b) % 10]
    return int(rng.choice(cands)) if cands else None


def answered_numbers(correct: np.ndarray) -> dict:
    """How many cells the model answers (``correct``: bool per cell), the share and its Wilson interval."""
    n, k = len(correct), int(np.sum(correct))
    lo, hi = wilson_interval(k, n) if n else (0.0, 1.0)
    return {"cells": n, "answered": k, "share": (k / n if n else 0.0, lo, hi)}


def patch_numbers(ld: dict, clusters: list, floor: float, n_boot: int, seed: int) -> dict:
    """Rule D1's numbers from the patched runs: ``ld`` maps ``clean`` and ``corrupt`` to ``(n,)`` and each of
    :data:`METHODS` to ``(n, L)`` the logit difference of the clean answer digit, one column a studied layer.
    A layer counts when the full patch's mean effect (full minus corrupt) is at least ``floor`` times the clean
    logit difference; over the counted layers, per method its share of the full patch's effect, and per prompt
    the helix's logit difference minus each control's, averaged, with its interval over ``clusters``."""
    clean, corrupt = ld["clean"].float(), ld["corrupt"].float()
    full_effect = (ld["full"] - corrupt[:, None]).mean(0)
    live = (full_effect >= floor * clean.mean().abs()).nonzero().flatten().tolist()
    out: dict = {"live_layers": live, "full_effect": full_effect.tolist(), "ld_clean": float(clean.mean())}
    out["recovered"] = {  # None where the full patch does not raise the logit difference
        m: [float(x) if e > 0 else None for x, e in zip((ld[m] - corrupt[:, None]).mean(0) / full_effect, full_effect)]
        for m in METHODS
    }
    for c in CONTROLS:
        if not live:
            out[f"vs_{c}"] = None
            continue
        d = (ld["helix"][:, live] - ld[c][:, live]).mean(1).double()
        lo, hi = bootstrap_mean_intervals(d[:, None], n_boot, seed=seed, clusters=clusters)
        out[f"vs_{c}"] = (float(d.mean()), float(lo[0]), float(hi[0]))
    return out
