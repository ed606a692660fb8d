"""``greedy``: dynamic feature selection by the conditional mutual information between the label and each unread
attribute given the values read so far (Chen et al. 2015; Ma et al. 2019, EDDI; Covert et al. 2023, "Learning to
maximize mutual information for dynamic feature selection"), per unit of the attribute's cost, under the Gaussian
model of the training split; for regression, the expected reduction of the squared loss (the label's conditional
variance) instead."""

from __future__ import annotations

import numpy as np

from learner.sensing.policy import ModelPolicy, best_affordable


class GreedyPolicy(ModelPolicy):
    """The affordable attribute of the largest expected gain per unit cost, example by example."""

    name = "greedy"

    def act(self, values: np.ndarray, mask: np.ndarray, budget_left: float) -> int | None:
        gains = self.model.gains(values, mask) / np.maximum(self.costs, 1e-12)
        return best_affordable(gains, mask, self.costs, budget_left)
