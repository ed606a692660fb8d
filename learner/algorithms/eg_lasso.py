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
  (``_step_sizes.ExponentiatedStep``). A given ``eta`` is used as a constant step.
  GAELR's gradient clipping at 1/η is not needed with exact gradients and is left out.
- z± are kept as logarithms, so long runs neither overflow nor underflow.
- ``weights`` is the average of the iterates w_1..w_t (online-to-batch); online predictions use w_t.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from budgetlab.contract.base import ParamValue
from learner.algorithms._label_bound import RUNNING, LabelBound, given_or_running
from learner.algorithms._row_buffer import dense_row
from learner.algorithms._step_sizes import ADAPTIVE, ExponentiatedStep
from learner.algorithms.base import Algorithm, Observed, ParamError, Problem
from learner.algorithms.ridge import FULL_INFORMATION, require_full_budget


class EGLasso(Algorithm):
    """Exponentiated gradient ± on the L1 ball, with every attribute: the online Lasso reference."""

    id = "eg-lasso"
    name = "Online Lasso (EG±, full information)"
    paper = FULL_INFORMATION
    algorithm = "EG± (Kivinen & Warmuth 1997)"
    protocol = "batch"
    budget_kind = "full"
    rules = {"radius": RUNNING, "eta": (RUNNING, ADAPTIVE)}
    params = {
        "radius": (None, "L1 radius B; default 'running': the largest |y| seen so far"),
        "eta": (None, "constant step size; default 'adaptive': sqrt(log 2d / Σ||g_s||_∞²); theory: 'running' "
                "sqrt(log(2d)/(5m))/G with G = 2(B·max||x||_∞ + max|y|)·max||x||_∞ over the examples seen so far"),
    }

    def __init__(self, problem: Problem, seed: int = 0, **params: ParamValue) -> None:
        super().__init__(problem, seed, **params)
        require_full_budget(problem, self.id)
        self.radius = LabelBound(given_or_running(self, "radius"))
        self.exponentiated: ExponentiatedStep | None = None
        if self.config["eta"] == ADAPTIVE or (self.config["eta"] is None and not problem.theory):
            self.exponentiated, self.eta = ExponentiatedStep(problem.d), None
            self.config["eta"] = ADAPTIVE
        else:
            self.eta = given_or_running(self, "eta")
        if self.eta is not None and self.eta <= 0:
            raise ParamError(f"eta must be positive, got {self.eta}")
        self.horizon = max(problem.n_examples, 1)
        self.log_z_plus = np.zeros(problem.d)
        self.log_z_minus = np.zeros(problem.d)
        self.w_bar = np.zeros(problem.d)
        self.t = 0
        self.x_max = 0.0
        self.y_max = 0.0

    def select(self) -> Sequence[int]:
        return range(self.problem.d)

    def current_weights(self) -> np.ndarray:
        shift = max(self.log_z_plus.max(), self.log_z_minus.max())
        z_plus, z_minus = np.exp(self.log_z_plus - shift), np.exp(self.log_z_minus - shift)
        return self.radius.value * (z_plus - z_minus) / (z_plus.sum() + z_minus.sum())

    def step_size(self) -> float:
        if self.eta is not None:
            return self.eta
        if self.exponentiated is not None:
            return self.exponentiated.last
        X = self.x_max
        G = 2.0 * (self.radius.value * X + self.y_max) * X
        return float(np.sqrt(np.log(2 * self.problem.d) / (5 * self.horizon))) / G if G > 0 else 0.0

    def update(self, observed: Observed, y: float) -> None:
        x = dense_row(observed, self.problem.d)
        w = self.current_weights()
        self.t += 1
        self.w_bar += (w - self.w_bar) / self.t
        self.radius.see(y)
        self.x_max = max(self.x_max, float(np.abs(x).max()))
        self.y_max = max(self.y_max, abs(y))
        if self.exponentiated is not None:
            gradient = 2.0 * (float(w @ x) - y) * x
            self.exponentiated.next({}, {0: float(np.abs(gradient).max())})
            step = self.exponentiated.last * gradient
        else:
            step = self.step_size() * 2.0 * (float(w @ x) - y) * x
        self.log_z_plus -= step
        self.log_z_minus += step

    @property
    def weights(self) -> np.ndarray:
        return self.w_bar.copy()
