"""Offline Lasso — the full-information reference of Cesa-Bianchi et al. (2011, §7) and Hazan & Koren
(2012, §5).

Observes every attribute of every example and fits scikit-learn's ``Lasso`` on all examples seen so
far, minimising (1/2n)||y − Xw||² + α||w||_1 (the penalised form of the papers' constraint
||w||_1 ≤ B; each B corresponds to some α).

Choices the papers leave open (they tune the regularisation by 10-fold cross-validation):

- α is cross-validated by default, as the papers did: scikit-learn's ``LassoCV`` with 10 folds (fewer while
  fewer than 10 examples have been seen) over a path of ``N_ALPHAS`` values down to ``PATH_EPS`` times the
  largest useful α. As for ridge (``ridge.CrossValidationSchedule``) α is chosen again only when the number
  of examples seen has doubled since the last choice, and the refits in between use it: a 10-fold path costs
  seconds on 900 MNIST images, too much for every point of a learning curve. A fixed ``alpha`` skips the
  cross-validation.
- No intercept: like the papers' predictors, x ↦ <w, x>.
- The fit is redone lazily, when ``weights`` is read after new examples arrived, warm-started from the
  previous solution; the rows seen are kept in one growing matrix.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.linear_model import Lasso as SklearnLasso
from sklearn.linear_model import LassoCV

from budgetlab.models import ParamValue
from learner.algorithms._row_buffer import RowBuffer, dense_row
from learner.algorithms.base import Algorithm, Observed, ParamError, Problem
from learner.algorithms.ridge import FULL_INFORMATION, CrossValidationSchedule, require_full_budget

MAX_ITERATIONS = 10_000
FOLDS = 10
N_ALPHAS = 20
PATH_EPS = 1e-2
CV_TOLERANCE = 1e-3


class Lasso(Algorithm):
    """Offline Lasso on every example seen, with all attributes (scikit-learn)."""

    id = "lasso"
    name = "Lasso (offline, full information)"
    paper = FULL_INFORMATION
    algorithm = "sklearn.linear_model.LassoCV (10-fold α) or Lasso (fixed α)"
    protocol = "batch"
    budget_kind = "full"
    params = {"alpha": (None, "L1 penalty α of (1/2n)||y − Xw||² + α||w||_1; default cross-validated (LassoCV, "
                        "10 folds)")}

    def __init__(self, problem: Problem, seed: int = 0, **params: ParamValue) -> None:
        super().__init__(problem, seed, **params)
        require_full_budget(problem, self.id)
        alpha = self.config["alpha"]
        if alpha is not None and float(alpha) <= 0:
            raise ParamError(f"alpha must be positive (use ridge with alpha=0 for least squares), got {alpha}")
        self.fixed = alpha is not None
        self.model = SklearnLasso(alpha=float(alpha or 1.0), fit_intercept=False, warm_start=True,
                                  max_iter=MAX_ITERATIONS)
        self.schedule = CrossValidationSchedule()
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
            n = self.rows.n
            if not self.fixed and self.schedule.due(n):
                cv = LassoCV(alphas=N_ALPHAS, eps=PATH_EPS, cv=min(FOLDS, n), tol=CV_TOLERANCE, fit_intercept=False,
                             max_iter=MAX_ITERATIONS).fit(self.rows.X, self.rows.y)
                self.schedule.chose(cv.alpha_, n)
                self.config["alpha"] = self.schedule.alpha
                self.model.set_params(alpha=float(cv.alpha_))
                self.model.coef_ = cv.coef_.copy()  # the warm start of the next refit
                self._w = cv.coef_.astype(float)
            elif self.fixed or self.schedule.alpha is not None:
                self._w = self.model.fit(self.rows.X, self.rows.y).coef_.astype(float)
            self._fitted_at = self.rows.n
        return self._w.copy()
