"""Online ridge regression by online gradient descent — the "online ridge" full-information reference
of Kukliansky & Shamir (2015, §5): OGD (Zinkevich 2003) on the squared loss with projection onto the
L2 ball of radius B, outputting the average iterate.

Per example: w̄ averages w_t, then w_{t+1} = Π_{||w||_2 ≤ B}(w_t − η·2(<w_t, x> − y)x).

Choices the reference leaves open (it is their GAERR with every attribute observed):

- The loss is (<w, x> − y)², as in Cesa-Bianchi et al., so its gradient is 2(<w, x> − y)x.
- B defaults to the largest |y| seen so far (Kukliansky & Shamir's Theorem 3.1 assumes |y| < B).
- η: with ``defaults = "theory"`` the fixed-horizon choice of their Theorem 3.1, η = 2B/(G√m), with m the
  run's number of examples and G = 2(B·X + Y)·X the gradient bound, where X and Y are the largest ||x||_2 and
  |y| seen so far (recorded as ``"running"``). That bound is a worst case: on ``sparse-gaussian`` it keeps w
  near 0. The practical default (recorded as ``"adaptive"``) is the constant step of averaged least-mean-squares,
  η = 1/(4R²) on the gradient 2(<w, x> − y)x, i.e. 1/(2R²) on (<w, x> − y)x (``_step_sizes.LMS_FACTOR``), with R²
  the mean of ||x||² over the examples so far (``_step_sizes``). A given ``eta`` is used as a constant step.
- ``weights`` is the average of the iterates w_1..w_t used on the examples so far (w_1 = 0), the
  online-to-batch output; online predictions use the current iterate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from budgetlab.contract.base import ParamValue
from learner.algorithms._label_bound import RUNNING, LabelBound, given_or_running
from learner.algorithms._row_buffer import dense_row
from learner.algorithms._step_sizes import ADAPTIVE, LeastSquaresStep
from learner.algorithms.base import Algorithm, Observed, ParamError, Problem
from learner.algorithms.ridge import FULL_INFORMATION, require_full_budget


class OGDRidge(Algorithm):
    """Online gradient descent on the L2 ball, with every attribute: the online ridge reference."""

    id = "ogd-ridge"
    name = "Online ridge (OGD, full information)"
    paper = FULL_INFORMATION
    algorithm = "Online gradient descent (Zinkevich 2003)"
    protocol = "batch"
    budget_kind = "full"
    rules = {"radius": RUNNING, "eta": (RUNNING, ADAPTIVE)}
    params = {
        "radius": (None, "L2 radius B; default 'running': the largest |y| seen so far"),
        "eta": (None, "constant step size; default 'adaptive': 1/(4 mean||x||²) (averaged least squares); theory: "
                "'running' 2B/(G√m) with G = 2(B·max||x||_2 + max|y|)·max||x||_2 over the examples seen so far"),
    }

    def __init__(self, problem: Problem, seed: int = 0, **params: ParamValue) -> None:
        super().__init__(problem, seed, **params)
        require_full_budget(problem, self.id)
        self.radius = LabelBound(given_or_running(self, "radius"))
        self.least_squares: LeastSquaresStep | None = None
        if self.config["eta"] == ADAPTIVE or (self.config["eta"] is None and not problem.theory):
            # the gradient here is 2(<w,x> - y)x: half of Bach & Moulines' step on (<w,x> - y)x
            self.least_squares, self.eta = LeastSquaresStep(0.5, warmup=0), None  # x is exact: no heavy tail
            self.config["eta"] = ADAPTIVE
        else:
            self.eta = given_or_running(self, "eta")
        if self.eta is not None and self.eta <= 0:
            raise ParamError(f"eta must be positive, got {self.eta}")
        self.horizon = max(problem.n_examples, 1)
        self.w = np.zeros(problem.d)
        self.w_bar = np.zeros(problem.d)
        self.t = 0
        self.x_max = 0.0
        self.y_max = 0.0

    def select(self) -> Sequence[int]:
        return range(self.problem.d)

    def step_size(self) -> float:
        if self.eta is not None:
            return self.eta
        if self.least_squares is not None:
            return self.least_squares.last
        B, X = self.radius.value, self.x_max
        G = 2.0 * (B * X + self.y_max) * X
        return 2.0 * B / (G * np.sqrt(self.horizon)) if G > 0 else 0.0

    def update(self, observed: Observed, y: float) -> None:
        x = dense_row(observed, self.problem.d)
        self.t += 1
        self.w_bar += (self.w - self.w_bar) / self.t
        radius = self.radius.see(y)
        self.x_max = max(self.x_max, float(np.linalg.norm(x)))
        self.y_max = max(self.y_max, abs(y))
        if self.least_squares is not None:
            self.least_squares.next({0: float(np.linalg.norm(x))}, {})
        self.w -= self.step_size() * 2.0 * (float(self.w @ x) - y) * x
        norm = float(np.linalg.norm(self.w))
        if norm > radius:
            self.w *= radius / norm

    @property
    def weights(self) -> np.ndarray:
        return self.w_bar.copy()

    def current_weights(self) -> np.ndarray:
        return self.w.copy()
