"""A scikit-learn-style face for any budgeted algorithm: ``fit(X, y)``, ``predict(X)``, ``coef_``.

``fit`` serves ``(X, y)`` through a ``LocalOracle`` under the chosen budget and runs the algorithm with
the same runner the CLI and the learner service use, so the algorithm still sees only the attributes
it paid for. The learning curve is measured on the training rows (there is no held-out split here);
use ``score`` on data of your own for a test error.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, check_X_y, validate_data

from budgetlab.contract.algorithms import Defaults
from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import COMPLETED_RUN_STATUSES, RunResult
from budgetlab.datasets import Dataset
from learner.oracle import LocalOracle
from learner.runner import run_algorithm


class BudgetedRegressor(RegressorMixin, BaseEstimator):
    """Fit ``algorithm`` seeing at most ``per_example`` attributes of each example (and ``total`` in all).

    ``params`` are the algorithm's own parameters (see ``budgetlab algorithms``); the others take the practical
    defaults, or the theorems' constants with ``defaults="theory"``. ``max_examples`` bounds the pass over the
    data (default: one pass, in a stream order fixed by ``seed``).
    """

    def __init__(
        self,
        algorithm: str = "aerr",
        per_example: int | None = 5,
        total: float | None = None,
        params: dict[str, ParamValue] | None = None,
        seed: int = 0,
        max_examples: int | None = None,
        defaults: Defaults = "practical",
    ) -> None:
        self.algorithm = algorithm
        self.per_example = per_example
        self.total = total
        self.params = params
        self.seed = seed
        self.max_examples = max_examples
        self.defaults = defaults

    def fit(self, X: np.ndarray, y: np.ndarray) -> BudgetedRegressor:
        X, y = check_X_y(X, y, dtype=np.float64, y_numeric=True)
        self.n_features_in_ = X.shape[1]
        rows = np.arange(len(y))
        dataset = Dataset(name="fit", description="data passed to BudgetedRegressor.fit", task="regression",
                          X=X, y=y, train_rows=rows, test_rows=rows)
        oracle = LocalOracle(dataset, budget=Budget(per_example=self.per_example, total=self.total), seed=self.seed)
        result: RunResult = run_algorithm(self.algorithm, oracle, params=dict(self.params or {}), seed=self.seed,
                                          max_examples=self.max_examples, dataset="fit", defaults=self.defaults)
        if result.status not in COMPLETED_RUN_STATUSES:
            raise RuntimeError(f"{self.algorithm} ended {result.status}: {result.message}")
        self.coef_ = np.asarray(result.weights)
        self.intercept_ = result.bias
        self.result_ = result
        self.n_attributes_paid_ = result.attributes
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_
