"""A sum tree: sampling an index with probability proportional to non-negative weights that change
in a few places per step, in O(log d) per change and per draw instead of O(d).

The nodes live in a plain Python list because the algorithms touch a handful of leaves per example
and list indexing is several times cheaper than numpy scalar access. Parents are recomputed from
their children (never patched by deltas), so the total cannot drift however the weights move.
"""

from __future__ import annotations

import math

import numpy as np


class SumTree:
    """Complete binary tree whose leaves are the weights and whose root is their sum."""

    def __init__(self, weights: np.ndarray) -> None:
        n = int(weights.shape[0])
        self.n = n
        self.size = 1 << max(0, (n - 1).bit_length())
        self.rebuild(weights)

    def rebuild(self, weights: np.ndarray) -> None:
        """Reset every leaf at once (O(d), vectorised)."""
        size = self.size
        tree = np.zeros(2 * size)
        tree[size : size + self.n] = weights
        lo = size // 2
        while lo >= 1:
            tree[lo : 2 * lo] = tree[2 * lo : 4 * lo : 2] + tree[2 * lo + 1 : 4 * lo : 2]
            lo //= 2
        self._t: list[float] = tree.tolist()

    @property
    def total(self) -> float:
        return self._t[1]

    def leaf(self, i: int) -> float:
        return self._t[self.size + i]

    def set(self, i: int, weight: float) -> None:
        t = self._t
        j = self.size + i
        t[j] = weight
        j >>= 1
        while j:
            t[j] = t[2 * j] + t[2 * j + 1]
            j >>= 1

    def set_many(self, weights: dict[int, float]) -> None:
        """``set`` of several leaves: the same tree, each node above them recomputed once, level by level."""
        t = self._t
        size = self.size
        parents = set()
        for i, weight in weights.items():
            j = size + i
            t[j] = weight
            parents.add(j >> 1)
        while parents and size > 1:  # every leaf is at the same depth, so each set is one level of nodes
            above = set()
            for j in parents:
                t[j] = t[2 * j] + t[2 * j + 1]
                above.add(j >> 1)
            above.discard(0)
            parents = above

    def find(self, mass: float) -> int:
        """The leaf where the cumulative weight first exceeds ``mass`` (0 <= mass < total).

        Never returns a zero-weight leaf: rounding can push ``mass`` past a subtree's sum, so an
        empty sibling is never entered.
        """
        t = self._t
        size = self.size
        j = 1
        while j < size:
            left = t[2 * j]
            if mass < left or t[2 * j + 1] <= 0.0:
                j = 2 * j
            else:
                mass -= left
                j = 2 * j + 1
        return j - size

    def sample(self, uniform: float) -> int:
        """Index drawn with probability weight / total, from one U[0, 1) number."""
        return self.find(uniform * self._t[1])


class RunningTotal:
    """The sum of weights that change in a few places per step, when no sampling is needed: O(1) per change.

    Changes are added as Neumaier-compensated deltas, and the sum is recomputed exactly (math.fsum) after
    every n changes, so its error stays within a few ulps of n weights however long the run (amortised O(1)).
    """

    def __init__(self, weights: np.ndarray) -> None:
        self.rebuild(weights)

    def rebuild(self, weights: np.ndarray) -> None:
        self._w: list[float] = np.asarray(weights, dtype=np.float64).tolist()
        self._sum = math.fsum(self._w)
        self._compensation = 0.0
        self._changes = 0

    @property
    def total(self) -> float:
        return self._sum + self._compensation

    def set(self, i: int, weight: float) -> None:
        w = self._w
        delta = weight - w[i]
        w[i] = weight
        s = self._sum
        t = s + delta
        if abs(s) >= abs(delta):
            self._compensation += (s - t) + delta
        else:
            self._compensation += (delta - t) + s
        self._sum = t
        self._changes += 1
        if self._changes >= len(w):
            self._sum, self._compensation, self._changes = math.fsum(w), 0.0, 0
