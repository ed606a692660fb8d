"""Offline ridge regression — the full-information reference of Cesa-Bianchi et al. (2011, §7),
Hazan & Koren (2012, §5) and Kukliansky & Shamir (2015, §5).

Observes every attribute of every example and fits scikit-learn's ``Ridge`` on all examples seen so
far, minimising ||y − Xw||² + α||w||².

Choices the papers leave open (they tune α by 10-fold cross-validation):

- α defaults to 1.0 (scikit-learn's default) and can be overridden.
- No intercept: like the papers' predictors, x ↦ <w, x>.
- The fit is redone lazily, when ``weights`` is read after new examples arrived; the rows seen are kept
  in one growing matrix (full information means the learner may keep them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.linear_model import Ridge as SklearnRidge

from budgetlab.models import ParamValue
from learner.algorithms._row_buffer import RowBuffer, dense_row
from learner.algorithms.base import Algorithm, Observed, ParamError, Problem

FULL_INFORMATION = "full-information reference (Cesa-Bianchi et al. 2011 §7; Kukliansky & Shamir 2015 §5)"


def require_full_budget(problem: Problem, algorithm_id: str) -> None:
    if problem.budget < problem.d:
        raise ParamError(
            f"{algorithm_id} is a full-information reference: it needs all d={problem.d} attributes per example, "
            f"the budget allows {problem.budget}"
        )


class Ridge(Algorithm):
    """Offline ridge regression on every example seen, with all attributes (scikit-learn)."""

    id = "ridge"
    name = "Ridge regression (offline, full information)"
    paper = FULL_INFORMATION
    algorithm = "sklearn.linear_model.Ridge"
    protocol = "batch"
    budget_kind = "full"
    params = {"alpha": (1.0, "L2 regularisation α of ||y − Xw||² + α||w||² (scikit-learn's default)")}

    def __init__(self, problem: Problem, seed: int = 0, **params: ParamValue) -> None:
        super().__init__(problem, seed, **params)
        require_full_budget(problem, self.id)
        self.alpha = float(self.config["alpha"])
        if self.alpha < 0:
            raise ParamError(f"alpha must be non-negative, got {self.alpha}")
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
            model = SklearnRidge(alpha=self.alpha, fit_intercept=False)
            self._w = model.fit(self.rows.X, self.rows.y).coef_.astype(float)
            self._fitted_at = self.rows.n
        return self._w.copy()
