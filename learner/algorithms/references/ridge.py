"""Offline ridge regression — the full-information reference of Cesa-Bianchi et al. (2011, §7),
Hazan & Koren (2012, §5) and Kukliansky & Shamir (2015, §5).

Observes every attribute of every example and fits ridge regression on all examples seen so far,
minimising ||y − Xw||² + α||w||².

Choices the papers leave open (they tune α by 10-fold cross-validation):

- α is cross-validated by default, as the papers did, over ``ALPHAS`` (61 values from 1e-4 to 1e8,
  log-spaced), by exact leave-one-out cross-validation (n-fold, as cheap as one fit, where 10 folds would
  cost 10 fits per α): scikit-learn's ``RidgeCV`` while at most d examples have been seen, then the same
  leave-one-out errors from the eigenvectors of XᵀX (``leave_one_out_alpha``), because ``RidgeCV`` costs one
  n·d² product per α there (61 of them: 14 s per choice on 12,000 Fashion-MNIST images) or, in its SVD mode,
  a slow SVD of X (17 s); this costs one product for all α (1 s) and chooses the same α.
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


def cross_validated_alpha(rows: RowBuffer, stats: GramStatistics) -> float:
    """Ridge's leave-one-out α on the rows seen (``stats`` up to date with them)."""
    X, y = rows.X, rows.y
    if rows.n <= X.shape[1]:
        # Imported here: scikit-learn takes seconds to import, and every listing of the algorithms imports this module.
        from sklearn.linear_model import RidgeCV

        return float(RidgeCV(alphas=ALPHAS, fit_intercept=False).fit(X, y).alpha_)
    return leave_one_out_alpha(X, y, stats.gram, ALPHAS)


def ridge_solution(stats: GramStatistics, alpha: float, rows: RowBuffer) -> np.ndarray:
    """argmin ||y − Xw||² + α||w||² from XᵀX and Xᵀy; least squares (minimum norm) from the rows when α = 0."""
    w: np.ndarray
    if alpha == 0:
        w = np.linalg.lstsq(rows.X, rows.y, rcond=None)[0]
        return w
    import scipy.linalg  # here, not at the top: it is 0.3-0.5 CPU-s of import for every process listing algorithms

    system = stats.gram + alpha * np.eye(stats.gram.shape[0])
    w = scipy.linalg.solve(system, stats.xy, assume_a="pos")
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
