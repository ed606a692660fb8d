"""Plugins that each break one point of the algorithm contract (``budgetlab algorithms check``), as
``tests.learner.broken_plugins:Class`` targets. Each is otherwise a plain SGD on the attributes it draws."""

from __future__ import annotations

import numpy as np

from learner.algorithms.base import Algorithm, Observed, Problem


class Sgd(Algorithm):
    """SGD on the attributes drawn.

    Parameters
    ----------
    eta
        step size
    """

    name = "a broken plugin"
    paper = "tests/learner/broken_plugins.py"
    algorithm = "SGD on the attributes drawn"

    def __init__(self, problem: Problem, seed: int = 0, *, eta: float = 0.01) -> None:
        super().__init__(problem, seed)
        self.eta = eta
        self.w = np.zeros(problem.d)

    def select(self) -> list[int]:
        return [int(i) for i in self.rng.choice(self.problem.d, size=self.problem.budget, replace=False)]

    def update(self, observed: Observed, y: float) -> None:
        residual = sum(self.w[i] * v for i, v in observed.items()) - y
        for i, v in observed.items():
            self.w[i] -= self.eta * residual * v

    @property
    def weights(self) -> np.ndarray:
        return self.w.copy()


class ReadsUnpaid(Sgd):
    """Takes an attribute it did not pay for as 0, reading every attribute of the example."""

    id = "reads-unpaid"

    def update(self, observed: Observed, y: float) -> None:
        x = np.array([observed.get(i, 0.0) for i in range(self.problem.d)])
        self.w -= self.eta * (float(self.w @ x) - y) * x


class IgnoresSeed(Sgd):
    """Draws its attributes from a generator of its own, not from the seed it is given."""

    id = "ignores-seed"

    def select(self) -> list[int]:
        fresh = np.random.default_rng()
        return [int(i) for i in fresh.choice(self.problem.d, size=self.problem.budget, replace=False)]


class OverBudget(Sgd):
    """Asks for one attribute more than its budget."""

    id = "over-budget"

    def select(self) -> list[int]:
        return list(range(min(self.problem.budget + 1, self.problem.d)))
