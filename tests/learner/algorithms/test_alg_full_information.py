"""Full-information references: offline ridge and lasso (scikit-learn), online ridge (OGD), online lasso (EG±)."""

from __future__ import annotations

import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.datasets.base import Dataset
from learner.algorithms import ParamError, Problem, get_algorithm
from learner.algorithms.references.eg_lasso import EGLasso
from learner.algorithms.references.lasso import (
    CV_TOLERANCE,
    MAX_ITERATIONS,
    N_ALPHAS,
    PATH_EPS,
    Lasso,
    alpha_grid,
    gram_lasso_path,
)
from learner.algorithms.references.ogd_ridge import OGDRidge
from learner.algorithms.references.ridge import ALPHAS, Ridge
from learner.oracle import LocalOracle
from learner.runner import run_algorithm

# scikit-learn is imported inside the tests that use it: every xdist worker collects every file,
# and the import costs seconds of CPU.

REFERENCES = ["ridge", "lasso", "ogd-ridge", "eg-lasso"]
W_STAR = np.array([1.0, -0.7, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0])


def linear_data(n_train: int = 1500, n_test: int = 500, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n_train + n_test, W_STAR.size))
    y = X @ W_STAR + 0.1 * rng.standard_normal(n_train + n_test)
    return Dataset(name="linear", description="", task="regression", X=X, y=y,
                   train_rows=np.arange(n_train), test_rows=np.arange(n_train, n_train + n_test))


def feed(algorithm, X: np.ndarray, y: np.ndarray) -> None:
    for row, label in zip(X, y, strict=True):
        selected = list(algorithm.select())
        algorithm.update({j: float(row[j]) for j in selected}, float(label))


@pytest.mark.parametrize("algorithm_id", REFERENCES)
def test_selects_every_attribute_and_needs_the_full_budget(algorithm_id: str) -> None:
    cls = get_algorithm(algorithm_id)
    assert cls.budget_kind == "full"
    assert list(cls(Problem(d=8, k=None, n_examples=10)).select()) == list(range(8))
    with pytest.raises(ParamError):
        cls(Problem(d=8, k=7, n_examples=10))


def test_ridge_matches_the_closed_form_and_refits_lazily() -> None:
    dataset = linear_data()
    ridge = Ridge(Problem(d=8, k=8, n_examples=1500), alpha=2.0)
    feed(ridge, dataset.X[:200], dataset.y[:200])
    X, y = dataset.X[:200], dataset.y[:200]
    np.testing.assert_allclose(ridge.weights, np.linalg.solve(X.T @ X + 2.0 * np.eye(8), X.T @ y), atol=1e-10)
    feed(ridge, dataset.X[200:1000], dataset.y[200:1000])
    X, y = dataset.X[:1000], dataset.y[:1000]
    np.testing.assert_allclose(ridge.weights, np.linalg.solve(X.T @ X + 2.0 * np.eye(8), X.T @ y), atol=1e-10)


def test_lasso_matches_scikit_learn_on_the_rows_seen() -> None:
    from sklearn.linear_model import Lasso as SklearnLasso

    dataset = linear_data()
    lasso = Lasso(Problem(d=8, k=8, n_examples=1500), alpha=0.02)
    feed(lasso, dataset.X[:300], dataset.y[:300])
    _ = lasso.weights  # a first fit, so the second one is warm-started
    feed(lasso, dataset.X[300:1500], dataset.y[300:1500])
    direct = SklearnLasso(alpha=0.02, fit_intercept=False, tol=1e-10, max_iter=100_000)
    np.testing.assert_allclose(lasso.weights, direct.fit(dataset.X[:1500], dataset.y[:1500]).coef_, atol=1e-4)
    assert np.count_nonzero(np.abs(lasso.weights) > 1e-8) <= 4  # the L1 penalty zeroes most irrelevant weights


def noisy_data(n: int, d: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Noise larger than the signal, so that cross-validation chooses α inside its grid, not at an end."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, X @ np.resize(W_STAR, d) + 3.0 * rng.standard_normal(n)


def test_ridge_cross_validates_alpha_like_ridgecv_each_time_the_examples_double() -> None:
    from sklearn.linear_model import RidgeCV

    X, y = noisy_data(800)
    ridge = Ridge(Problem(d=8, k=8, n_examples=800))

    def ridgecv(n: int) -> RidgeCV:
        return RidgeCV(alphas=ALPHAS, fit_intercept=False).fit(X[:n], y[:n])

    seen = 0
    for n in (6, 200, 399, 400):  # 6 <= d: RidgeCV's own Gram mode; then the leave-one-out errors from XᵀX
        feed(ridge, X[seen:n], y[seen:n])
        seen = n
        weights = ridge.weights
        tuned_at = {6: 6, 200: 200, 399: 200, 400: 400}[n]  # 399 < 2 x 200: the α chosen at 200 is kept
        chosen = ridgecv(tuned_at).alpha_
        assert ridge.alpha == chosen
        expected = np.linalg.solve(X[:n].T @ X[:n] + chosen * np.eye(8), X[:n].T @ y[:n])
        np.testing.assert_allclose(weights, expected, atol=1e-9)
    assert ALPHAS[0] < ridgecv(200).alpha_ != ridgecv(400).alpha_ < ALPHAS[-1]  # the checks above can tell α apart


def test_lasso_cross_validates_alpha_like_lassocv_each_time_the_examples_double() -> None:
    from sklearn.linear_model import Lasso as SklearnLasso
    from sklearn.linear_model import LassoCV

    X, y = noisy_data(800, d=30)
    lasso = Lasso(Problem(d=30, k=30, n_examples=800))

    def lassocv(n: int) -> float:
        return LassoCV(alphas=N_ALPHAS, eps=PATH_EPS, cv=min(10, n), tol=CV_TOLERANCE, fit_intercept=False,
                       max_iter=MAX_ITERATIONS).fit(X[:n], y[:n]).alpha_

    seen = 0
    for n, tuned_at in ((7, 7), (200, 200), (399, 200), (400, 400)):
        feed(lasso, X[seen:n], y[seen:n])
        seen = n
        weights = lasso.weights
        chosen = lassocv(tuned_at)
        assert lasso.alpha == pytest.approx(chosen, rel=1e-12)
        direct = SklearnLasso(alpha=chosen, fit_intercept=False, tol=1e-10, max_iter=100_000).fit(X[:n], y[:n])
        np.testing.assert_allclose(weights, direct.coef_, atol=1e-3)
    assert lassocv(200) != lassocv(400)
    assert 0 < np.count_nonzero(lasso.weights) < 30


def test_ogd_ridge_steps_projects_and_averages() -> None:
    dataset = linear_data()
    ogd = OGDRidge(Problem(d=8, k=8, n_examples=100), radius=0.8, eta=0.05)
    w, iterates = np.zeros(8), []
    for row, label in zip(dataset.X[:100], dataset.y[:100], strict=True):
        iterates.append(w.copy())
        w = w - 0.05 * 2 * (w @ row - label) * row
        w = w * min(1.0, 0.8 / np.linalg.norm(w))
        feed(ogd, row[None, :], np.array([label]))
        np.testing.assert_allclose(ogd.current_weights(), w, atol=1e-12)
    np.testing.assert_allclose(ogd.weights, np.mean(iterates, axis=0), atol=1e-12)


def test_eg_lasso_stays_in_the_l1_ball_and_follows_the_multiplicative_update() -> None:
    dataset = linear_data()
    eg = EGLasso(Problem(d=8, k=8, n_examples=100), radius=1.5, eta=0.1)
    z_plus, z_minus, iterates = np.ones(8), np.ones(8), []
    for row, label in zip(dataset.X[:100], dataset.y[:100], strict=True):
        w = 1.5 * (z_plus - z_minus) / (z_plus.sum() + z_minus.sum())
        iterates.append(w)
        np.testing.assert_allclose(eg.current_weights(), w, atol=1e-12)
        assert np.abs(eg.current_weights()).sum() <= 1.5 + 1e-12
        gradient = 2 * (w @ row - label) * row
        z_plus, z_minus = z_plus * np.exp(-0.1 * gradient), z_minus * np.exp(0.1 * gradient)
        feed(eg, row[None, :], np.array([label]))
    np.testing.assert_allclose(eg.weights, np.mean(iterates, axis=0), atol=1e-12)


def test_online_references_with_theory_defaults_take_their_theoretical_step_sizes() -> None:
    dataset = linear_data()
    ogd = OGDRidge(Problem(d=8, k=8, n_examples=400, defaults="theory"))
    eg = EGLasso(Problem(d=8, k=8, n_examples=400, defaults="theory"))
    assert ogd.eta == eg.eta == "running"
    feed(ogd, dataset.X[:50], dataset.y[:50])
    feed(eg, dataset.X[:50], dataset.y[:50])
    B = np.abs(dataset.y[:50]).max()
    X2, Xinf = np.linalg.norm(dataset.X[:50], axis=1).max(), np.abs(dataset.X[:50]).max()
    assert ogd.bound.value == eg.bound.value == pytest.approx(B)
    assert ogd.step_size() == pytest.approx(2 * B / (2 * (B * X2 + B) * X2 * np.sqrt(400)))
    assert eg.step_size() == pytest.approx(np.sqrt(np.log(16) / (5 * 400)) / (2 * (B * Xinf + B) * Xinf))


def test_online_references_default_to_steps_measured_on_the_data() -> None:
    dataset = linear_data()
    ogd = OGDRidge(Problem(d=8, k=8, n_examples=400))
    eg = EGLasso(Problem(d=8, k=8, n_examples=400))
    assert ogd.eta == eg.eta == "adaptive"
    feed(ogd, dataset.X[:50], dataset.y[:50])
    w = np.zeros(8)
    energy = 0.0
    for row, label in zip(dataset.X[:50], dataset.y[:50], strict=True):
        # eg-lasso's iterate before each update, replayed: w = B (z+ - z-) / ||z||_1 from its own log-weights
        energy += float(np.abs(2 * (w @ row - label) * row).max()) ** 2
        feed(eg, row[None, :], np.array([label]))
        w = eg.current_weights()
    # OGD: averaged least squares' step 1/(2R²) on (<w,x> - y)x, i.e. 1/(4R²) on its gradient 2(<w,x> - y)x
    assert ogd.step_size() == pytest.approx(0.25 / np.mean(np.sum(dataset.X[:50] ** 2, axis=1)))
    # EG: sqrt(log 2d / Σ ||g_s||_∞²) over the gradients of the iterates it used
    assert eg.step_size() == pytest.approx(np.sqrt(np.log(16) / energy))


@pytest.mark.parametrize(
    "algorithm_id, params, bound",
    [
        ("ridge", {}, 0.05),
        ("lasso", {}, 0.05),
        ("ogd-ridge", {}, 0.8),  # the theoretical step is conservative: it must merely beat predicting zero
        ("ogd-ridge", {"eta": 0.05}, 0.05),
        ("eg-lasso", {}, 0.9),
        ("eg-lasso", {"eta": 0.05}, 0.05),
    ],
)
def test_learns_through_the_oracle_with_every_attribute(algorithm_id: str, params: dict, bound: float) -> None:
    # Noise alone leaves a normalised MSE of about 0.01 / 0.58 ≈ 0.02; the zero predictor scores 1.
    dataset = linear_data()
    oracle = LocalOracle(dataset, budget=Budget(per_example=8), seed=0)
    result = run_algorithm(algorithm_id, oracle, params=params, seed=0)
    assert result.status == "finished", result.message
    assert oracle.attributes == 1500 * 8
    assert result.final is not None and result.final.normalized_mse < bound


def test_lasso_path_without_input_checks_gives_scikit_learns_coefficients_bit_for_bit() -> None:
    from sklearn.linear_model import lasso_path

    data = linear_data(n_train=200, n_test=10)
    X, y = data.X[data.train_rows], data.y[data.train_rows]
    X[:, 3] = 0.0  # an attribute never seen non-zero, as an image's border pixels
    gram, xy = X.T @ X, X.T @ y
    alphas = alpha_grid(xy, len(y))
    _, checked, _ = lasso_path(X, y, alphas=alphas, precompute=gram, Xy=xy, tol=CV_TOLERANCE, max_iter=MAX_ITERATIONS)
    ours = gram_lasso_path(len(y), y, alphas, gram, xy, CV_TOLERANCE)
    assert np.count_nonzero(ours) > 0 and np.array_equal(ours, checked)
