"""Ridge's shortcuts choose and fit as before: its leave-one-out α for n <= d from XXᵀ's eigenvectors is RidgeCV's
(RidgeCV itself deciding near ties), and its Cholesky solve is ``scipy.linalg.solve(assume_a="pos")``'s bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from learner.algorithms.references import ridge
from learner.algorithms.references.ridge import ALPHAS, cross_validated_alpha, gram_leave_one_out_alpha, ridge_solution
from learner.algorithms.shared.full_information import GramStatistics
from learner.algorithms.shared.row_buffer import RowBuffer

# scikit-learn and SciPy are imported inside the tests: every xdist worker collects every file.


def problem(n: int, d: int, seed: int, image_like: bool) -> tuple[np.ndarray, np.ndarray]:
    """n examples of d attributes, noise of the signal's size (α inside the grid); ``image_like``: non-negative
    pixels, a quarter of the attributes never non-zero (an image's border)."""
    rng = np.random.default_rng(seed)
    if image_like:
        X = rng.uniform(0.0, 1.0, (n, d)) * (rng.uniform(size=(n, d)) < 0.3)
        X[:, : d // 4] = 0.0
    else:
        X = rng.standard_normal((n, d))
    w = rng.standard_normal(d) / np.sqrt(d)
    return X, X @ w + rng.standard_normal(n) * rng.choice([0.3, 1.0, 3.0])


def rows_and_stats(X: np.ndarray, y: np.ndarray) -> tuple[RowBuffer, GramStatistics]:
    rows = RowBuffer(X.shape[1])
    for x, label in zip(X, y, strict=True):
        rows.append(x, float(label))
    stats = GramStatistics(X.shape[1])
    stats.update(rows)
    return rows, stats


def ridgecv_alpha(X: np.ndarray, y: np.ndarray, alphas: np.ndarray = ALPHAS) -> float:
    from sklearn.linear_model import RidgeCV

    return float(RidgeCV(alphas=alphas, fit_intercept=False).fit(X, y).alpha_)


def test_the_alpha_from_xxt_is_ridgecvs_on_random_problems_with_n_at_most_d() -> None:
    chosen = set()
    for seed, (n, d) in enumerate([(3, 40), (12, 40), (25, 40), (40, 40), (30, 80), (80, 80)]):
        for image_like in (False, True):
            X, y = problem(n, d, seed, image_like)
            alpha = gram_leave_one_out_alpha(X, y, ALPHAS)
            assert alpha is not None, (n, d, image_like)  # decided here: no near tie on these
            assert alpha == ridgecv_alpha(X, y), (n, d, image_like)
            assert cross_validated_alpha(*rows_and_stats(X, y)) == alpha
            chosen.add(alpha)
    assert len(chosen) >= 4  # the problems choose different α, so a wrong choice would show


def test_a_near_tie_leaves_the_choice_to_ridgecv() -> None:
    X, y = problem(20, 40, 0, image_like=False)
    best = ridgecv_alpha(X, y)
    # The best α twice in the grid: its two errors tie exactly, so this computation does not decide.
    tied = np.sort(np.append(ALPHAS, best))
    assert gram_leave_one_out_alpha(X, y, tied) is None
    assert gram_leave_one_out_alpha(X, y, ALPHAS) == best
    # All errors 0 (y = 0): every α ties.
    assert gram_leave_one_out_alpha(X, np.zeros(20), ALPHAS) is None


def test_cross_validation_falls_back_to_ridgecv_when_the_shortcut_does_not_decide(
        monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = problem(30, 40, 3, image_like=True)
    expected = ridgecv_alpha(X, y)
    wrong = ALPHAS[0] if expected != ALPHAS[0] else ALPHAS[-1]
    monkeypatch.setattr(ridge, "gram_leave_one_out_alpha", lambda *_: None)
    assert cross_validated_alpha(*rows_and_stats(X, y)) == expected != wrong
    monkeypatch.setattr(ridge, "gram_leave_one_out_alpha", lambda *_: wrong)  # a decision is taken as it is
    assert cross_validated_alpha(*rows_and_stats(X, y)) == wrong


@pytest.mark.parametrize("image_like", [False, True])
def test_the_cholesky_solve_gives_scipy_solves_weights_bit_for_bit(image_like: bool) -> None:
    import scipy.linalg

    for n, alpha in [(10, 1e-4), (60, 1.0), (200, 63.1), (200, 1e6)]:
        X, y = problem(n, 80, n, image_like)
        rows, stats = rows_and_stats(X, y)
        expected = scipy.linalg.solve(stats.gram + alpha * np.eye(80), stats.xy, assume_a="pos")
        assert np.array_equal(ridge_solution(stats, alpha, rows), expected), (n, alpha)


def test_a_system_that_is_not_positive_definite_is_refused() -> None:
    X, y = problem(10, 20, 0, image_like=False)
    rows, stats = rows_and_stats(X, y)
    stats.gram[0, 0] = -1.0
    with pytest.raises(np.linalg.LinAlgError):
        ridge_solution(stats, 1e-4, rows)
