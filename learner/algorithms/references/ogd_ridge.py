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
  η = 1/(4R²) on the gradient 2(<w, x> − y)x, i.e. 1/(2R²) on (<w, x> − y)x (``shared.step_sizes.LMS_FACTOR``), with R²
  the mean of ||x||² over the examples so far (``shared.step_sizes``). A given ``eta`` is used as a constant step.
- ``weights`` is the average of the iterates w_1..w_t used on the examples so far (w_1 = 0), the
  online-to-batch output; online predictions use the current iterate.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from learner.algorithms.base import Problem
from learner.algorithms.shared.full_information import OnlineReference
from learner.algorithms.shared.step_sizes import NO_VALUES, LeastSquaresStep


def l2_norm(x: np.ndarray) -> float:
    """||x||_2 as np.linalg.norm computes it for a vector, sqrt(x·x), without its checks."""
    return math.sqrt(float(x.dot(x)))


class OGDRidge(OnlineReference):
    """Online gradient descent on the L2 ball, with every attribute: the online ridge reference.

    Parameters
    ----------
    radius
        L2 radius B; default 'running': the largest |y| seen so far
    eta
        constant step size; default 'adaptive': 1/(4 mean||x||²) (averaged least squares); theory: 'running' 2B/(G√m)
        with G = 2(B·max||x||_2 + max|y|)·max||x||_2 over the examples seen so far
    """

    id = "ogd-ridge"
    name = "Online ridge (OGD, full information)"
    algorithm = "Online gradient descent (Zinkevich 2003)"

    def __init__(self, problem: Problem, seed: int = 0, *, radius: float | Literal["running"] | None = None,
                 eta: float | Literal["adaptive", "running"] | None = None) -> None:
        super().__init__(problem, seed, radius=radius, eta=eta)
        self.w = np.zeros(self.problem.d)

    def practical_rule(self) -> LeastSquaresStep:
        # the gradient here is 2(<w,x> - y)x: half of Bach & Moulines' step on (<w,x> - y)x
        return LeastSquaresStep(0.5, warmup=0)  # x is exact: no heavy tail

    def norm(self, x: np.ndarray) -> float:
        return l2_norm(x)

    def theorem_step(self, G: float) -> float:
        return 2.0 * self.bound.value / (G * math.sqrt(self.horizon))

    def move(self, w: np.ndarray, x: np.ndarray, y: float) -> None:
        if self.rule is not None:
            self.rule.next(np.array([l2_norm(x)]), NO_VALUES)
        self.w -= self.step_size() * 2.0 * (float(self.w @ x) - y) * x
        norm = l2_norm(self.w)
        if norm > self.bound.value:
            self.w *= self.bound.value / norm

    def current_weights(self) -> np.ndarray:
        return self.w.copy()
