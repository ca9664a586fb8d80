"""A neuron's operand-grid map, classified two ways with as many parameters: heuristic patterns and periodic features.

A map is a neuron's mean END activation at each cell ``(a, b)`` of the grid (over the templates). Each family is a
set of candidate features ``f(a, b)``; a fit is ``act ~ b0 + b1 * f`` (two parameters, one discrete choice), the
candidate chosen on the **fit cells** (highest R^2 there) and scored on the **held-out cells** (R^2 about their own
mean, :func:`fit_family`):

* **heuristics** (Nikankin et al. 2025) — indicators of: an operand in a range ``[lo, hi]`` (``a`` or ``b``), an
  operand's residue mod ``m`` (``m`` 2-5), the result's residue mod ``m`` (``m`` 2, 5, 10; mod 10 is the last
  digit), the result in a range, identical operands;
* **periodic** (Zhou et al. 2024; Kantamneni & Tegmark 2025) — ``cos(2 pi (x - phi) / T)`` with ``x`` one of ``a``,
  ``b``, ``a + b``, ``T`` in 2, 5, 10 and a whole phase ``phi`` in ``0..T-1``.

The families overlap on purpose where the accounts do: "operand mod 2" is the period-2 cosine, "result mod 10 = r"
a period-10 pattern. Ranges and identical operands are not periodic; that is where the two can disagree.

The null is a **permuted grid**: the same map with its cells shuffled (seeded), classified by the same procedure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arithmech.accounts.rules import R2_MIN


@dataclass(frozen=True)
class Family:
    """Candidate features: ``names`` (k,), ``kinds`` (k,) their class, ``features`` (cells, k)."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    features: np.ndarray


def cells(operands) -> np.ndarray:
    """``(cells, 2)`` the grid's ``(a, b)``, row by row."""
    return np.array([(a, b) for a in operands for b in operands])


def heuristic_family(ab: np.ndarray) -> Family:
    """The heuristic indicators on the grid ``ab`` (module docstring); constant ones are left out."""
    a, b = ab[:, 0], ab[:, 1]
    s = a + b
    names, kinds, cols = [], [], []

    def add(name: str, kind: str, f: np.ndarray) -> None:
        if f.min() != f.max():
            names.append(name)
            kinds.append(kind)
            cols.append(f.astype(float))

    for x, xn in ((a, "a"), (b, "b")):
        for lo in range(int(x.min()), int(x.max()) + 1):
            for hi in range(lo, int(x.max()) + 1):
                add(f"{xn} in [{lo}, {hi}]", "operand range", (x >= lo) & (x <= hi))
        for m in (2, 3, 4, 5):
            for r in range(m):
                add(f"{xn} = {r} mod {m}", "operand mod m", x % m == r)
    for m in (2, 5, 10):
        for r in range(m):
            add(f"a+b = {r} mod {m}", "result mod 10 (last digit)" if m == 10 else "result mod m", s % m == r)
    for lo in range(int(s.min()), int(s.max()) + 1):
        for hi in range(lo, int(s.max()) + 1):
            add(f"a+b in [{lo}, {hi}]", "result range", (s >= lo) & (s <= hi))
    add("a = b", "identical operands", a == b)
    return Family(tuple(names), tuple(kinds), np.stack(cols, 1))


def periodic_family(ab: np.ndarray) -> Family:
    """The periodic features on the grid ``ab`` (module docstring)."""
    names, kinds, cols = [], [], []
    for x, xn in ((ab[:, 0], "a"), (ab[:, 1], "b"), (ab.sum(1), "a+b")):
        for T in (2, 5, 10):
            for phi in range(1 if T == 2 else T):
                names.append(f"cos 2pi({xn} - {phi})/{T}")
                kinds.append(f"period {T}")
                cols.append(np.cos(2 * np.pi * (x - phi) / T))
    return Family(tuple(names), tuple(kinds), np.stack(cols, 1))


@dataclass(frozen=True)
class Fit:
    """Per map: ``best`` (index of the chosen candidate), ``r2_fit`` and ``r2_heldout``, ``slope`` (b1)."""

    best: np.ndarray
    r2_fit: np.ndarray
    r2_heldout: np.ndarray
    slope: np.ndarray


def fit_family(maps: np.ndarray, family: Family, fit: np.ndarray, test: np.ndarray) -> Fit:
    """Fit each row of ``maps`` ``(n, cells)`` with the family's best candidate on cells ``fit`` (indices) and
    score it on ``test``: ``R^2_test = 1 - SSE / SST`` about the held-out cells' own mean (below 0 when the fit
    predicts worse than that mean)."""
    y, f = maps[:, fit], family.features[fit]
    yc = y - y.mean(1, keepdims=True)
    fc = f - f.mean(0, keepdims=True)
    ff = (fc * fc).sum(0)
    ok = ff > 1e-12
    cov = yc @ fc  # (n, k)
    yy = (yc * yc).sum(1, keepdims=True)
    r2 = np.where(ok, cov**2 / np.where(ok, ff, 1) / np.maximum(yy, 1e-30), -np.inf)
    best = r2.argmax(1)
    rows = np.arange(len(maps))
    slope = cov[rows, best] / np.where(ok, ff, 1)[best]
    pred = y.mean(1, keepdims=True) + slope[:, None] * (family.features[test][:, best].T - f.mean(0)[best][:, None])
    yt = maps[:, test]
    sst = ((yt - yt.mean(1, keepdims=True)) ** 2).sum(1)
    r2_test = 1 - ((yt - pred) ** 2).sum(1) / np.maximum(sst, 1e-30)
    return Fit(best, r2[rows, best], r2_test, slope)


def split_cells(n_cells: int, seed: int, heldout: float = 1 / 3) -> tuple[np.ndarray, np.ndarray]:
    """A seeded split of the grid's cells: ``(fit, test)`` indices, ``heldout`` of them held out."""
    perm = np.random.default_rng(seed).permutation(n_cells)
    k = int(round(n_cells * heldout))
    return np.sort(perm[k:]), np.sort(perm[:k])


def permuted(maps: np.ndarray, n_perm: int, seed: int) -> np.ndarray:
    """``(n_perm, n, cells)``: each map with its cells shuffled, ``n_perm`` seeded times (the permuted-grid null)."""
    rng = np.random.default_rng(seed)
    return np.stack(
        [
            np.take_along_axis(maps, rng.permuted(np.tile(np.arange(maps.shape[1]), (len(maps), 1)), axis=1), 1)
            for _ in range(n_perm)
        ]
    )


@dataclass(frozen=True)
class Classified:
    """Both families' fits of the maps, the permuted-grid rates, and each map's class: ``heuristic`` and
    ``periodic`` (:class:`Fit`), ``null_heuristic`` / ``null_periodic`` (rates of permuted maps reaching
    :data:`~arithmech.accounts.rules.R2_MIN`), ``null_q95`` (n,) each map's 95th percentile of its permuted
    heuristic R^2."""

    heuristic: Fit
    periodic: Fit
    null_heuristic: float
    null_periodic: float
    null_q95: np.ndarray
    h_family: Family
    p_family: Family

    def classified(self) -> np.ndarray:
        """(n,) bool: the best heuristic's held-out R^2 reaches :data:`~arithmech.accounts.rules.R2_MIN`."""
        return self.heuristic.r2_heldout >= R2_MIN

    def kind(self, i: int) -> str:
        """Map ``i``'s heuristic class, or ``unclassified``."""
        return self.h_family.kinds[self.heuristic.best[i]] if self.classified()[i] else "unclassified"

    def periodic_wins(self) -> np.ndarray:
        """Over the maps either family fits (R^2 >= R2_MIN): whether the periodic fit's held-out R^2 is higher."""
        either = (self.heuristic.r2_heldout >= R2_MIN) | (self.periodic.r2_heldout >= R2_MIN)
        return (self.periodic.r2_heldout > self.heuristic.r2_heldout)[either]


def classify(maps: np.ndarray, operands, seed: int, n_perm: int) -> Classified:
    """Both families' held-out fits of ``maps`` ``(n, cells)`` on the grid of ``operands``, with the permuted-grid
    null (``n_perm`` shuffles per map)."""
    ab = cells(operands)
    fit, test = split_cells(len(ab), seed)
    hf, pf = heuristic_family(ab), periodic_family(ab)
    h, p = fit_family(maps, hf, fit, test), fit_family(maps, pf, fit, test)
    perm = permuted(maps, n_perm, seed + 1)
    nh = np.stack([fit_family(m, hf, fit, test).r2_heldout for m in perm])  # (n_perm, n)
    npr = np.stack([fit_family(m, pf, fit, test).r2_heldout for m in perm])
    return Classified(
        h, p, float((nh >= R2_MIN).mean()), float((npr >= R2_MIN).mean()), np.quantile(nh, 0.95, axis=0), hf, pf
    )


def bernoulli_pattern(ab: np.ndarray, family: Family, index: int, slope: float) -> np.ndarray:
    """(cells,) bool: where candidate ``index`` predicts the neuron's high state (its indicator on the side of the
    slope's sign): the cells a heuristic neuron is *associated* with."""
    f = family.features[:, index]
    return (f > f.mean()) if slope >= 0 else (f < f.mean())
