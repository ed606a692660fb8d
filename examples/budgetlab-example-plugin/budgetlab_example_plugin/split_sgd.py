"""Split-half SGD: an example plugin, not one of the papers' algorithms.

Per example it pays for k distinct attributes drawn uniformly without replacement and splits them into two halves,
A (the first ceil(k/2)) and B. Each half alone gives an unbiased estimate, the inner product from A,
ŷ = (d/|A|) Σ_{i∈A} w_i x_i, and the example from B, x̃ = (d/|B|) Σ_{i∈B} x_i e_i; the gradient of the squared loss
is estimated by (ŷ - y) x̃. It takes a step η_t = eta / R² along it, R² the running mean of ||x̃||² (the constant
step of averaged least squares), projects w onto the L2 ball of radius ``radius`` and outputs the average iterate.
The idea is Hazan & Koren's (2012) AERR with uniform draws for both estimates; which is why it makes a fair
comparison beside ``aerr`` and ``ddaerr``. Its parameters are the keyword arguments of its constructor, described in
its class docstring, as every algorithm of budgetlab's declares them.

Choices: the halves are disjoint draws without replacement, so ŷ and x̃ are not independent and their product is
slightly biased (a price an example can pay); the attributes it reads are only those it selected, as the contract
asks (``budgetlab algorithms check split-sgd``).
"""

from __future__ import annotations

import math

import numpy as np

from learner.algorithms.base import Algorithm, Observed, ParamError, Problem


class SplitSGD(Algorithm):
    """Split-half SGD: one half of the paid attributes estimates <w, x>, the other x, averaged projected SGD.

    Parameters
    ----------
    eta
        step size as a multiple of 1/R², R² the running mean of the estimates' ||x̃||²
    radius
        radius of the L2 ball w is projected onto
    """

    id = "split-sgd"
    name = "Split-half SGD (example plugin)"
    paper = "budgetlab's example plugin (not from the papers)"
    algorithm = "split-half importance-weighted SGD"
    min_budget = 2

    def __init__(self, problem: Problem, seed: int = 0, *, eta: float = 0.1, radius: float = 100.0) -> None:
        super().__init__(problem, seed)
        if not eta > 0 or not radius > 0:
            raise ParamError(f"{self.id}: eta and radius must be positive")
        self.eta = eta
        self.radius = radius
        d, k = problem.d, problem.budget
        self.inner_draws = math.ceil(k / 2)
        self.x_draws = k - self.inner_draws
        self.w = np.zeros(d)
        self.w_bar = np.zeros(d)
        self.t = 0
        self.r2 = 0.0
        self.chosen: list[int] = []

    def select(self) -> list[int]:
        self.chosen = [int(i) for i in self.rng.choice(self.problem.d, size=self.problem.budget, replace=False)]
        return self.chosen

    def update(self, observed: Observed, y: float) -> None:
        d = self.problem.d
        inner, rest = self.chosen[: self.inner_draws], self.chosen[self.inner_draws :]
        y_hat = d / len(inner) * sum(self.w[i] * observed[i] for i in inner)
        scale = d / len(rest)
        x_tilde = {i: scale * observed[i] for i in rest}
        self.t += 1
        self.r2 += (sum(v * v for v in x_tilde.values()) - self.r2) / self.t
        step = self.eta / self.r2 if self.r2 > 0 else 0.0
        for i, v in x_tilde.items():
            self.w[i] -= step * (y_hat - y) * v
        norm = float(np.linalg.norm(self.w))
        if norm > self.radius:
            self.w *= self.radius / norm
        self.w_bar += (self.w - self.w_bar) / self.t

    @property
    def weights(self) -> np.ndarray:
        return self.w_bar.copy()

    def current_weights(self) -> np.ndarray:
        return self.w.copy()
