"""Rows seen so far by a full-information learner, kept in one growing matrix (amortised doubling)."""

from __future__ import annotations

from functools import cache

import numpy as np

from learner.algorithms.base import Observed, PaidRow


def dense_row(observed: Observed, d: int) -> np.ndarray:
    """The full attribute vector from a full-information observation (every attribute must be present)."""
    if len(observed) != d:
        raise ValueError(f"a full-information learner needs all {d} attributes, got {len(observed)}")
    if isinstance(observed, PaidRow) and observed.attributes == in_order(d):  # the step's values, already in order
        return np.array(observed.attribute_values, dtype=float)
    values = np.fromiter(observed.values(), dtype=float, count=d)
    if list(observed) == in_order(d):  # as the runner builds it from select()'s range(d): no scatter needed
        return values
    row = np.empty(d)
    row[np.fromiter(observed.keys(), dtype=np.int64, count=d)] = values
    return row


@cache
def in_order(d: int) -> list[int]:
    """0..d-1, the attributes of a full observation in the order asked for."""
    return list(range(d))


class RowBuffer:
    """X (n x d) and y (n) of the examples seen so far, without a Python object per row."""

    def __init__(self, d: int, capacity: int = 256) -> None:
        self._X = np.empty((capacity, d))
        self._y = np.empty(capacity)
        self.n = 0

    def append(self, x: np.ndarray, y: float) -> None:
        if self.n == len(self._y):
            self._X = np.concatenate([self._X, np.empty_like(self._X)])
            self._y = np.concatenate([self._y, np.empty_like(self._y)])
        self._X[self.n] = x
        self._y[self.n] = y
        self.n += 1

    @property
    def X(self) -> np.ndarray:
        return self._X[: self.n]

    @property
    def y(self) -> np.ndarray:
        return self._y[: self.n]
