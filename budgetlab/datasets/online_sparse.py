"""``online-sparse``: instances of online sparse regression for Ito et al. (2017), section 6.

The paper's instance generator is in a supplement we do not have; this one satisfies every assumption
its Algorithm 1 relies on (section 3 and Assumptions (1), (2), condition (a)):
- ||x||_2 <= 1: z ~ N(0, Sigma) with Sigma_ij = correlation^|i-j| (an AR(1) Toeplitz matrix, unit
  diagonal), scaled as x = z / (2 sqrt(d)) so that E||x||^2 = 1/4, and the rare x outside the unit ball
  projected onto it (x / ||x||).
- Correlated but linearly independent features (condition (a), sigma_d > 0): Sigma's smallest
  eigenvalue is at least (1 - |correlation|) / (1 + |correlation|) > 0, and the scaling and the
  projection keep E[x x^T] non-singular.
- k-sparse w* with ||w*||_2 <= 1: a support of k coordinates drawn by the seed, random signs times
  magnitudes uniform in [0.5, 1] (so no support weight is negligible), rescaled to ||w*||_2 = 1 - noise.
- |y| <= 1 with zero-mean i.i.d. noise independent of x: y = <w*, x> + eps, eps ~ U[-noise, noise];
  |<w*, x>| <= ||w*|| ||x|| <= 1 - noise.
Sizes: T = 5,000 rounds as in the paper (n_train), and 1,000 more i.i.d. examples to test the learned
predictor (n_test); (d, k) default to (10, 2), Table 2's first row. Rows are i.i.d., so the split is
positional. The seed draws the support and weights and the examples from separate streams.

``scale = "unit-variance"`` is the feature scale the paper's tables imply rather than the one its §2 states:
x = z ~ N(0, Sigma), each feature of variance 1 (E||x||² = d), with the same w* and noise, so |y| is no longer
bounded by 1. Table 3's uniform learner has R_T = 6,002 over T = 5,000 rounds (printed 60.02 in units of 10²):
it loses more than 1.2 a round. With x in the unit ball and |y| <= 1, predicting 0 loses E[y²] <= 1 a round, and
on the unit-ball instances here E[y²] is about 0.02. Under ``unit-variance`` E[y²] = w*' Sigma w* + noise²/3,
0.5-1.1 on the (10, 4) instances of seeds 0-4: the paper's magnitudes. The same seed draws the same w* and z.
"""

from __future__ import annotations

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.datasets.base import DatasetError
from budgetlab.datasets.family import Data, Generated, Param, read_only

_TAG = 0x1705
SCALES = ("unit-ball", "unit-variance")


def toeplitz_covariance(d: int, correlation: float) -> np.ndarray:
    lags = np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
    return correlation**lags


def sparse_unit_weights(d: int, k: int, norm: float, rng: np.random.Generator) -> np.ndarray:
    w = np.zeros(d)
    support = rng.choice(d, size=k, replace=False)
    w[support] = rng.choice(np.array([-1.0, 1.0]), size=k) * rng.uniform(0.5, 1.0, size=k)
    return w * (norm / np.linalg.norm(w)) if k else w


class OnlineSparse(Generated):
    pattern = example = "online-sparse"
    task = "regression"
    source = "synthetic: instances for Ito et al. (2017), section 6"
    params = (
        Param("d", int, 10, "number of attributes", low=1, high=10_000),
        Param("k", int, 2, "non-zeros of w* (its support is drawn by the seed)", low=0),
        Param("noise", float, 0.1, "half-width of the uniform noise on y; ||w*||_2 = 1 - noise keeps |y| <= 1",
              low=0.0, high=0.999),
        Param("correlation", float, 0.5, "AR(1) correlation of neighbouring features: Sigma_ij = c^|i-j|",
              low=-0.99, high=0.99),
        Param("scale", str, "unit-ball", "unit-ball: x = z / (2 sqrt d) in the unit ball, as §2 states; "
              "unit-variance: x = z, the scale of the paper's regret tables (|y| then exceeds 1)", choices=SCALES),
        Param("n_train", int, 5_000, "rounds T of the online stream (the paper: 5,000)", low=1, high=10_000_000),
        Param("n_test", int, 1_000, "i.i.d. test examples", low=1, high=10_000_000),
    )

    def check(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> None:
        super().check(args, params)
        if int(params["k"]) > int(params["d"]):
            raise DatasetError("k (the sparsity of w*) must not exceed d")

    def describe(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> str:
        where = ("in the unit ball" if params["scale"] == "unit-ball" else "of unit variance (the scale of the "
                 "paper's tables)")
        bound = "|y| <= 1 with " if params["scale"] == "unit-ball" else ""
        return (f"Online sparse regression instance: correlated features {where}, {params['k']}-sparse w*, "
                f"{bound}uniform noise of half-width {params['noise']:g} (for Ito et al. 2017)")

    def build(self, args: tuple[int, ...], params: dict[str, ParamValue], seed: int) -> Data:
        n_train, n_test, d = self.sizes(args, params)
        n = n_train + n_test
        noise = float(params["noise"])
        w_stream, x_stream, noise_stream = (
            np.random.default_rng(s) for s in np.random.SeedSequence([seed, _TAG]).spawn(3)
        )
        w = sparse_unit_weights(d, int(params["k"]), 1.0 - noise, w_stream)
        factor = np.linalg.cholesky(toeplitz_covariance(d, float(params["correlation"])))
        X = x_stream.standard_normal((n, d)) @ factor.T
        if params["scale"] == "unit-ball":
            X /= 2.0 * np.sqrt(d)
            X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        y = X @ w + noise_stream.uniform(-noise, noise, size=n)
        read_only(X, y, w)
        return Data(X, y, np.arange(n_train), np.arange(n_train, n), true_weights=w)


FAMILY = OnlineSparse()
