"""A sum tree: sampling an index with probability proportional to non-negative weights that change
in a few places per step, in O(log d) per change and per draw instead of O(d).

Every node is the sum of its two children, recomputed from them (never patched by deltas), so the
total cannot drift however the weights move, and the tree is a function of its leaves alone: however
a change reaches the nodes above it, each node holds the same float, bit for bit, and so does every draw.

The nodes live in one numpy array, read and written one at a time through a memoryview (Python floats,
as cheap as a list's items), so that a step that changes many leaves can instead recompute every level
at once with one vectorised addition a level, which costs less than visiting its nodes one by one once
the changed leaves are more than a handful (``SumTree.set_many`` picks the cheaper of the two).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import cast

import numpy as np

# What recomputing a node costs, in the time of one element of a vectorised addition: a node visited in Python
# costs about 500 of them (an index, two reads, an addition, a write, a set's insertion), a level's numpy call
# about 1,000 (calibrated with benchmarks/overhead_bench.py's sum tree figures on d = 500 to 100,000).
_NODE_COST = 500
_LEVEL_COST = 1_000


class SumTree:
    """Complete binary tree whose leaves are the weights and whose root is their sum."""

    def __init__(self, weights: np.ndarray) -> None:
        n = int(weights.shape[0])
        self.n = n
        self.size = size = 1 << max(0, (n - 1).bit_length())
        self._a = np.zeros(2 * size)
        # One node at a time, as Python floats (a buffer of doubles: typeshed's memoryview says int).
        self._t = cast("memoryview[float]", self._a.data)
        self._leaves = self._a[size : size + n]
        # Each level's nodes and their left and right children, as views, from the leaves' parents up to the level of
        # 8 nodes: the 7 nodes above are recomputed one by one (``_recompute``), except in a tree of fewer leaves.
        self._levels: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        lo = size // 2
        while lo >= (8 if size >= 16 else 1):
            self._levels.append((self._a[lo : 2 * lo], self._a[2 * lo : 4 * lo : 2], self._a[2 * lo + 1 : 4 * lo : 2]))
            lo //= 2
        self._rebuild_from = _rebuild_threshold(size)
        self.rebuild(weights)

    def rebuild(self, weights: np.ndarray) -> None:
        """Reset every leaf at once (O(d), vectorised)."""
        self._leaves[:] = weights
        self._recompute()

    def _recompute(self) -> None:
        """Every node from its children, level by level from the bottom: one addition a level (the top 7 nodes, one
        at a time)."""
        add = np.add
        for nodes, left, right in self._levels:
            add(left, right, out=nodes)
        if self.size >= 16:  # the top 7 nodes one at a time: 0.7 us less than three levels' calls of NumPy
            t = self._t
            t[7] = t[14] + t[15]
            t[6] = t[12] + t[13]
            t[5] = t[10] + t[11]
            t[4] = t[8] + t[9]
            t[3] = t[6] + t[7]
            t[2] = t[4] + t[5]
            t[1] = t[2] + t[3]

    def nodes(self) -> list[float]:
        """Every node, root first (index 0 unused): what two trees over the same leaves must share, bit for bit."""
        values: list[float] = self._a.tolist()
        return values

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

    def set_many(self, weights: Mapping[int, float]) -> None:
        """``set`` of several leaves: the same tree, each node above them recomputed once, level by level (or every
        level at once, when that is cheaper)."""
        if len(weights) >= self._rebuild_from:
            self.set_array(np.fromiter(weights.keys(), dtype=np.int64, count=len(weights)),
                           np.fromiter(weights.values(), dtype=np.float64, count=len(weights)))
            return
        t = self._t
        size = self.size
        for i, weight in weights.items():
            t[size + i] = weight
        parents = {(size + i) >> 1 for i in weights}
        while parents and size > 1:  # every leaf is at the same depth, so each set is one level of nodes
            for j in parents:
                t[j] = t[2 * j] + t[2 * j + 1]
            parents = {j >> 1 for j in parents}
            parents.discard(0)

    def set_array(self, at: np.ndarray, weights: np.ndarray) -> None:
        """``set_many`` of the distinct leaves ``at`` (an index array) to ``weights`` (an array of floats)."""
        if len(at) >= self._rebuild_from:
            self._leaves[at] = weights
            self._recompute()
        else:
            self.set_many(dict(zip(at.tolist(), np.asarray(weights, dtype=np.float64).tolist(), strict=True)))

    def find(self, mass: float) -> int:
        """The leaf where the cumulative weight first exceeds ``mass`` (0 <= mass < total).

        Never returns a zero-weight leaf: rounding can push ``mass`` past a subtree's sum, so an
        empty sibling is never entered.
        """
        t = self._t
        size = self.size
        j = 1
        while j < size:
            j += j  # the left child
            left = t[j]
            if not (mass < left or t[j + 1] <= 0.0):
                mass -= left
                j += 1
        return j - size

    def sample(self, uniform: float) -> int:
        """Index drawn with probability weight / total, from one U[0, 1) number."""
        return self.find(uniform * self._t[1])


def _rebuild_threshold(size: int) -> int:
    """The fewest changed leaves for which recomputing every level costs less than visiting the nodes above them
    (m leaves reach at most min(m, 2^l) nodes of the level of 2^l nodes)."""
    depth = size.bit_length() - 1
    whole = _LEVEL_COST * depth + size
    m = 1
    while m < size and _NODE_COST * sum(min(m, 1 << level) for level in range(depth)) < whole:
        m += 1 if m < 16 else m // 4
    return m


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

    def set_many(self, indices: Iterable[int], weights: Iterable[float]) -> None:
        """``set`` of each index to its weight, in order: the same additions in the same order, so the same total bit
        for bit, in one call (an iterate moves tens of coordinates a step)."""
        w = self._w
        n = len(w)
        s, compensation, changes = self._sum, self._compensation, self._changes
        for i, weight in zip(indices, weights, strict=True):
            delta = weight - w[i]
            w[i] = weight
            t = s + delta
            if abs(s) >= abs(delta):
                compensation += (s - t) + delta
            else:
                compensation += (delta - t) + s
            s = t
            changes += 1
            if changes >= n:
                s, compensation, changes = math.fsum(w), 0.0, 0
        self._sum, self._compensation, self._changes = s, compensation, changes
