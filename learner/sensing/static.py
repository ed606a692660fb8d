"""``static``: the same attributes, in the same order, for every example, chosen on the training split by forward
selection (the static baseline of AFA benchmarks, e.g. AFABench, KDD 2025, and of Covert et al. 2023): at each step
the attribute whose addition most raises the model's fit to the training labels per unit of its cost (the mean log
posterior of the true class; for regression, minus the label's conditional variance)."""

from __future__ import annotations

import numpy as np

from learner.sensing.policy import ModelPolicy, best_affordable


class StaticPolicy(ModelPolicy):
    """Reads its ``order`` (forward selection of ``length`` attributes on the training split) and then stops."""

    name = "static"

    def __init__(self, length: int = 10) -> None:
        self.length = length

    def fitted(self, X: np.ndarray, y: np.ndarray) -> None:
        d = X.shape[1]
        chosen: list[int] = []
        score = self.model.subset_score(X, y, np.array(chosen, dtype=np.int64))
        while len(chosen) < min(self.length, d):
            candidates = [j for j in range(d) if j not in chosen]
            scores = np.array([self.model.subset_score(X, y, np.array([*chosen, j])) for j in candidates])
            costs = np.maximum(self.costs[candidates], 1e-12)
            best = int(np.argmax((scores - score) / costs))
            chosen.append(candidates[best])
            score = float(scores[best])
        self.order = np.array(chosen, dtype=np.int64)
        # A rank per attribute: the earlier in the order the higher; attributes outside it are never read.
        self.rank = np.full(d, -np.inf)
        self.rank[self.order] = -np.arange(len(self.order), dtype=np.float64)

    def act(self, values: np.ndarray, mask: np.ndarray, budget_left: float) -> int | None:
        choice = best_affordable(self.rank, mask, self.costs, budget_left)
        return None if choice is None or not np.isfinite(self.rank[choice]) else choice
