"""The hard thresholding operator H_s of Murata & Suzuki (2018), §2.1."""

from __future__ import annotations

import numpy as np


def hard_threshold(theta: np.ndarray, s: int) -> np.ndarray:
    """H_s(θ): the projection onto s-sparse vectors (keep the s entries of largest magnitude)."""
    if np.count_nonzero(theta) <= s:
        return theta.copy()
    keep = np.argpartition(np.abs(theta), -s)[-s:]
    thresholded = np.zeros_like(theta)
    thresholded[keep] = theta[keep]
    return thresholded


def support(theta: np.ndarray) -> np.ndarray:
    """supp(θ) as sorted indices."""
    return np.flatnonzero(theta)
