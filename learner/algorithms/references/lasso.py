"""Offline Lasso — the full-information reference of Cesa-Bianchi et al. (2011, §7) and Hazan & Koren
(2012, §5).

Observes every attribute of every example and fits the Lasso on all examples seen so far, minimising
(1/2n)||y − Xw||² + α||w||_1 (the penalised form of the papers' constraint ||w||_1 ≤ B; each B corresponds
to some α), by scikit-learn's coordinate descent (``lasso_path``) on the precomputed XᵀX.

Choices the papers leave open (they tune the regularisation by 10-fold cross-validation):

- α is chosen by 10-fold cross-validation by default, as the papers did (fewer folds while fewer than 10
  examples have been seen), over a path of ``N_ALPHAS`` values down to ``PATH_EPS`` times the largest useful α:
  ``ten_fold_alpha`` is what scikit-learn's ``LassoCV`` computes (the same alphas, unshuffled ``KFold`` folds,
  paths and mean held-out squared error; it chooses the same α), with each fold's XᵀX obtained by subtracting
  the held-out rows' from the whole XᵀX instead of a product over the other nine tenths. On 12,000
  Fashion-MNIST images ``LassoCV`` took 1.8 s per choice on a quiet machine (13-19 s under load), this 0.5 s.
- As for ridge (``shared.full_information.CrossValidationSchedule``), α is chosen again only when the number of examples
  seen has doubled since the last choice, and the refits in between use it: a learning curve's points would otherwise
  each pay a 10-fold path. A fixed ``alpha`` skips the cross-validation. The attribute ``alpha`` holds the last α
  chosen: given as a fixed ``alpha``, it refits the run's final predictor.
- No intercept: like the papers' predictors, x ↦ <w, x>.
- The fit is redone lazily, when ``weights`` is read after new examples arrived, warm-started from the previous
  solution, from XᵀX and Xᵀy kept up to date over the new rows only (``shared.full_information.GramStatistics``).
"""

from __future__ import annotations

import numpy as np

from learner.algorithms.shared.full_information import GramStatistics, OfflineReference

MAX_ITERATIONS = 10_000
FOLDS = 10
N_ALPHAS = 20
PATH_EPS = 1e-2
CV_TOLERANCE = 1e-3
FIT_TOLERANCE = 1e-4  # scikit-learn's Lasso default


def alpha_grid(xy: np.ndarray, n: int) -> np.ndarray:
    """LassoCV's alphas: from the smallest α whose solution is 0, max|Xᵀy|/n, down to ``PATH_EPS`` times it."""
    alpha_max = np.abs(xy).max() / n
    if alpha_max <= np.finfo(np.float64).resolution:
        return np.full(N_ALPHAS, np.finfo(np.float64).resolution)
    return np.geomspace(alpha_max, alpha_max * PATH_EPS, num=N_ALPHAS)


def ten_fold_alpha(X: np.ndarray, y: np.ndarray, stats: GramStatistics) -> float:
    """The α of ``alpha_grid`` with the least held-out squared error over ``FOLDS`` folds (``stats`` = XᵀX, Xᵀy)."""
    from sklearn.linear_model import lasso_path  # imported when used: see Lasso.weights
    from sklearn.model_selection import KFold

    n = len(y)
    alphas = alpha_grid(stats.xy, n)
    errors = []
    for train, test in KFold(n_splits=min(FOLDS, n)).split(X):
        X_test, y_test = X[test], y[test]
        _, coefs, _ = lasso_path(X[train], y[train], alphas=alphas, precompute=stats.gram - X_test.T @ X_test,
                                 Xy=stats.xy - X_test.T @ y_test, tol=CV_TOLERANCE, max_iter=MAX_ITERATIONS)
        errors.append(((X_test @ coefs - y_test[:, None]) ** 2).mean(axis=0))
    return float(alphas[np.argmin(np.mean(errors, axis=0))])


class Lasso(OfflineReference):
    """Offline Lasso on every example seen, with all attributes (scikit-learn's coordinate descent).

    Parameters
    ----------
    alpha
        L1 penalty α of (1/2n)||y − Xw||² + α||w||_1; default cross-validated (10 folds, as LassoCV)
    """

    id = "lasso"
    name = "Lasso (offline, full information)"
    algorithm = "Lasso by coordinate descent (sklearn lasso_path), α by 10-fold cross-validation (as LassoCV) or fixed"
    zero_alpha = False
    alpha_refusal = "alpha must be positive (use ridge with alpha=0 for least squares)"

    def cross_validated_alpha(self) -> float:
        return ten_fold_alpha(self.rows.X, self.rows.y, self.stats)

    def fit(self, alpha: float) -> np.ndarray:
        # Imported here: scikit-learn takes seconds to import, and every listing of the algorithms imports this module.
        from sklearn.linear_model import lasso_path

        _, coefs, _ = lasso_path(self.rows.X, self.rows.y, alphas=[alpha], precompute=self.stats.gram, Xy=self.stats.xy,
                                 coef_init=self._w, tol=FIT_TOLERANCE, max_iter=MAX_ITERATIONS)
        w: np.ndarray = coefs[:, 0].astype(float)
        return w
