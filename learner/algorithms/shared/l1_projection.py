"""Euclidean projection onto the L1 ball (Duchi, Shalev-Shwartz, Singer, Chandra 2008, Fig. 1)."""

from __future__ import annotations

import numpy as np


def project_l1_ball(v: np.ndarray, radius: float) -> np.ndarray:
    """argmin_{||u||_1 <= radius} ||u - v||_2, by sorting the non-zero magnitudes (O(nnz log nnz)).

    Zero entries of ``v`` stay zero, so only the non-zeros are sorted: a sparse iterate projects cheaply.
    """
    if radius <= 0:
        return np.zeros_like(v)
    magnitude = np.abs(v)
    if magnitude.sum() <= radius:
        return v.copy()
    nonzero = np.flatnonzero(magnitude)
    u = np.sort(magnitude[nonzero])[::-1]
    cumulative = np.cumsum(u)
    ranks = np.arange(1, u.size + 1)
    rho = np.flatnonzero(u * ranks > cumulative - radius)[-1]
    threshold = (cumulative[rho] - radius) / (rho + 1)
    projected = np.zeros_like(v)
    projected[nonzero] = np.sign(v[nonzero]) * np.maximum(magnitude[nonzero] - threshold, 0.0)
    return projected
