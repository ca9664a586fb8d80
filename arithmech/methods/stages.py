"""Answer-specific stages with intervals (App. C, Fig. 13–14): where the operands, then the answer, appear at END.

The paper reads two per-layer curves at END — the MLP inputs' cosine with the operands' unembedding rows, and the
MLP writes' cosine with the answer's — and places "start, inflection, end" on each
(:func:`arithmech.methods.mlp.breakpoints`). Two things make those curves hard to read on a small model:

* **a generic digit direction.** Every number token shares a direction in ``W_U``, so the write's cosine with the
  answer's row rises with its cosine with *any* digit's row. The answer-specific curve subtracts the matched
  baseline, the mean over the other number tokens written alike (``diff_C − diff_other``); the operand-specific
  curve subtracts the inputs' cosine with those other tokens (``(in_A + in_B) / 2 − in_other``);
* **no interval.** The knots of a mean curve move with the problems drawn. :func:`stage_intervals` resamples the
  *problem clusters* (an operation and an unordered operand pair, in any template: the unit identify resamples) with
  replacement, re-fits the knots of each resampled mean curve, and reports percentile intervals of each knot and of
  the inflections' difference, answer − operands.

:func:`knots` fits many curves at once (the least-squares projection for each knot triple is computed once), with the
tie rule of :func:`~arithmech.methods.mlp.breakpoints`, whose knots it equals on every curve.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

import numpy as np

CURVES = ("operands", "answer")


@functools.lru_cache(maxsize=8)
def _design(n_layers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(knot triples (T, 3) in layers, design matrices X (T, L, 5), projections M (T, 5, L))`` for ``n_layers``."""
    x = np.arange(n_layers) / (n_layers - 1)
    triples = np.array(list(itertools.combinations(range(1, n_layers - 1), 3)))
    k = triples / (n_layers - 1)
    X = np.concatenate(
        [
            np.broadcast_to(np.stack([np.ones(n_layers), x], -1), (len(k), n_layers, 2)),
            np.maximum(x[None, :, None] - k[:, None, :], 0),
        ],
        -1,
    )
    Xt = X.transpose(0, 2, 1)
    M = np.linalg.solve(Xt @ X, Xt)
    return triples, X, M


def knots(curves: np.ndarray, chunk: int = 64) -> np.ndarray:
    """Start, inflection and end layer of each row of ``curves`` (``(B, L)``, ``L >= 5``): the best knot triple of a
    continuous piecewise-linear least-squares fit, the first in lexicographic order within the tie tolerance of
    :func:`arithmech.methods.mlp.breakpoints`. Returns ``(B, 3)`` ints."""
    Y = np.atleast_2d(np.asarray(curves, dtype=float))
    if Y.shape[1] < 5:
        raise ValueError(f"knots needs curves over at least 5 layers, got {Y.shape[1]}")
    triples, X, M = _design(Y.shape[1])
    out = np.empty((len(Y), 3), dtype=int)
    for i in range(0, len(Y), chunk):
        y = Y[i : i + chunk]  # (b, L)
        beta = np.einsum("tkl,bl->tbk", M, y)  # (T, b, 5)
        sse = ((np.einsum("tlk,tbk->tbl", X, beta) - y[None]) ** 2).sum(-1)  # (T, b)
        tol = 1e-9 * np.maximum(1.0, (y**2).sum(-1))
        out[i : i + chunk] = triples[np.argmax(sse <= sse.min(0) + tol, axis=0)]
    return out


def specific_curves(x: np.ndarray, quantities: Sequence[str]) -> dict[str, np.ndarray]:
    """The per-sample answer- and operand-specific curves ``(n, L)`` from per-sample cosines ``x`` ``(n, L, Q)``
    whose last axis is ``quantities`` (it needs ``in_A``, ``in_B``, ``in_other``, ``diff_C``, ``diff_other``)."""
    q = {name: x[..., i] for i, name in enumerate(quantities)}
    return {"operands": (q["in_A"] + q["in_B"]) / 2 - q["in_other"], "answer": q["diff_C"] - q["diff_other"]}


def stage_intervals(
    curves: dict[str, np.ndarray], clusters: Sequence, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> dict:
    """Knots of each mean curve with percentile intervals over ``n_boot`` resamples of the problem ``clusters`` (one
    label per sample), and the interval of the inflections' difference, answer − operands. Returns
    ``{curve: {"knots", "lo", "hi"}, "difference": {"value", "lo", "hi"}, "clusters", "n_boot", "level"}``."""
    labels = list(clusters)
    groups = sorted(set(labels), key=repr)
    index = {g: i for i, g in enumerate(groups)}
    member = np.array([index[g] for g in labels])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(groups), size=(n_boot, len(groups)))
    weights = np.stack([np.bincount(d, minlength=len(groups))[member] for d in draws]).astype(float)  # (B, n)
    a = (1 - level) / 2
    out: dict = {"clusters": len(groups), "n_boot": n_boot, "level": level}
    inflections = {}
    for name in CURVES:
        y = curves[name]
        point = knots(y.mean(0)[None])[0]
        boot = knots((weights @ y) / weights.sum(1, keepdims=True))
        out[name] = {
            "knots": point.tolist(),
            "lo": np.quantile(boot, a, axis=0).tolist(),
            "hi": np.quantile(boot, 1 - a, axis=0).tolist(),
        }
        inflections[name] = (point[1], boot[:, 1])
    d_point = int(inflections["answer"][0] - inflections["operands"][0])
    d_boot = inflections["answer"][1] - inflections["operands"][1]
    out["difference"] = {"value": d_point, "lo": float(np.quantile(d_boot, a)), "hi": float(np.quantile(d_boot, 1 - a))}
    return out
