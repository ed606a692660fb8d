"""What an acquisition policy at prediction time is: fitted on a training split read in full, it chooses the next
attribute of a test example to pay for from the values read so far, then predicts from those values alone.

The protocol (``Policy``) is the one of the AFA literature (Janisch et al. 2019; Covert et al. 2023; AFABench):
``fit(X, y, costs, task)`` once, then for each example ``act(values, mask, budget_left)`` until it answers None (or
the episode's budget is spent) and ``predict(values, mask)``. ``values`` holds the values read where ``mask`` is 1;
an unread attribute is absent: its slot in ``values`` is meaningless (0.0 as the environment leaves it) and no
policy here reads it.
"""

from __future__ import annotations

from typing import Literal, Protocol

import numpy as np

from learner.sensing.gaussian import fit_model

Task = Literal["classification", "regression"]
# A cost within this of the budget left is affordable (budgets add costs up in floating point).
_SLACK = 1e-9


class Policy(Protocol):
    """An acquisition policy: which attribute to read next, and the prediction from what was read."""

    name: str

    def fit(self, X: np.ndarray, y: np.ndarray, costs: np.ndarray, task: Task) -> None:
        """Learn from a training split read in full: ``X`` (n, d), its labels ``y``, the attributes' costs."""

    def act(self, values: np.ndarray, mask: np.ndarray, budget_left: float) -> int | None:
        """The next attribute to read (an unread one the budget affords), or None to stop and predict."""

    def predict(self, values: np.ndarray, mask: np.ndarray) -> float:
        """A class value (classification) or a number (regression) from the values where ``mask`` is 1."""


def affordable(mask: np.ndarray, costs: np.ndarray, budget_left: float) -> np.ndarray:
    """Which attributes an episode may still read: unread, and costing no more than what is left."""
    allowed: np.ndarray = (np.asarray(mask) == 0) & (costs <= budget_left + _SLACK)
    return allowed


def best_affordable(scores: np.ndarray, mask: np.ndarray, costs: np.ndarray, budget_left: float) -> int | None:
    """The affordable attribute of the highest score (the lowest index among ties), None when none is left."""
    allowed = affordable(mask, costs, budget_left)
    if not allowed.any():
        return None
    return int(np.argmax(np.where(allowed, scores, -np.inf)))


class ModelPolicy:
    """What the policies here share: the costs, the task, and the Gaussian model of the training split
    (``learner.sensing.gaussian``) whose prediction from the read values they all use, so that a comparison of them
    compares what they choose to read."""

    name = ""

    def fit(self, X: np.ndarray, y: np.ndarray, costs: np.ndarray, task: Task) -> None:
        self.costs = np.asarray(costs, dtype=np.float64)
        self.task = task
        self.model = fit_model(np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64), task)
        self.fitted(np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64))

    def fitted(self, X: np.ndarray, y: np.ndarray) -> None:
        """What a policy learns beyond the model (nothing by default)."""

    def predict(self, values: np.ndarray, mask: np.ndarray) -> float:
        return self.model.predict(values, mask)
