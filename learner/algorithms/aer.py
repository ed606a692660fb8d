"""AER: Attribute Efficient Regression — Cesa-Bianchi, Shalev-Shwartz, Shamir (2011), Fig. 2.

Pegasos on the squared loss with an unbiased gradient estimate built from k attributes per example,
followed by a projection onto the L1 ball of radius B (Duchi et al. 2008); the output is the average
of the iterates.

Choices the paper leaves open or gets wrong (see docs/papers.md):

- Budget split. The paper takes k even and spends k/2 attributes on the vector estimate v (a uniform
  k/2-subset C, v = (d/|C|) Σ_{j∈C} x_j e_j) and k/2 on the inner product ŷ. An odd budget gives
  ⌈k/2⌉ to v and ⌊k/2⌋ to ŷ; both estimates stay unbiased.
- The ŷ indices are drawn i.i.d. from P(i) = |w_i|/||w||_1, as Fig. 2 does (Eq. (7)'s "without
  replacement" would bias ŷ; its stray e_j is dropped: ŷ is a scalar). Repeated draws are observed once
  and counted with their multiplicity.
- While w = 0 the paper samples ŷ's indices uniformly, but every term carries the factor ||w||_1 = 0,
  so ŷ = 0 exactly: those attributes are not paid for.
- Scale (the bounds this theorem uses: max |x_i|, max |y|, ||w*||_1, declared by the oracle). Theorem 12
  assumes ||x||_∞ <= 1 and bounds both |y| and ||w*||_1 by B. The radius B defaults to the declared ||w*||_1
  bound widened to max|y| / max|x_i| (so that |y| <= B holds for the data scaled into the unit L∞ ball).
  λ defaults to Theorem 12's 16d·sqrt(log m / (m k)) — the 16d its proof uses, not the 12d of its statement —
  for that scaled data, with m the run's examples (at least 2, so log m > 0): Pegasos' λ/2 ||w'||² on
  w' = max|x_i|·w is (λ max|x_i|²)/2 ||w||², so λ is multiplied by max|x_i|² on w.
- That λ is a worst-case choice (the proof bounds every gradient by 8Bd sqrt(2/k)): on MNIST, whose pixels
  already satisfy ||x||_∞ <= 1, it is about 545 at k = 4 and keeps w̄ near 0 (normalised test MSE about 0.99
  on ``mnist-3v5``); the paper tuned λ by cross-validation.
- The output w̄ averages the iterates after each update over the examples seen (Fig. 2 divides by the
  training set size m; the run may stop early, so the mean is over t).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from budgetlab.contract.base import ParamValue
from learner.algorithms._l1_projection import project_l1_ball
from learner.algorithms.base import Algorithm, Observed, ParamError, Problem


class AER(Algorithm):
    """Attribute Efficient Regression: Pegasos with an unbiased k-attribute gradient estimate and L1 projection."""

    id = "aer"
    name = "AER (Attribute Efficient Regression)"
    paper = "Cesa-Bianchi, Shalev-Shwartz, Shamir 2011, Efficient Learning with Partially Observed Attributes"
    algorithm = "Fig. 2"
    protocol = "batch"
    budget_kind = "local"
    min_budget = 2
    params = {
        "lam": (None, "Pegasos regularisation λ; default Theorem 12's 16d·sqrt(log m / (m k)) (its proof's 16d) "
                "times max|x_i|²"),
        "radius": (None, "L1 radius B of the projection; default the declared ||w*||_1 bound, at least "
                   "max|y| / max|x_i| (Theorem 12: |y| ≤ B, ||w*||_1 ≤ B)"),
    }
    needs_scale = True

    def __init__(self, problem: Problem, seed: int = 0, **params: ParamValue) -> None:
        super().__init__(problem, seed, **params)
        d, k = problem.d, problem.budget
        self.vector_draws = (k + 1) // 2
        self.product_draws = k // 2
        m = max(problem.n_examples, 2)
        lam = self.config["lam"]
        scale = problem.scale
        theorem = 16 * d * np.sqrt(np.log(m) / (m * k)) * scale.max_abs**2
        self.lam = float(lam) if lam is not None else float(theorem)
        if self.lam <= 0:
            raise ParamError(f"lam must be positive, got {self.lam}")
        given = self.config["radius"]
        self.radius = scale.radius1(None if given is None else float(given))
        if self.radius <= 0:
            raise ParamError(f"radius must be positive, got {self.radius}")
        self.config["lam"], self.config["radius"] = self.lam, self.radius
        self.w = np.zeros(d)
        self.w_bar = np.zeros(d)
        self.t = 0
        self._subset = np.empty(0, dtype=np.int64)
        self._draws = np.empty(0, dtype=np.int64)

    def select(self) -> Sequence[int]:
        d = self.problem.d
        self._subset = self.rng.choice(d, size=self.vector_draws, replace=False)
        norm = np.abs(self.w).sum()
        if norm > 0:
            self._draws = self.rng.choice(d, size=self.product_draws, replace=True, p=np.abs(self.w) / norm)
        else:
            self._draws = np.empty(0, dtype=np.int64)
        return np.union1d(self._subset, self._draws).tolist()

    def estimates(self, observed: Observed) -> tuple[np.ndarray, np.ndarray, float]:
        """(C, v restricted to C, ŷ) for the current draws: E[v] = x and E[ŷ] = <w, x> (Lemma 11)."""
        d = self.problem.d
        v = (d / self.vector_draws) * np.array([observed[j] for j in self._subset.tolist()])
        if self._draws.size == 0:
            return self._subset, v, 0.0
        w_draws = self.w[self._draws]
        x_draws = np.array([observed[j] for j in self._draws.tolist()])
        y_hat = np.abs(self.w).sum() / self.product_draws * float(np.sign(w_draws) @ x_draws)
        return self._subset, v, y_hat

    def update(self, observed: Observed, y: float) -> None:
        subset, v, y_hat = self.estimates(observed)
        radius = self.radius
        self.t += 1
        t = self.t
        self.w *= 1.0 - 1.0 / t
        self.w[subset] -= (2.0 / (self.lam * t)) * (y_hat - y) * v
        self.w = project_l1_ball(self.w, radius)
        self.w_bar += (self.w - self.w_bar) / t

    @property
    def weights(self) -> np.ndarray:
        return self.w_bar.copy()

    def current_weights(self) -> np.ndarray:
        return self.w.copy()
