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
    from sklearn.model_selection import KFold  # imported when used: see Lasso.fit

    n = len(y)
    alphas = alpha_grid(stats.xy, n)
    errors = []
    # Every fold's XᵀX in the same two d x d buffers (the path only reads it): the same products and differences
    # bit for bit, without two fresh 4.9 MB arrays a fold for 784 pixels (a third of the folds' Gram time).
    held_out, gram = np.empty_like(stats.gram), np.empty_like(stats.gram)
    for train, test in KFold(n_splits=min(FOLDS, n)).split(X):
        X_test, y_test = X[test], y[test]
        np.subtract(stats.gram, np.matmul(X_test.T, X_test, out=held_out), out=gram)
        coefs = gram_lasso_path(len(train), y[train], alphas, gram, stats.xy - X_test.T @ y_test, CV_TOLERANCE)
        errors.append(((X_test @ coefs - y_test[:, None]) ** 2).mean(axis=0))
    return float(alphas[np.argmin(np.mean(errors, axis=0))])


def gram_lasso_path(n: int, y: np.ndarray, alphas: np.ndarray, gram: np.ndarray, xy: np.ndarray, tol: float,
                    coef_init: np.ndarray | None = None) -> np.ndarray:
    """scikit-learn's ``lasso_path`` coefficients (d x len(alphas)) of n examples from their XᵀX, Xᵀy and y, by the
    same coordinate descent on the Gram matrix, without its input checks.

    Those checks are a quarter of a cross-validation's time on 900 MNIST images (2026-11-29 profile) and change no
    number: they validate the parameters, copy X into Fortran order and look for NaN and inf in X, y, XᵀX and Xᵀy,
    all built here from an oracle's finite floats. On the Gram path scikit-learn reads X only for its row count n,
    which scales the penalty (α·n), so X is given as a zero-stride view of n rows, not a copy of the examples.
    """
    # Imported here: scikit-learn takes seconds to import, and every listing of the algorithms imports this module.
    from sklearn import config_context
    from sklearn.linear_model import lasso_path

    rows = np.broadcast_to(np.zeros(gram.shape[0]), (n, gram.shape[0]))
    with config_context(skip_parameter_validation=True):
        _, coefs, _ = lasso_path(rows, np.ascontiguousarray(y, dtype=np.float64), alphas=alphas,
                                 precompute=np.ascontiguousarray(gram), Xy=np.ascontiguousarray(xy),
                                 coef_init=coef_init, tol=tol, max_iter=MAX_ITERATIONS, check_input=False)
    result: np.ndarray = coefs
    return result


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
        coefs = gram_lasso_path(self.rows.n, self.rows.y, np.array([alpha]), self.stats.gram, self.stats.xy,
                                FIT_TOLERANCE, coef_init=self._w)
        w: np.ndarray = coefs[:, 0].astype(float)
        return w
