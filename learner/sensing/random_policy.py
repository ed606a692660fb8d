"""``random``: read attributes in a random order, each example its own (the floor of every AFA benchmark, e.g.
AFABench, KDD 2025), and predict with the shared Gaussian model."""

from __future__ import annotations

import numpy as np

from learner.sensing.policy import ModelPolicy, affordable


class RandomPolicy(ModelPolicy):
    """Any affordable unread attribute, uniformly, from a generator of its own seed."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, values: np.ndarray, mask: np.ndarray, budget_left: float) -> int | None:
        allowed = np.flatnonzero(affordable(mask, self.costs, budget_left))
        return int(self.rng.choice(allowed)) if allowed.size else None
