"""Regret of an online run against the best k-sparse linear predictor in hindsight (Ito et al. 2017, eq. (1)).

R_T(w) = sum_t (ŷ_t - y_t)² - sum_t (w'x_t - y_t)², maximised over k-sparse w (the paper also asks ||w|| <= 1:
pass ``radius``). The comparator is found by exhaustive search over the C(d, k) supports — meant for the small d
of the paper's synthetic experiments — with the Gram matrix of the rounds played computed once.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations, islice

import numpy as np

from budgetlab.contract.sessions import Split
from budgetlab.datasets.base import Dataset, stream_order

_SUPPORT_CHUNK = 4096
_BISECTION_STEPS = 100


@dataclass(frozen=True)
class SparseFit:
    """The best k-sparse predictor in hindsight and its cumulative squared loss."""

    loss: float
    weights: np.ndarray
    support: tuple[int, ...]


def cumulative_loss(predictions: np.ndarray, y: np.ndarray) -> float:
    return float(np.sum((np.asarray(predictions, dtype=np.float64) - np.asarray(y, dtype=np.float64)) ** 2))


def _fit_supports(
    gram: np.ndarray, moment: np.ndarray, energy: float, supports: np.ndarray, radius: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """Losses and weights of min ||X_S w - y||² (s.t. ||w|| <= radius) for a stack of supports S."""
    A = gram[supports[:, :, None], supports[:, None, :]]
    b = moment[supports]
    eigenvalues, Q = np.linalg.eigh(A)
    beta = np.einsum("nji,nj->ni", Q, b)
    tol = max(float(eigenvalues.max(initial=0.0)), 1.0) * 1e-12
    usable = eigenvalues > tol
    # Minimum-norm least squares; directions of a singular Gram matrix carry no loss.
    coords = np.where(usable, beta / np.where(usable, eigenvalues, 1.0), 0.0)
    if radius is not None:
        # Trust-region case: w(μ) = (A + μI)^{-1} b with ||w(μ)|| = radius, μ found by bisection (norm decreases in μ).
        outside = np.linalg.norm(coords, axis=1) > radius
        if outside.any():
            lam, bet = eigenvalues[outside], beta[outside]
            low = np.zeros(len(lam))
            high = np.linalg.norm(bet, axis=1) / radius
            for _ in range(_BISECTION_STEPS):
                mid = (low + high) / 2
                too_long = np.linalg.norm(bet / (np.maximum(lam, 0.0) + mid[:, None]), axis=1) > radius
                low, high = np.where(too_long, mid, low), np.where(too_long, high, mid)
            coords[outside] = bet / (np.maximum(lam, 0.0) + high[:, None])
    weights = np.einsum("nij,nj->ni", Q, coords)
    losses = np.einsum("ni,nij,nj->n", weights, A, weights) - 2 * np.einsum("ni,ni->n", weights, b) + energy
    return np.maximum(losses, 0.0), weights


def best_sparse(X: np.ndarray, y: np.ndarray, k: int, radius: float | None = None) -> SparseFit:
    """The k-sparse w (||w|| <= radius if given) minimising sum_t (w'x_t - y_t)², by exhaustive search."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    d = X.shape[1]
    size = min(k, d)
    energy = float(y @ y)
    if size <= 0:
        return SparseFit(loss=energy, weights=np.zeros(d), support=())
    gram, moment = X.T @ X, X.T @ y
    best = SparseFit(loss=np.inf, weights=np.zeros(d), support=())
    candidates = combinations(range(d), size)
    while chunk := list(islice(candidates, _SUPPORT_CHUNK)):
        supports = np.array(chunk, dtype=np.int64)
        losses, weights = _fit_supports(gram, moment, energy, supports, radius)
        i = int(np.argmin(losses))
        if losses[i] < best.loss:
            w = np.zeros(d)
            w[supports[i]] = weights[i]
            best = SparseFit(loss=float(losses[i]), weights=w, support=tuple(chunk[i]))
    return best


def regret(loss: float, X: np.ndarray, y: np.ndarray, k: int, radius: float | None = None) -> float:
    """R_T = ``loss`` (the learner's cumulative squared loss on the rounds (X, y)) minus the best k-sparse loss."""
    return loss - best_sparse(X, y, k, radius).loss


def stream_arrays(dataset: Dataset, split: Split, seed: int, rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of the first ``rounds`` examples in the order a stream session with ``seed`` issues them."""
    order = stream_order(dataset.n(split), seed)[:rounds]
    d = dataset.d
    X = dataset.values(split, np.repeat(order, d), np.tile(np.arange(d), len(order))).reshape(len(order), d)
    return X, dataset.labels(split, order)
