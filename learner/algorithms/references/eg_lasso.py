"""Online Lasso by EG± (Kivinen & Warmuth 1997) — the "online lasso" full-information reference of
Hazan & Koren (2012, §5) and Kukliansky & Shamir (2015, §5): exponentiated gradient on the L1 ball of
radius B, outputting the average iterate.

w_t = B(z⁺ − z⁻)/(||z⁺||_1 + ||z⁻||_1) with z⁺ = z⁻ = 1 at the start (w_1 = 0); per example
z⁺_i ← z⁺_i·exp(−η g_i), z⁻_i ← z⁻_i·exp(+η g_i) with g = 2(<w_t, x> − y)x.

Choices the references leave open (it is GAELR with every attribute observed):

- The loss is (<w, x> − y)², as in Cesa-Bianchi et al.
- B defaults to the largest |y| seen so far (Theorem 4.1 of Kukliansky & Shamir assumes |y| < B); the
  iterate is B times the normalised weights, so a growing B rescales it.
- η: with ``defaults = "theory"`` the fixed-horizon choice minimising Kukliansky & Shamir's Theorem 4.1 bound
  B(log 2d/(ηm) + 5ηG²): η = sqrt(log(2d)/(5m))/G, with G = 2(B·X + Y)·X the bound on ||g||_∞, where X
  and Y are the largest ||x||_∞ and |y| seen so far (recorded as ``"running"``). That bound is a worst case (on
  ``sparse-gaussian`` it keeps w near 0); the practical default (``"adaptive"``) is the same optimum with the
  realised gradients, η_t = sqrt(log 2d / Σ_{s<=t} ||g_s||_∞²), as the budgeted EG learners use
  (``shared.step_sizes.ExponentiatedStep``). A given ``eta`` is used as a constant step.
  GAELR's gradient clipping at 1/η is not needed with exact gradients and is left out.
- z± are kept as logarithms, so long runs neither overflow nor underflow.
- ``weights`` is the average of the iterates w_1..w_t (online-to-batch); online predictions use w_t.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from learner.algorithms.base import Problem
from learner.algorithms.shared.full_information import OnlineReference
from learner.algorithms.shared.step_sizes import NO_VALUES, ExponentiatedStep


class EGLasso(OnlineReference):
    """Exponentiated gradient ± on the L1 ball, with every attribute: the online Lasso reference.

    Parameters
    ----------
    radius
        L1 radius B; default 'running': the largest |y| seen so far
    eta
        constant step size; default 'adaptive': sqrt(log 2d / Σ||g_s||_∞²); theory: 'running' sqrt(log(2d)/(5m))/G with
        G = 2(B·max||x||_∞ + max|y|)·max||x||_∞ over the examples seen so far
    """

    id = "eg-lasso"
    name = "Online Lasso (EG±, full information)"
    algorithm = "EG± (Kivinen & Warmuth 1997)"

    def __init__(self, problem: Problem, seed: int = 0, *, radius: float | Literal["running"] | None = None,
                 eta: float | Literal["adaptive", "running"] | None = None) -> None:
        super().__init__(problem, seed, radius=radius, eta=eta)
        self.log_z_plus = np.zeros(self.problem.d)
        self.log_z_minus = np.zeros(self.problem.d)

    def practical_rule(self) -> ExponentiatedStep:
        return ExponentiatedStep(self.problem.d)

    def norm(self, x: np.ndarray) -> float:
        return float(np.abs(x).max())

    def theorem_step(self, G: float) -> float:
        return float(np.sqrt(np.log(2 * self.problem.d) / (5 * self.horizon))) / G

    def move(self, w: np.ndarray, x: np.ndarray, y: float) -> None:
        if self.rule is not None:
            gradient = 2.0 * (float(w @ x) - y) * x
            self.rule.next(NO_VALUES, np.abs(gradient).max(keepdims=True))  # ||g||_∞: all the rule reads of g
            step = self.rule.last * gradient
        else:
            step = self.step_size() * 2.0 * (float(w @ x) - y) * x
        self.log_z_plus -= step
        self.log_z_minus += step

    def current_weights(self) -> np.ndarray:
        shift = max(self.log_z_plus.max(), self.log_z_minus.max())
        z_plus, z_minus = np.exp(self.log_z_plus - shift), np.exp(self.log_z_minus - shift)
        w: np.ndarray = self.bound.value * (z_plus - z_minus) / (z_plus.sum() + z_minus.sum())
        return w
