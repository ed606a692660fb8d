"""Offline Lasso — the full-information reference of Cesa-Bianchi et al. (2011, §7) and Hazan & Koren
(2012, §5).

Observes every attribute of every example and fits scikit-learn's ``Lasso`` on all examples seen so
far, minimising (1/2n)||y − Xw||² + α||w||_1 (the penalised form of the papers' constraint
||w||_1 ≤ B; each B corresponds to some α).

Choices the papers leave open (they tune the regularisation by 10-fold cross-validation):

- α defaults to 0.01, a light penalty for targets of unit scale, and can be overridden.
- No intercept: like the papers' predictors, x ↦ <w, x>.
- The fit is redone lazily, when ``weights`` is read after new examples arrived, warm-started from the
  previous solution; the rows seen are kept in one growing matrix.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.linear_model import Lasso as SklearnLasso

from budgetlab.models import ParamValue
from learner.algorithms._row_buffer import RowBuffer, dense_row
from learner.algorithms.base import Algorithm, Observed, ParamError, Problem
from learner.algorithms.ridge import FULL_INFORMATION, require_full_budget

MAX_ITERATIONS = 10_000


class Lasso(Algorithm):
    """Offline Lasso on every example seen, with all attributes (scikit-learn)."""

    id = "lasso"
    name = "Lasso (offline, full information)"
    paper = FULL_INFORMATION
    algorithm = "sklearn.linear_model.Lasso"
    protocol = "batch"
    budget_kind = "full"
    params = {"alpha": (0.01, "L1 penalty α of (1/2n)||y − Xw||² + α||w||_1")}

    def __init__(self, problem: Problem, seed: int = 0, **params: ParamValue) -> None:
        super().__init__(problem, seed, **params)
        require_full_budget(problem, self.id)
        alpha = float(self.config["alpha"])
        if alpha <= 0:
            raise ParamError(f"alpha must be positive (use ridge with alpha=0 for least squares), got {alpha}")
        self.model = SklearnLasso(alpha=alpha, fit_intercept=False, warm_start=True, max_iter=MAX_ITERATIONS)
        self.rows = RowBuffer(problem.d)
        self._w = np.zeros(problem.d)
        self._fitted_at = 0

    def select(self) -> Sequence[int]:
        return range(self.problem.d)

    def update(self, observed: Observed, y: float) -> None:
        self.rows.append(dense_row(observed, self.problem.d), y)

    @property
    def weights(self) -> np.ndarray:
        if self.rows.n != self._fitted_at:
            self._w = self.model.fit(self.rows.X, self.rows.y).coef_.astype(float)
            self._fitted_at = self.rows.n
        return self._w.copy()
