"""The scikit-learn-style wrapper runs any algorithm on a LocalOracle under its budget."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.datasets import Dataset
from learner.diagnosis import NearZeroPredictor
from learner.oracle import LocalOracle
from learner.runner import run_algorithm

# scikit-learn (and the estimator, which imports it) is imported inside the tests that use it: every xdist
# worker collects every file, and the import costs seconds of CPU.


def sparse_regression(n: int = 3000, d: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.zeros(d)
    w[:3] = [1.0, -1.0, 0.5]
    return X, X @ w + 0.1 * rng.normal(size=n)


# With the practical defaults every learner learns (R² 0.60-0.83 on seed 1); AER is also given a λ of the order the
# papers' cross-validation picks.
@pytest.mark.parametrize(("algorithm", "params"), [("aerr", {}), ("aelr", {}), ("aer", {}), ("aer", {"lam": 0.5}),
                                                   ("ddaerr-2phase", {})])
def test_fit_learns_within_the_budget(algorithm: str, params: dict) -> None:
    from learner.estimator import BudgetedRegressor

    X, y = sparse_regression()
    model = BudgetedRegressor(algorithm, per_example=5, seed=1, params=params).fit(X, y)
    assert model.coef_.shape == (20,) and model.n_features_in_ == 20
    assert model.n_attributes_paid_ <= 5 * len(y)
    X_test, y_test = sparse_regression(seed=9)
    # R² well above the zero predictor's (≈ 0 here) on fresh data from the same model.
    assert model.score(X_test, y_test) > 0.2
    np.testing.assert_allclose(model.predict(X_test), X_test @ model.coef_ + model.intercept_)


def test_fit_equals_the_runner_on_a_local_oracle_with_the_same_seed() -> None:
    from learner.estimator import BudgetedRegressor

    X, y = sparse_regression(n=500)
    model = BudgetedRegressor("aelr", per_example=5, seed=3).fit(X, y)
    rows = np.arange(len(y))
    dataset = Dataset(name="fit", description="", task="regression", X=X, y=y, train_rows=rows, test_rows=rows)
    direct = run_algorithm("aelr", LocalOracle(dataset, budget=Budget(per_example=5), seed=3), seed=3)
    np.testing.assert_array_equal(model.coef_, direct.weights)


def test_is_a_scikit_learn_estimator() -> None:
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score

    from learner.estimator import BudgetedRegressor

    X, y = sparse_regression(n=900)
    model = BudgetedRegressor("aerr", per_example=5, params={"B": 2.0})
    assert clone(model).get_params() == model.get_params()
    scores = cross_val_score(model, X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.05)
    with pytest.raises(ValueError):
        model.fit(X, y).predict(X[:, :5])


def test_a_global_budget_stops_fitting_early() -> None:
    from learner.estimator import BudgetedRegressor

    X, y = sparse_regression(n=1000)
    model = BudgetedRegressor("aerr", per_example=5, total=500).fit(X, y)
    assert model.result_.status == "budget_exhausted" and model.n_attributes_paid_ <= 500


@pytest.mark.parametrize("algorithm", ["ito1", "ito2"])
def test_an_online_protocol_algorithm_fits_predicting_before_each_label(algorithm: str) -> None:
    from learner.estimator import BudgetedRegressor

    X, y = sparse_regression(n=1500)
    model = BudgetedRegressor(algorithm, per_example=6, seed=0).fit(X, y)
    assert model.result_.status == "finished" and model.result_.cumulative_loss is not None
    X_test, y_test = sparse_regression(seed=9)
    assert model.score(X_test, y_test) > 0.2


def test_a_fit_near_the_zero_predictor_warns_why_and_what_to_try() -> None:
    from learner.estimator import BudgetedRegressor

    X, y = sparse_regression(n=200)
    with pytest.warns(NearZeroPredictor, match=r"aerr ended at 0\.\d+ of the zero predictor's test MSE: the "
                                               r"theorems' constants"):
        model = BudgetedRegressor("aerr", per_example=2, defaults="theory").fit(X, y)
    assert model.result_.diagnosis is not None
    assert "tune={\"eta\": [" in model.result_.diagnosis and "--tune" not in model.result_.diagnosis  # Python's words
    with warnings.catch_warnings():
        warnings.simplefilter("error", NearZeroPredictor)
        assert BudgetedRegressor("aerr", per_example=5).fit(*sparse_regression(n=500)).result_.diagnosis is None
