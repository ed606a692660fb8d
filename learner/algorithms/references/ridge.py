"""Offline ridge regression — the full-information reference of Cesa-Bianchi et al. (2011, §7),
Hazan & Koren (2012, §5) and Kukliansky & Shamir (2015, §5).

Observes every attribute of every example and fits ridge regression on all examples seen so far,
minimising ||y − Xw||² + α||w||².

Choices the papers leave open (they tune α by 10-fold cross-validation):

- α is cross-validated by default, as the papers did, over ``ALPHAS`` (61 values from 1e-4 to 1e8,
  log-spaced), by exact leave-one-out cross-validation (n-fold, as cheap as one fit, where 10 folds would
  cost 10 fits per α): the α scikit-learn's ``RidgeCV`` chooses. While at most d examples have been seen,
  its errors come from the eigenvectors of XXᵀ (``gram_leave_one_out_alpha``), for all α in two products where
  ``RidgeCV`` loops over the α (132 ms per choice on 720 MNIST images, this 84); the sums are grouped
  otherwise, so when the best two α's errors are nearly tied ``RidgeCV`` itself decides. Beyond d examples
  they come from the eigenvectors of XᵀX (``leave_one_out_alpha``), because ``RidgeCV`` costs one n·d²
  product per α there (61 of them: 14 s per choice on 12,000 Fashion-MNIST images) or, in its SVD mode, a
  slow SVD of X (17 s); this costs one product for all α (1 s) and chooses the same α.
- As in the papers, who tuned once and then ran on prefixes of the training set, α is not re-tuned at every
  refit: it is cross-validated on the examples seen so far whenever their number has doubled since the last
  time (``shared.full_information.CrossValidationSchedule``, from 3 examples on; before that the fit is the zero
  predictor), and every refit in between uses the last α chosen. A fixed ``alpha`` skips the cross-validation.
  The attribute ``alpha`` holds the last α chosen: given as a fixed ``alpha``, it refits the run's final predictor.
- No intercept: like the papers' predictors, x ↦ <w, x>.
- The fit is redone lazily, when ``weights`` is read after new examples arrived, from XᵀX and Xᵀy kept up to
  date over the new rows only (``shared.full_information.GramStatistics``); the rows seen are kept too (full information
  means the learner may keep them), for the cross-validation.
"""

from __future__ import annotations

import numpy as np

from learner.algorithms.shared.full_information import GramStatistics, OfflineReference
from learner.algorithms.shared.row_buffer import RowBuffer

ALPHAS = np.logspace(-4, 8, 61)
# Relative gap between the two least leave-one-out errors below which ``RidgeCV`` itself chooses α (n <= d): the
# errors of another grouping of the same sums differed from RidgeCV's by at most 1.5e-15 relatively on MNIST and
# Fashion-MNIST prefixes of 3 to 784 images, where the two least errors were at least 7e-7 apart (2026-11-29).
NEAR_TIE = 1e-9


def leave_one_out_alpha(X: np.ndarray, y: np.ndarray, gram: np.ndarray, alphas: np.ndarray) -> float:
    """The α of ``alphas`` with the least mean squared leave-one-out error of ridge on (X, y), ``gram`` = XᵀX.

    With XᵀX = V diag(λ) Vᵀ and Z = XV, ridge's fit is ŷ = Z diag(1/(λ+α)) Zᵀy, the hat matrix's diagonal
    h_i = Σ_j Z_ij² / (λ_j + α), and the leave-one-out residual (y_i − ŷ_i) / (1 − h_i): RidgeCV's "cov" mode,
    with all α at once. Meant for n > d, where 1 − h_i stays away from 0; the first of equal minima wins, as
    in RidgeCV.
    """
    eigenvalues, V = np.linalg.eigh(gram)
    Z = X @ V
    inverse = 1.0 / (np.clip(eigenvalues, 0.0, None)[:, None] + alphas[None, :])  # d x len(alphas)
    fitted = Z @ ((Z.T @ y)[:, None] * inverse)
    hat = (Z * Z) @ inverse
    errors = ((y[:, None] - fitted) / (1.0 - hat)) ** 2
    return float(alphas[np.argmin(errors.mean(axis=0))])


def gram_leave_one_out_alpha(X: np.ndarray, y: np.ndarray, alphas: np.ndarray) -> float | None:
    """``RidgeCV``'s α for n <= d examples, or None when it cannot be told apart here from a near tie.

    With XXᵀ = Q diag(λ) Qᵀ, (XXᵀ + αI)⁻¹ = Q diag(1/(λ+α)) Qᵀ, and the leave-one-out residual of example i is
    c_i / G_ii with c = (XXᵀ + αI)⁻¹y and G = (XXᵀ + αI)⁻¹: ``RidgeCV``'s "gram" mode, with all α in two matrix
    products instead of a loop over them. The products group their sums otherwise than ``RidgeCV``'s, so the mean
    errors differ in their last bits: the least error decides as there (the first of equal ones) only when the
    next one is more than ``NEAR_TIE`` above it, relatively; None otherwise (also for errors that are not finite).
    """
    eigenvalues, Q = np.linalg.eigh(X @ X.T)
    inverse = 1.0 / (eigenvalues[:, None] + alphas[None, :])  # n x len(alphas)
    coefficients = Q @ ((Q.T @ y)[:, None] * inverse)
    inverse_diagonal = (Q * Q) @ inverse
    errors = ((coefficients / inverse_diagonal) ** 2).mean(axis=0)
    if not np.all(np.isfinite(errors)):
        return None
    ordered = np.sort(errors)
    if ordered.size > 1 and ordered[1] - ordered[0] <= NEAR_TIE * ordered[0]:
        return None
    return float(alphas[np.argmin(errors)])


def cross_validated_alpha(rows: RowBuffer, stats: GramStatistics) -> float:
    """Ridge's leave-one-out α on the rows seen (``stats`` up to date with them)."""
    X, y = rows.X, rows.y
    if rows.n > X.shape[1]:
        return leave_one_out_alpha(X, y, stats.gram, ALPHAS)
    alpha = gram_leave_one_out_alpha(X, y, ALPHAS)
    if alpha is not None:
        return alpha
    # Imported here: scikit-learn takes seconds to import, and every listing of the algorithms imports this module.
    from sklearn.linear_model import RidgeCV

    return float(RidgeCV(alphas=ALPHAS, fit_intercept=False).fit(X, y).alpha_)


def ridge_solution(stats: GramStatistics, alpha: float, rows: RowBuffer) -> np.ndarray:
    """argmin ||y − Xw||² + α||w||² from XᵀX and Xᵀy; least squares (minimum norm) from the rows when α = 0."""
    w: np.ndarray
    if alpha == 0:
        w = np.linalg.lstsq(rows.X, rows.y, rcond=None)[0]
        return w
    import scipy.linalg  # here, not at the top: it is 0.3-0.5 CPU-s of import for every process listing algorithms

    # scipy.linalg.solve(system, xy, assume_a="pos") factors and solves by the same LAPACK calls (Cholesky of the
    # upper triangle, potrf then potrs: the same w bit for bit), and then estimates the condition number only to
    # warn: 9 ms of 784 pixels' solve, this 5.5, at each of a run's curve points. A system that is not positive
    # definite raises LinAlgError in both.
    system = stats.gram + alpha * np.eye(stats.gram.shape[0])
    factor = scipy.linalg.cho_factor(system, check_finite=False)
    w = scipy.linalg.cho_solve(factor, stats.xy, check_finite=False)
    return w


class Ridge(OfflineReference):
    """Offline ridge regression on every example seen, with all attributes (scikit-learn).

    Parameters
    ----------
    alpha
        L2 regularisation α of ||y − Xw||² + α||w||²; default cross-validated (RidgeCV, leave-one-out, over 1e-4..1e8)
    """

    id = "ridge"
    name = "Ridge regression (offline, full information)"
    algorithm = "ridge regression, α by leave-one-out cross-validation (as sklearn RidgeCV) or fixed"
    zero_alpha = True
    alpha_refusal = "alpha must be non-negative"

    def cross_validated_alpha(self) -> float:
        return cross_validated_alpha(self.rows, self.stats)

    def fit(self, alpha: float) -> np.ndarray:
        return ridge_solution(self.stats, alpha, self.rows)
