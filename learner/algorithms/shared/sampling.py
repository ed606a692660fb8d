"""Draws from a discrete distribution with replacement, as ``Generator.choice`` makes them, at a step's cost."""

from __future__ import annotations

import numpy as np


def draw_with_replacement(rng: np.random.Generator, p: np.ndarray, size: int) -> np.ndarray:
    """``rng.choice(len(p), size=size, replace=True, p=p)``: the same indices from the same random numbers (its
    inverse-CDF method: one uniform per draw, searched in the normalised cumulative sums), without its checks of
    ``p``, which cost several times the draw itself on a small d. ``p`` is a probability vector the caller built."""
    cdf = p.cumsum()
    cdf /= cdf[-1]
    return cdf.searchsorted(rng.random(size), side="right")
