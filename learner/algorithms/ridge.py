"""Offline ridge regression — the full-information reference of Cesa-Bianchi et al. (2011, §7),
Hazan & Koren (2012, §5) and Kukliansky & Shamir (2015, §5).

Observes every attribute of every example and fits scikit-learn's ``Ridge`` on all examples seen so
far, minimising ||y − Xw||² + α||w||².

Choices the papers leave open (they tune α by 10-fold cross-validation):

- α is cross-validated by default, as the papers did: scikit-learn's ``RidgeCV`` over ``ALPHAS`` (61
  values from 1e-4 to 1e8, log-spaced), with its efficient leave-one-out cross-validation (n-fold, exact
  and as cheap as one fit, where 10 folds would cost 10 fits per α). As in the papers, who tuned once and
  then ran on prefixes of the training set, α is not re-tuned at every refit: it is cross-validated on the
  examples seen so far whenever their number has doubled since the last time (``CrossValidationSchedule``,
  from 3 examples on; before that the fit is the zero predictor), and every refit in between uses the last
  α chosen. A fixed ``alpha`` skips the cross-validation. ``config`` records the last α chosen: given as a fixed
  ``alpha``, it refits the run's final predictor.
- No intercept: like the papers' predictors, x ↦ <w, x>.
- The fit is redone lazily, when ``weights`` is read after new examples arrived; the rows seen are kept
  in one growing matrix (full information means the learner may keep them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.linear_model import Ridge as SklearnRidge
from sklearn.linear_model import RidgeCV

from budgetlab.models import ParamValue
from learner.algorithms._row_buffer import RowBuffer, dense_row
from learner.algorithms.base import Algorithm, Observed, ParamError, Problem

ALPHAS = np.logspace(-4, 8, 61)
# Cross-validation needs at least this many examples; before that the fit is the zero predictor.
MIN_CV_EXAMPLES = 3


class CrossValidationSchedule:
    """When to choose α again: first at ``MIN_CV_EXAMPLES`` examples, then each time their number doubles."""

    def __init__(self) -> None:
        self.alpha: float | None = None
        self._tuned_at = 0

    def due(self, n: int) -> bool:
        return n >= MIN_CV_EXAMPLES and (self.alpha is None or n >= 2 * self._tuned_at)

    def chose(self, alpha: float, n: int) -> None:
        self.alpha, self._tuned_at = float(alpha), n

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
    algorithm = "sklearn.linear_model.RidgeCV (leave-one-out α) or Ridge (fixed α)"
    protocol = "batch"
    budget_kind = "full"
    params = {"alpha": (None, "L2 regularisation α of ||y − Xw||² + α||w||²; default cross-validated (RidgeCV, "
                        "leave-one-out, over 1e-4..1e8)")}

    def __init__(self, problem: Problem, seed: int = 0, **params: ParamValue) -> None:
        super().__init__(problem, seed, **params)
        require_full_budget(problem, self.id)
        alpha = self.config["alpha"]
        self.alpha = None if alpha is None else float(alpha)
        if self.alpha is not None and self.alpha < 0:
            raise ParamError(f"alpha must be non-negative, got {self.alpha}")
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
            if self.alpha is None and self.schedule.due(n):
                model = RidgeCV(alphas=ALPHAS, fit_intercept=False).fit(self.rows.X, self.rows.y)
                self.schedule.chose(model.alpha_, n)
                self.config["alpha"] = self.schedule.alpha
                self._w = np.asarray(model.coef_, dtype=float)
            else:
                alpha = self.alpha if self.alpha is not None else self.schedule.alpha
                if alpha is not None:
                    model = SklearnRidge(alpha=alpha, fit_intercept=False).fit(self.rows.X, self.rows.y)
                    self._w = np.asarray(model.coef_, dtype=float)
            self._fitted_at = self.rows.n
        return self._w.copy()
